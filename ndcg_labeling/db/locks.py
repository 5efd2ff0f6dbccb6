"""Serializing writers that read, then write, the same rows (issue 46: two ``consensus`` runs on one
batch both found no ``consensus_settings`` row and both inserted one).

:func:`serialize` takes a lock named by its parts for the rest of the caller's transaction: on
PostgreSQL a transaction-level advisory lock (``pg_advisory_xact_lock``, released at commit or
rollback), so a second writer waits for the first to commit and then reads what it wrote (READ
COMMITTED: each statement reads the newest committed rows). On SQLite nothing is needed: every writing
transaction begins with ``BEGIN IMMEDIATE`` (:mod:`ndcg_labeling.db.session`), which holds the database's
one write lock from its start, so writers already run one after the other (waiting on the busy timeout).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

_ADVISORY = text("SELECT pg_advisory_xact_lock(hashtextextended(:name, 0))")


def serialize(*parts: str, session: Session) -> None:
    """Wait until no other transaction holds the lock named ``parts`` (e.g. ``("consensus", batch)``)
    and hold it until this transaction ends."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(_ADVISORY, {"name": "ndcg_labeling:" + "\x1f".join(parts)})
