"""Short transactions that retry when concurrent writers collide.

Many graders write to one team database at once. On PostgreSQL two of them can race on the same row
(a unique violation when both insert the same grade), or meet a deadlock or a serialization failure;
on SQLite a writer can find the database locked past the busy timeout. Such a transaction is rolled
back and run again from the start, a bounded number of times, after a short randomised pause; any
other error goes to the caller at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import TooManyRetries

T = TypeVar("T")

# PostgreSQL SQLSTATEs worth a retry: serialization_failure, deadlock_detected, lock_not_available,
# unique_violation (two writers inserted the same key; the retry reads the winner's row).
RETRY_SQLSTATES = {"40001", "40P01", "55P03", "23505"}


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a collision with a concurrent writer (worth running the transaction again)."""
    if not isinstance(exc, DBAPIError):
        return False
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if sqlstate is not None:
        return sqlstate in RETRY_SQLSTATES
    text = str(orig).lower()
    if isinstance(exc, OperationalError):
        return "database is locked" in text or "database is busy" in text
    if isinstance(exc, IntegrityError):
        return "unique constraint failed" in text
    return False


__all__ = ["RETRY_SQLSTATES", "TooManyRetries", "is_retryable", "run_in_transaction"]  # TooManyRetries: errors.py


def run_in_transaction(engine: Engine, work: Callable[[Session], T], *, retries: int = 8,
                       on_retry: Callable[[BaseException], None] | None = None) -> T:
    """Run ``work(session)`` in one transaction, retrying on collisions with other writers.

    ``work`` must be safe to run again from the start (it re-reads what it needs). Returns its result.
    """
    for attempt in range(retries + 1):
        try:
            with session_scope(engine) as session:
                return work(session)
        except DBAPIError as exc:
            if not is_retryable(exc):
                raise
            if attempt == retries:
                raise TooManyRetries(f"gave up after {retries} retries: {str(exc.orig).splitlines()[0]}") from exc
            if on_retry is not None:
                on_retry(exc)
            time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover
