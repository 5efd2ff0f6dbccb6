"""The documents guard (migration 0006, PostgreSQL): an import holds every document through one shared
advisory lock instead of a lock per row. A delete of documents, or a change of their ids, waits for it;
inserts, other updates and other imports do not; without the trigger the rows are locked one by one again."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from ndcg_labeling.db import migrate, pairs, references
from ndcg_labeling.db.session import session_scope
from tests.conftest import load_script

pytestmark = [pytest.mark.pg, pytest.mark.parametrize("db", ["postgresql"], indirect=True)]

MIGRATION = Path(__file__).resolve().parents[2] / "migrations" / "versions" / "0006_documents_guard.py"


def _migration_key() -> int:
    return int(load_script(MIGRATION, "guard_migration").GUARD_KEY)


def _fill(db, n: int = 50) -> None:
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO documents (id, external_id) SELECT g, 'd' || g FROM generate_series(1, :n) g"),
                     {"n": n})


def _waits(db, statement: str) -> bool:
    """Whether ``statement`` in another transaction waits for a lock (200 ms), rather than running."""
    with db.engine.connect() as other:
        other.exec_driver_sql("SET lock_timeout = '200ms'")
        try:
            other.execute(text(statement))
        except OperationalError as exc:
            assert "lock timeout" in str(exc)
            return True
        finally:
            other.rollback()
    return False


def test_the_import_and_the_trigger_use_one_key(db):
    assert _migration_key() == references.GUARD_KEY


def test_a_held_guard_makes_deletes_and_id_changes_wait_and_nothing_else(db):
    _fill(db)
    with session_scope(db.engine) as session:
        assert references.hold_guarded(session.connection(), "documents")
        assert _waits(db, "DELETE FROM documents WHERE id = 7")
        assert _waits(db, "UPDATE documents SET id = 1000 WHERE id = 8")
        assert _waits(db, "TRUNCATE documents CASCADE")
        assert not _waits(db, "UPDATE documents SET title = 't' WHERE id = 9")
        assert not _waits(db, "INSERT INTO documents (id, external_id) VALUES (500, 'new')")
        with session_scope(db.engine) as second:  # a second import takes the guard too, at once
            second.connection().exec_driver_sql("SET lock_timeout = '200ms'")
            assert references.hold_guarded(second.connection(), "documents")
        assert not references.hold_guarded(session.connection(), "queries")  # not guarded: rows locked
    assert not _waits(db, "DELETE FROM documents WHERE id = 7")  # the commit lets it go


def test_a_guarded_read_locks_no_row_and_holds_every_one(db):
    _fill(db)
    with session_scope(db.engine) as session:
        read = pairs.pairs_text(session.connection(), pairs.whole_table("documents", lock=True))
        assert read.total == 50
        assert not _waits(db, "SELECT id FROM documents WHERE id = 3 FOR UPDATE")  # no row lock taken
        assert _waits(db, "DELETE FROM documents WHERE id = 3")


def test_without_the_trigger_each_row_is_locked_as_it_is_read(db):
    _fill(db)
    migrate.downgrade(db.engine, "0005")
    with db.engine.connect() as conn:
        # this schema's documents table only: a parallel test's schema may hold its own guard
        assert not conn.execute(text("SELECT count(*) FROM pg_trigger WHERE tgname = 'documents_guard' "
                                     "AND tgrelid = to_regclass('documents')")).scalar_one()
    with session_scope(db.engine) as session:
        assert not references.hold_guarded(session.connection(), "documents")
        pairs.pairs_text(session.connection(), pairs.whole_table("documents", lock=True))
        assert _waits(db, "SELECT id FROM documents WHERE id = 3 FOR UPDATE")  # the row lock of the read
        assert _waits(db, "DELETE FROM documents WHERE id = 3")


def test_a_trigger_that_does_not_fire_is_no_guard(db):
    """Disabled, or firing only in replica sessions, the trigger holds nothing: the rows are locked again."""
    for mode, guards in (("DISABLE TRIGGER", False), ("ENABLE REPLICA TRIGGER", False),
                         ("ENABLE ALWAYS TRIGGER", True), ("ENABLE TRIGGER", True)):
        with db.engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE documents {mode} documents_guard"))
        with session_scope(db.engine) as session:
            assert references.hold_guarded(session.connection(), "documents") is guards, mode
