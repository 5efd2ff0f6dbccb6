"""Migration 0016 (the judge gate: provenance base URL, the verdict's model and prompt, lineage, checks) up,
down and up again on SQLite and PostgreSQL (``empty_db`` runs on both where PostgreSQL is configured): the
rows stored at 0014 keep their values; the new columns and tables come and go."""

from __future__ import annotations

from sqlalchemy import inspect, text

from ndcg_labeling.db import migrate
from tests.db.test_migrations_keep_data import ROWS_0001, ROWS_0002, _dump
from tests.judges.test_migration_0014 import ROWS_0011, fill

NEW_COLUMNS = {"judgment_provenance": {"base_url"},
               "calibration_verdicts": {"model", "template_sha256", "kappa_ci_low", "kappa_ci_high"}}
T = "'2026-01-02 03:04:05'"
VERDICT = (f"INSERT INTO calibration_verdicts (id, grader_id, batch, scope, agrees, kappa, tau, n, verdict, created_at) "
           f"VALUES (1, 1, 'b1', 'all', TRUE, 0.7, 0.9, 40, 'agrees', {T})")


def _columns(engine, table: str) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns(table)}


def test_0016_adds_the_gate_and_the_downgrade_removes_it(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine, "0015")
    fill(engine)
    with engine.begin() as conn:
        conn.execute(text(VERDICT))
    tables = [*ROWS_0001, *ROWS_0002, *ROWS_0011, "calibration_verdicts"]
    before = _dump(engine, tables)
    old = {t: _columns(engine, t) for t in NEW_COLUMNS}

    migrate.upgrade(engine, "0016")
    assert migrate.current_revision(engine) == "0016"
    for table, added in NEW_COLUMNS.items():
        assert _columns(engine, table) == old[table] | added
    assert {"judge_lineage", "judge_checks"} <= set(inspect(engine).get_table_names())
    assert _dump(engine, [t for t in tables if t not in NEW_COLUMNS]) == {
        t: v for t, v in before.items() if t not in NEW_COLUMNS}
    with engine.connect() as conn:  # the old rows: the new columns NULL, the others as they were
        assert conn.execute(text("SELECT base_url, model FROM judgment_provenance")).all() == [(None, "gpt")]
        assert conn.execute(text("SELECT model, template_sha256, kappa FROM calibration_verdicts")).all() == [
            (None, None, 0.7)]
    with engine.begin() as conn:  # the new tables hold rows, and a second (judge, system) pair is refused
        conn.execute(text(f"INSERT INTO judge_lineage (grader_id, system_id, note, created_at) VALUES (1, 1, 'x', {T})"))
        conn.execute(text(f"INSERT INTO judge_checks (grader_id, kind, batch, model, base_url, template_sha256, n, passed,"
                          f" threshold, result, created_at) VALUES (1, 'canary', 'b1', 'gpt', 'http://x/v1', "
                          f"'{'d' * 64}', 16, FALSE, 0.1, '{{}}', {T})"))
        conn.execute(text("UPDATE judgment_provenance SET base_url = 'http://x/v1'"))

    migrate.downgrade(engine, "0015")
    assert migrate.current_revision(engine) == "0015"
    for table in NEW_COLUMNS:
        assert _columns(engine, table) == old[table]
    assert not {"judge_lineage", "judge_checks"} & set(inspect(engine).get_table_names())
    assert _dump(engine, tables) == before  # every row of 0015 as it was
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.HEAD_REVISION
    assert _columns(engine, "judgment_provenance") == old["judgment_provenance"] | {"base_url"}
