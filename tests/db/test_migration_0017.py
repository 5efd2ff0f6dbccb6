"""Migration 0017 (search configurations and snapshots) up, down and up again on SQLite and PostgreSQL (the
``empty_db`` fixture runs on both where PostgreSQL is configured); a snapshot's stored run outlives the
downgrade, as a run."""

from __future__ import annotations

from sqlalchemy import inspect, text

from ndcg_labeling.db import migrate

NEW = {"search_configs", "search_snapshots"}
T = "'2026-12-07 10:00:00'"


def test_0017_adds_the_search_tables_and_removes_them(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine)
    assert NEW <= set(inspect(engine).get_table_names())
    assert "key_env" in {c["name"] for c in inspect(engine).get_columns("search_configs")}
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO systems (id, name) VALUES (1, 'es@2026-12-07T10:00:00Z')"))
        conn.execute(text("INSERT INTO search_configs (id, name, kind, url, template, template_sha256, id_path, "
                          f"timeout, concurrency, created_at) VALUES (1, 'es', 'elasticsearch', 'http://x', '{{}}', "
                          f"'{'a' * 64}', 'hits.hits[]._id', 10, 8, {T})"))
        conn.execute(text("INSERT INTO search_snapshots (system_id, config_id, template_sha256, depth, n_queries, "
                          f"n_hits, taken_at) VALUES (1, 1, '{'a' * 64}', 10, 0, 0, {T})"))
    migrate.downgrade(engine, "0014")
    assert migrate.current_revision(engine) == "0014"
    assert not NEW & set(inspect(engine).get_table_names())
    with engine.connect() as conn:  # the snapshot's run stays, as a stored run
        assert conn.execute(text("SELECT name FROM systems")).scalar_one() == "es@2026-12-07T10:00:00Z"
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.HEAD_REVISION
    assert NEW <= set(inspect(engine).get_table_names())
