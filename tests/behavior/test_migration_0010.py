"""Migration 0010 (behavior provenance) up, down and up again on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import inspect

from ndcg_labeling.db import migrate

TABLES = {"behavior_derivations", "behavior_pairs"}


def test_0010_adds_and_removes_the_behavior_tables(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == "0010"
    assert TABLES <= set(inspect(engine).get_table_names())
    cols = {c["name"] for c in inspect(engine).get_columns("behavior_derivations")}
    assert {"model", "parameters", "half_life_s", "as_of", "since", "until", "position_bias", "thresholds",
            "held_out_kappa", "n_pairs_left_out"} <= cols
    assert {"impressions", "clicks", "weighted_impressions", "score", "grade"} <= {
        c["name"] for c in inspect(engine).get_columns("behavior_pairs")}
    migrate.downgrade(engine, "0006")
    assert migrate.current_revision(engine) == "0006"
    assert not (TABLES & set(inspect(engine).get_table_names()))
    migrate.upgrade(engine)
    assert TABLES <= set(inspect(engine).get_table_names())
