"""Two consensus runs on one batch at the same time both succeed and store what one run stores
(issue 46, item 12: one of them failed with a duplicate key on consensus_settings on PostgreSQL and
"database is locked" on SQLite)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from ndcg_labeling.db.session import make_engine, session_scope
from ndcg_labeling.labels.consensus import run_consensus
from tests.labels.test_consensus_pipeline import labels, load

GRADES = [(f"q{q}", f"d{d}", g, (q + d + i) % 4) for q in range(30) for d in range(8)
          for i, g in enumerate(("a", "b", "c"))]


def test_two_concurrent_consensus_runs_on_one_batch(db, tmp_path: Path):
    load(db, tmp_path, GRADES, batch="b1")
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def run() -> None:
        engine = make_engine(db.url)  # one engine each, as two processes would have
        try:
            barrier.wait()
            with session_scope(engine) as session:
                run_consensus(session=session, batch="b1", exclude_untrusted=False)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    both = labels(db)
    with session_scope(db.engine) as session:
        run_consensus(session=session, batch="b1", exclude_untrusted=False)
    assert both == labels(db) and len(both) == 240


def test_a_sqlite_writer_waits_longer_than_one_busy_timeout(sqlite_db, tmp_path: Path, monkeypatch):
    """The second of two runs waits for the first even where the first holds the write lock longer than
    SQLite's busy timeout (200 ms here, 30 s in use; a consensus of a large batch took longer): before,
    it failed with "database is locked". Each run holds its lock 0.6 s, three busy timeouts. (A timeout of
    1 ms, as this test once had, also failed a new connection's first pragma during the other's commit,
    a lock of a few milliseconds that the timeout in use covers: 6 of 200 runs on a loaded machine.)"""
    import time

    import ndcg_labeling.db.session as db_session
    from ndcg_labeling.labels import consensus

    monkeypatch.setattr(db_session, "SQLITE_BUSY_TIMEOUT_MS", 200)

    def slow_consensus(**kwargs: object) -> object:
        out = consensus.run_consensus(**kwargs)  # type: ignore[arg-type]
        time.sleep(0.6)  # still inside the transaction: the write lock is held
        return out

    monkeypatch.setattr(sys.modules[__name__], "run_consensus", slow_consensus)
    test_two_concurrent_consensus_runs_on_one_batch(sqlite_db, tmp_path)


def test_two_concurrent_task_creates_of_one_name(db, tmp_path: Path):
    """`tasks create` twice with one name at once: one batch, and the other run gets the clean
    "already exists" refusal (before: a duplicate key on grading_batches.name on PostgreSQL)."""
    from ndcg_labeling.errors import ConflictError
    from ndcg_labeling.labels import tasks as t
    from tests.labels.test_tasks import make_corpus

    make_corpus(db, tmp_path, queries=20, docs=10)
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def run() -> None:
        engine = make_engine(db.url)
        try:
            barrier.wait()
            with session_scope(engine) as session:
                t.create_batch("b1", scale="0-3", depth=3, overlap=2, graders=["ann", "bob", "cat"], seed=7,
                               session=session)
            outcomes.append("created")
        except BaseException as exc:  # noqa: BLE001 - compared below
            outcomes.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert outcomes.count("created") == 1, outcomes
    refusal = next(o for o in outcomes if o != "created")
    assert isinstance(refusal, ConflictError) and "already exists" in str(refusal), refusal


def test_a_sqlite_writer_that_gives_up_raises_a_dbapi_error(sqlite_db, monkeypatch):
    """Past its wait, a writer's failed BEGIN IMMEDIATE is SQLAlchemy's OperationalError (a DBAPIError:
    the CLI's Error line, the web's 503, run_in_transaction's retry), not the driver's raw sqlite3 error,
    and the web's writer waits one busy timeout, not a command's minutes."""
    import sqlite3
    import time

    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    import ndcg_labeling.db.session as db_session

    monkeypatch.setattr(db_session, "SQLITE_BUSY_TIMEOUT_MS", 1)
    holder = sqlite3.connect(sqlite_db.url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock throughout
    try:
        engine = make_engine(sqlite_db.url).execution_options(**{db_session.WRITE_WAIT_S: 0.3})
        start = time.monotonic()
        with pytest.raises(DBAPIError, match="locked"), session_scope(engine) as session:
            session.execute(text("SELECT 1"))
        assert 0.3 <= time.monotonic() - start < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()
