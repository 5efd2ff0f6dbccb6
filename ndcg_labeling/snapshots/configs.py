"""``snapshot config add | list``: search configurations stored in the database.

A configuration holds the NAME of the environment variable with the engine's credential, never the
credential; a URL carrying a user or password is refused for the same reason.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db.search_models import CONFIG_NAME_LENGTH, SearchConfig
from ndcg_labeling.errors import ConflictError, InputFileError, NdcgLabelingError, NotFoundError
from ndcg_labeling.snapshots.engine_kinds import KINDS, endpoint, resolve_paths
from ndcg_labeling.snapshots.templates import check_template, template_sha256

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,127}")
CONFIG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass
class ConfigSpec:
    """What ``snapshot config add`` is given (the template as a file path)."""

    name: str
    kind: str
    url: str
    template_file: str
    index: str | None = None
    id_path: str | None = None
    score_path: str | None = None
    key_env: str | None = None
    key_header: str | None = None
    timeout: float = 10.0
    concurrency: int = 8
    rate: float | None = None


@dataclass
class ConfigAdded:
    name: str
    kind: str
    endpoint: str
    id_path: str
    score_path: str | None
    template_sha256: str

    def __str__(self) -> str:
        score = self.score_path or "none (rank order gives the scores)"
        return (f"search configuration {self.name!r} added: {self.kind} at {self.endpoint}; ids at {self.id_path}, "
                f"scores at {score}; template sha256 {self.template_sha256[:12]}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_spec(spec: ConfigSpec) -> None:
    if not CONFIG_NAME.fullmatch(spec.name) or len(spec.name) > CONFIG_NAME_LENGTH:
        raise NdcgLabelingError(f"a configuration name is letters, digits, '_', '.', '-' (at most "
                                f"{CONFIG_NAME_LENGTH} characters), got {spec.name[:CONFIG_NAME_LENGTH]!r}")
    if spec.kind not in KINDS:
        raise NdcgLabelingError(f"--kind must be one of {', '.join(KINDS)}, got {spec.kind!r}")
    parts = urlsplit(spec.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise NdcgLabelingError(f"--url must be an http:// or https:// URL, got {spec.url[:200]!r}")
    if parts.username or parts.password:
        raise NdcgLabelingError("--url must not carry a user or password: name the variable holding the "
                                "credential with --key-env")
    if spec.key_env is not None and not ENV_NAME.fullmatch(spec.key_env):
        raise NdcgLabelingError("--key-env takes the NAME of an environment variable (letters, digits, '_'), "
                                "not the credential")
    if spec.key_header is not None and (spec.kind not in ("vespa", "http-json") or not spec.key_env
                                        or not HEADER_NAME.fullmatch(spec.key_header)
                                        or spec.key_header.lower() in ("host", "content-type", "content-length")):
        raise NdcgLabelingError("--key-header names the header that carries the credential (letters, digits, '-'), "
                                "with --key-env, for --kind vespa or http-json")
    if not 0 < spec.timeout <= 600 or not 1 <= spec.concurrency <= 256 or (spec.rate is not None and spec.rate <= 0):
        raise NdcgLabelingError("--timeout must be in (0, 600] s, --concurrency in 1..256 and --rate above 0")


def _read_template(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read the template ({type(exc).__name__})") from None


def add_config(spec: ConfigSpec, *, session: Session) -> ConfigAdded:
    """Store a configuration; a name already used is a :class:`ConflictError`."""
    _check_spec(spec)
    id_path, score_path = resolve_paths(spec.kind, spec.id_path, spec.score_path)
    url = endpoint(spec.kind, spec.url, spec.index)
    template = _read_template(spec.template_file)
    check_template(spec.template_file, template)
    if session.scalar(select(SearchConfig.id).where(SearchConfig.name == spec.name)) is not None:
        raise ConflictError(f"a search configuration named {spec.name!r} exists")
    sha = template_sha256(template)
    session.add(SearchConfig(name=spec.name, kind=spec.kind, url=spec.url.rstrip("/"), index_name=spec.index,
                             template=template, template_sha256=sha, id_path=id_path, score_path=score_path,
                             key_env=spec.key_env, key_header=spec.key_header, timeout=spec.timeout, concurrency=spec.concurrency, rate=spec.rate))
    session.flush()
    return ConfigAdded(spec.name, spec.kind, url, id_path, score_path, sha)


def get_config(name: str, *, session: Session) -> SearchConfig:
    config = session.scalar(select(SearchConfig).where(SearchConfig.name == name))
    if config is None:
        raise NotFoundError(f"no search configuration named {name!r} (see `snapshot config list`)")
    return config


def list_configs(*, session: Session) -> list[dict[str, Any]]:
    """One row per configuration, by name: what it asks and where; the credential's variable name only."""
    rows = session.scalars(select(SearchConfig).order_by(SearchConfig.name)).all()
    return [{"name": c.name, "kind": c.kind, "endpoint": endpoint(c.kind, c.url, c.index_name), "id_path": c.id_path,
             "score_path": c.score_path, "key_env": c.key_env, "key_header": c.key_header, "timeout_s": c.timeout, "concurrency": c.concurrency,
             "rate": c.rate, "template_sha256": c.template_sha256} for c in rows]
