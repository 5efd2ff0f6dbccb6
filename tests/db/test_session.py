from __future__ import annotations

from ndcg_labeling.db.session import DEFAULT_URL, ENV_VAR, resolve_url


def test_url_option_wins(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "sqlite:///from-env.db")
    assert resolve_url("sqlite:///given.db") == "sqlite:///given.db"


def test_url_from_environment(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "sqlite:///from-env.db")
    assert resolve_url(None) == "sqlite:///from-env.db"


def test_default_url(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert resolve_url(None) == DEFAULT_URL == "sqlite:///ndcg_labeling.db"


def _hold_write_lock(path):
    """A second writer in the middle of its transaction: the write lock held, a row not committed."""
    import sqlite3

    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO graders (name, active, role, kind) VALUES ('uncommitted', 1, 'grader', 'human')")
    return holder


def test_readers_run_beside_an_open_writer_on_sqlite(sqlite_db, runner):
    """Read-only transactions begin deferred: they neither wait for a writer's lock (the busy timeout is
    30 s) nor see its uncommitted rows. The light commands read through them."""
    import time

    from sqlalchemy import text

    from ndcg_labeling.db.migrate import HEAD_REVISION, current_revision
    from ndcg_labeling.db.session import connection_scope
    from tests.conftest import invoke

    holder = _hold_write_lock(sqlite_db.url.removeprefix("sqlite:///"))
    try:
        start = time.perf_counter()
        assert current_revision(sqlite_db.engine) == HEAD_REVISION
        with connection_scope(sqlite_db.engine) as conn:
            assert conn.execute(text("SELECT count(*) FROM graders")).scalar_one() == 0
        for args in (["status"], ["graders", "list"], ["db", "current"], ["tasks", "list"], ["adjudicate", "list"]):
            result = invoke(runner, sqlite_db, *args)
            assert result.exit_code == 0 and "uncommitted" not in result.output, (args, result.output)
        result = invoke(runner, sqlite_db, "report")  # reads in its own transaction too (nothing to score here)
        assert result.exit_code == 1 and "no system rankings" in result.output
        assert time.perf_counter() - start < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_read_only_transaction_refuses_a_write_and_leaves_the_connection_writable(sqlite_db):
    import pytest
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from ndcg_labeling.db.session import connection_scope, session_scope

    with pytest.raises(OperationalError, match="readonly"), connection_scope(sqlite_db.engine) as conn:
        conn.execute(text("INSERT INTO graders (name, active, role, kind) VALUES ('x', 1, 'grader', 'human')"))
    with session_scope(sqlite_db.engine) as session:  # the pooled connection is a writer's again
        session.execute(text("INSERT INTO graders (name, active, role, kind) VALUES ('y', 1, 'grader', 'human')"))
    with connection_scope(sqlite_db.engine) as conn:
        assert conn.execute(text("SELECT name FROM graders")).scalars().all() == ["y"]
