"""Ingest keys: who may ``POST /api/events``. Hashed like sign-in tokens (only the sha256 of 32 random
bytes is stored; the key is shown once), revocable, looked up by hash and compared in constant time.
Every function takes the session as a keyword argument and never commits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db.online_models import IngestKey
from ndcg_labeling.errors import AuthenticationError, ConflictError, NdcgLabelingError, NotFoundError
from ndcg_labeling.workspace.auth import new_secret, same_secret, sha256_hex

ROLES = ("ingest",)
PREFIX = "ndcgk_"


@dataclass(frozen=True)
class IssuedKey:
    name: str
    role: str
    key: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "key": self.key}

    def __str__(self) -> str:
        return (f"ingest key {self.name} (shown once; send it as 'Authorization: Bearer KEY'):\n{self.key}")


def add_key(name: str, role: str, *, session: Session) -> IssuedKey:
    """A new key called ``name`` with ``role`` (``ingest``)."""
    name = (name or "").strip()
    if not name or len(name) > 128:
        raise NdcgLabelingError("keys add: NAME must be 1 to 128 characters")
    if role not in ROLES:
        raise NdcgLabelingError(f"keys add: --role must be one of {', '.join(ROLES)}, got {role!r}")
    if session.execute(select(IngestKey.id).where(IngestKey.name == name)).first() is not None:
        raise ConflictError(f"keys add: a key named {name!r} exists; revoke it or pick another name")
    key = PREFIX + new_secret()
    session.add(IngestKey(name=name, role=role, key_hash=sha256_hex(key), created_at=m.utcnow()))
    session.flush()
    return IssuedKey(name, role, key)


def revoke_key(name: str, *, session: Session) -> str:
    row = session.execute(select(IngestKey).where(IngestKey.name == name)).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"keys revoke: no key named {name!r}")
    if row.revoked_at is None:
        row.revoked_at = m.utcnow()
        session.flush()
    return f"key {name} revoked"


def list_keys(*, session: Session) -> list[dict[str, Any]]:
    rows = session.execute(select(IngestKey).order_by(IngestKey.name)).scalars()
    return [{"name": r.name, "role": r.role, "created_at": r.created_at.isoformat(timespec="seconds") + "Z",
             "revoked": r.revoked_at is not None} for r in rows]


def authenticate_ingest(header: str | None, *, session: Session) -> str:
    """The name of the live ingest key of an ``Authorization: Bearer KEY`` header; 401 otherwise."""
    scheme, _, key = (header or "").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise AuthenticationError("an ingest key is needed: 'Authorization: Bearer KEY' (keys add NAME --role ingest)")
    digest = sha256_hex(key)
    row = session.execute(select(IngestKey).where(IngestKey.key_hash == digest)).scalar_one_or_none()
    if row is None or not same_secret(digest, row.key_hash) or row.revoked_at is not None or row.role != "ingest":
        raise AuthenticationError("unknown or revoked ingest key")
    return row.name
