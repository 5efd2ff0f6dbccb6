"""Migration 0013 (the pooling strategy of a batch; the table of rounds, strata and inclusion probabilities) up, down and up again on SQLite and
PostgreSQL (the ``empty_db`` fixture runs on both where PostgreSQL is configured)."""

from __future__ import annotations

from sqlalchemy import inspect

from ndcg_labeling.db import migrate


def columns(engine, table: str) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns(table)}


def test_0013_adds_and_removes_the_budget_columns(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.HEAD_REVISION
    assert {"strategy", "budget", "strata_edges"} <= columns(engine, "grading_batches")
    assert columns(engine, "batch_item_designs") == {"item_id", "round", "stratum", "inclusion"}
    migrate.downgrade(engine, "0012")
    assert migrate.current_revision(engine) == "0012"
    assert not ({"strategy", "budget", "strata_edges"} & columns(engine, "grading_batches"))
    assert "batch_item_designs" not in inspect(engine).get_table_names()
    migrate.upgrade(engine)
    assert "batch_item_designs" in inspect(engine).get_table_names()


def test_0013_keeps_the_rows_of_batches_items_and_assignments(empty_db):
    # a table copy of grading_batches (SQLite's batch mode) would cascade into batch_items and assignments
    from sqlalchemy import text

    from tests.db.test_migrations_keep_data import ROWS_0001, ROWS_0002, _dump

    engine = empty_db.engine
    migrate.upgrade(engine, "0012")
    with engine.begin() as conn:
        for statements in {**ROWS_0001, **ROWS_0002}.values():
            for sql in statements:
                conn.execute(text(sql))
    tables = [*ROWS_0001, *ROWS_0002]
    old = {t: [c["name"] for c in inspect(engine).get_columns(t)] for t in tables}
    before = _dump(engine, tables, old)
    assert all(before[t] for t in tables)
    migrate.upgrade(engine)
    assert _dump(engine, tables, old) == before
    migrate.downgrade(engine, "0012")
    assert _dump(engine, tables, old) == before
