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
