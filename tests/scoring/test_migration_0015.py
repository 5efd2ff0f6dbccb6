"""Migration 0015 (``audit_samples``: the queries an audit batch drew, their strata and inclusion
probabilities) up, down and up again on SQLite and PostgreSQL (the ``empty_db`` fixture runs on both where
PostgreSQL is configured), keeping the rows of the tables that were there."""

from __future__ import annotations

from sqlalchemy import inspect, text

from ndcg_labeling.db import migrate
from tests.db.test_migrations_keep_data import ROWS_0001, ROWS_0002, _dump


def test_0015_adds_and_removes_audit_samples_and_keeps_the_rows(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine, "0014")
    with engine.begin() as conn:
        for statements in {**ROWS_0001, **ROWS_0002}.values():
            for sql in statements:
                conn.execute(text(sql))
    tables = [*ROWS_0001, *ROWS_0002]
    old = {t: [c["name"] for c in inspect(engine).get_columns(t)] for t in tables}
    before = _dump(engine, tables, old)
    migrate.upgrade(engine, "0015")
    assert {c["name"] for c in inspect(engine).get_columns("audit_samples")} == {
        "batch_id", "query_id", "source_batch_id", "judge_id", "stratum", "stratum_size", "inclusion"}
    assert inspect(engine).get_pk_constraint("audit_samples")["constrained_columns"] == ["batch_id", "query_id"]
    assert _dump(engine, tables, old) == before
    migrate.downgrade(engine, "0014")
    assert migrate.current_revision(engine) == "0014"
    assert "audit_samples" not in inspect(engine).get_table_names()
    assert _dump(engine, tables, old) == before
    migrate.upgrade(engine, "0015")
    assert "audit_samples" in inspect(engine).get_table_names()
