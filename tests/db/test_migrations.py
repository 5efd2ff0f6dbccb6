"""Migrations: up, down, up again on each backend; models and migrations agree."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

import ndcg_labeling.db.models  # noqa: F401
from ndcg_labeling.db import migrate
from ndcg_labeling.db.base import Base

TABLES = {"scales", "scale_grades", "queries", "documents", "graders", "systems", "ranking_entries", "judgments",
          "consensus_labels", "grading_batches", "batch_items", "assignments", "adjudications", "grader_tokens",
          "web_sessions", "gold_items", "batch_gold_items", "gold_answers", "consensus_settings"}


def test_upgrade_downgrade_upgrade(empty_db):
    engine = empty_db.engine
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    assert TABLES <= set(inspect(engine).get_table_names())
    migrate.downgrade(engine, "base")
    assert migrate.current_revision(engine) is None
    assert not (TABLES & set(inspect(engine).get_table_names()))
    migrate.upgrade(engine)
    assert TABLES <= set(inspect(engine).get_table_names())


def test_each_revision_steps_down_and_up(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine)
    assert _guard_triggers(engine) == (1 if engine.dialect.name == "postgresql" else 0)
    migrate.downgrade(engine, "0005")
    assert migrate.current_revision(engine) == "0005" and _guard_triggers(engine) == 0
    for target, gone in [("0004", "gold_answers"), ("0003", "web_sessions"), ("0002", "adjudications"), ("0001", "grading_batches")]:
        migrate.downgrade(engine, target)
        assert migrate.current_revision(engine) == target
        assert gone not in inspect(engine).get_table_names()
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.HEAD_REVISION
    assert _guard_triggers(engine) == (1 if engine.dialect.name == "postgresql" else 0)


def _guard_triggers(engine) -> int:
    """The documents guard's triggers (migration 0006, PostgreSQL only)."""
    if engine.dialect.name != "postgresql":
        return 0
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM pg_trigger WHERE tgname = 'documents_guard' "
                                     "AND tgrelid = to_regclass('documents')")).scalar_one())


def test_0005_adds_gold_tables_and_columns_and_removes_them(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine)
    assert "kind" in {c["name"] for c in inspect(engine).get_columns("graders")}
    assert {"gold_rate", "gold_feedback"} <= {c["name"] for c in inspect(engine).get_columns("grading_batches")}
    migrate.downgrade(engine, "0004")
    assert "kind" not in {c["name"] for c in inspect(engine).get_columns("graders")}
    assert not {"gold_rate", "gold_feedback"} & {c["name"] for c in inspect(engine).get_columns("grading_batches")}
    assert not {"gold_items", "batch_gold_items", "gold_answers"} & set(inspect(engine).get_table_names())
    # nothing a grader's items are read from carries the gold mark
    migrate.upgrade(engine)
    assert {c["name"] for c in inspect(engine).get_columns("batch_items")} == {
        "id", "batch_id", "item_key", "query_id", "document_id"}
    assert {c["name"] for c in inspect(engine).get_columns("assignments")} == {
        "id", "batch_id", "item_id", "grader_id", "position", "status", "skip_reason", "updated_at"}


def test_0004_adds_the_role_column_and_removes_it(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine)
    assert "role" in {c["name"] for c in inspect(engine).get_columns("graders")}
    migrate.downgrade(engine, "0003")
    assert "role" not in {c["name"] for c in inspect(engine).get_columns("graders")}
    assert not {"grader_tokens", "web_sessions"} & set(inspect(engine).get_table_names())


def test_models_match_migrations(db):
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_scales_are_seeded(db):
    with db.engine.connect() as conn:
        rows = conn.execute(text("SELECT scale, grade, label FROM scale_grades ORDER BY scale, grade")).all()
    from ndcg_labeling.scales import SCALES

    expected = [(s.name, g, s.name_of(g)) for s in SCALES.values() for g in s.values]
    assert sorted(rows) == sorted(expected)


def test_sqlite_foreign_keys_are_enforced(sqlite_db):
    import pytest
    from sqlalchemy.exc import IntegrityError

    with pytest.raises(IntegrityError), sqlite_db.engine.begin() as conn:
        conn.execute(text("INSERT INTO judgments (grader_id, query_id, document_id, grade, scale, batch, created_at) "
                          "VALUES (99, 99, 99, 1, '0-3', '', '2026-01-01 00:00:00')"))


def test_0007_adds_the_later_gold_grade_and_consensus_settings_and_removes_them(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine)
    assert {"later_grade", "n_later"} <= {c["name"] for c in inspect(engine).get_columns("gold_answers")}
    assert "consensus_settings" in inspect(engine).get_table_names()
    migrate.downgrade(engine, "0006")
    assert not {"later_grade", "n_later"} & {c["name"] for c in inspect(engine).get_columns("gold_answers")}
    assert "consensus_settings" not in inspect(engine).get_table_names()
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.HEAD_REVISION
