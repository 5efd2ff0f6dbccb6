"""A database filled at each earlier revision keeps every row through upgrade to head, and through
downgrade back to that revision and up again."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from ndcg_labeling.db import migrate

T = "'2026-01-02 03:04:05'"
ROWS_0001 = {
    "queries": ["INSERT INTO queries (id, external_id, text, query_type) VALUES (1, 'q1', 'cheap flights', 'transactional')",
                "INSERT INTO queries (id, external_id, text, query_type) VALUES (2, 'q2', NULL, NULL)"],
    "documents": ["INSERT INTO documents (id, external_id, title, body, url) VALUES (1, 'd1', 'Flights', 'Cheap', NULL)",
                  "INSERT INTO documents (id, external_id, title, body, url) VALUES (2, 'd2', '東京', NULL, 'https://x.test/')"],
    "graders": ["INSERT INTO graders (id, name, display_name, active) VALUES (1, 'alice', 'Alice A.', TRUE)"],
    "systems": ["INSERT INTO systems (id, name, description) VALUES (1, 'bm25', 'baseline')"],
    "ranking_entries": ["INSERT INTO ranking_entries (id, system_id, query_id, document_id, rank, score) VALUES (1, 1, 1, 1, 1, 2.5)",
                        "INSERT INTO ranking_entries (id, system_id, query_id, document_id, rank, score) VALUES (2, 1, 1, 2, 2, NULL)"],
    "judgments": [f"INSERT INTO judgments (id, grader_id, query_id, document_id, grade, scale, batch, source_file, created_at) "
                  f"VALUES (1, 1, 1, 1, 3, '0-3', 'b1', 'j.csv', {T})"],
    "consensus_labels": [f"INSERT INTO consensus_labels (id, query_id, document_id, value, method, scale, batch, n_graders, "
                         f"spread, needs_adjudication, reason, created_at) VALUES (1, 1, 1, 2.5, 'mean', '0-3', '', 2, 1.0, "
                         f"FALSE, NULL, {T})"],
}
ROWS_0002 = {
    "grading_batches": [f"INSERT INTO grading_batches (id, name, scale, depth, overlap, seed, guideline_path, guideline_version, "
                        f"guideline_sha256, created_at) VALUES (1, 'b1', '0-3', 10, 1, 7, 'guidelines/relevance-0-3.md', "
                        f"'1.0', '{'a' * 64}', {T})"],
    "batch_items": ["INSERT INTO batch_items (id, batch_id, item_key, query_id, document_id) VALUES (1, 1, 'k9f3', 1, 1)"],
    "assignments": ["INSERT INTO assignments (id, batch_id, item_id, grader_id, position, status, skip_reason) "
                    "VALUES (1, 1, 1, 1, 0, 'done', NULL)"],
}

ROWS_0003 = {
    "adjudications": [f"INSERT INTO adjudications (id, query_id, document_id, grade, adjudicator, note, created_at) "
                      f"VALUES (1, 1, 1, 2.0, 'lead', 'checked', {T})"],
}
# 0004's own tables: they keep their rows through a downgrade to 0003 and back only as far as 0004 exists,
# so they are checked from 0004 on (the role column of a grader added at 0004 included).
ROWS_0004 = {
    "grader_tokens": [f"INSERT INTO grader_tokens (id, grader_id, token_sha256, created_at, expires_at, revoked_at) "
                      f"VALUES (1, 1, '{'b' * 64}', {T}, {T}, NULL)"],
    "web_sessions": [f"INSERT INTO web_sessions (id, grader_id, token_id, session_sha256, created_at, expires_at) "
                     f"VALUES (1, 1, 1, '{'c' * 64}', {T}, {T})"],
}


def _dump(engine, tables, columns: dict[str, list[str]] | None = None) -> dict[str, list[tuple]]:
    """Every row of ``tables``; with ``columns``, only those columns (the ones of an older revision)."""
    with engine.connect() as conn:
        return {t: [tuple(r) for r in conn.execute(text(
            f"SELECT {', '.join(columns[t]) if columns else '*'} FROM {t} ORDER BY 1"))] for t in tables}


def _columns(engine, tables) -> dict[str, list[str]]:
    from sqlalchemy import inspect

    return {t: [c["name"] for c in inspect(engine).get_columns(t)] for t in tables}


@pytest.mark.parametrize("revision", ["0001", "0002", "0003", "0004", "0005"])
def test_rows_survive_upgrade_and_round_trip(empty_db, revision):
    engine = empty_db.engine
    migrate.upgrade(engine, revision)
    rows = dict(ROWS_0001)
    if revision >= "0002":
        rows.update(ROWS_0002)
    if revision >= "0003":
        rows.update(ROWS_0003)
    if revision >= "0004":
        rows.update(ROWS_0004)
    if revision >= "0005":
        rows.update(ROWS_0005)
    with engine.begin() as conn:
        for statements in rows.values():
            for sql in statements:
                conn.execute(text(sql))
    columns = _columns(engine, rows)  # later revisions may add columns (graders.role in 0004)
    before = _dump(engine, rows, columns)
    assert all(before[t] for t in rows)
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    assert _dump(engine, rows, columns) == before
    migrate.downgrade(engine, revision)
    assert _dump(engine, rows) == before
    migrate.upgrade(engine)
    assert _dump(engine, rows, columns) == before


def test_0004_rows_and_roles_survive_a_round_trip(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine, "0003")
    with engine.begin() as conn:
        for statements in {**ROWS_0001, **ROWS_0002, **ROWS_0003}.values():
            for sql in statements:
                conn.execute(text(sql))
    migrate.upgrade(engine, "0004")
    with engine.begin() as conn:
        assert conn.execute(text("SELECT role FROM graders WHERE id = 1")).scalar_one() == "grader"
        conn.execute(text("UPDATE graders SET role = 'lead' WHERE id = 1"))
        for statements in ROWS_0004.values():
            for sql in statements:
                conn.execute(text(sql))
    tables = [*ROWS_0001, *ROWS_0002, *ROWS_0003, *ROWS_0004]
    before = _dump(engine, tables)
    assert before["graders"][0][-1] == "lead"
    migrate.downgrade(engine, "0003")
    after_down = _dump(engine, [*ROWS_0001, *ROWS_0002, *ROWS_0003])
    assert after_down["graders"] == [row[:-1] for row in before["graders"]]
    assert {t: after_down[t] for t in after_down if t != "graders"} == {
        t: before[t] for t in after_down if t != "graders"}
    migrate.upgrade(engine, "0004")
    assert _dump(engine, [*ROWS_0001, *ROWS_0002, *ROWS_0003]) == {
        **{t: before[t] for t in [*ROWS_0001, *ROWS_0002, *ROWS_0003]},
        "graders": [(*row[:-1], "grader") for row in before["graders"]]}


ROWS_0005 = {
    "gold_items": [f"INSERT INTO gold_items (id, query_id, document_id, scale, grade, explanation, source_file, created_at) "
                   f"VALUES (1, 1, 2, '0-3', 0, 'off topic', 'gold.csv', {T})"],
    "batch_gold_items": ["INSERT INTO batch_items (id, batch_id, item_key, query_id, document_id) VALUES (2, 1, 'k77a', 1, 2)",
                         "INSERT INTO batch_gold_items (item_id, gold_item_id) VALUES (2, 1)"],
    "gold_answers": ["INSERT INTO assignments (id, batch_id, item_id, grader_id, position, status, skip_reason) "
                     "VALUES (2, 1, 2, 1, 1, 'done', NULL)",
                     f"INSERT INTO gold_answers (id, assignment_id, grade, source_file, created_at) VALUES (1, 2, 1, NULL, {T})"],
}


def test_0005_rows_kinds_and_gold_settings_survive_a_round_trip(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine, "0004")
    older = {**ROWS_0001, **ROWS_0002, **ROWS_0003, **ROWS_0004}
    with engine.begin() as conn:
        for statements in older.values():
            for sql in statements:
                conn.execute(text(sql))
    columns = _columns(engine, older)
    before_0004 = _dump(engine, older)
    migrate.upgrade(engine)
    with engine.begin() as conn:
        assert conn.execute(text("SELECT kind FROM graders WHERE id = 1")).scalar_one() == "human"
        assert tuple(conn.execute(text("SELECT gold_rate, gold_feedback FROM grading_batches WHERE id = 1")).one()) in (
            (0.0, False), (0.0, 0))
        conn.execute(text("UPDATE graders SET kind = 'model' WHERE id = 1"))
        for statements in ROWS_0005.values():
            for sql in statements:
                conn.execute(text(sql))
    tables = [*older, "gold_items", "batch_gold_items", "gold_answers"]
    before = _dump(engine, tables)
    migrate.downgrade(engine, "0004")
    after_down = _dump(engine, older, columns)
    # the rows added at 0005 in older tables (a batch item, an assignment) stay; the old rows are unchanged
    added = {"batch_items", "assignments"}
    assert {t: [r for r in after_down[t] if t not in added or r[0] == 1] for t in older} == before_0004
    migrate.upgrade(engine)
    after_up = _dump(engine, tables)
    assert after_up["graders"] == [(*row[:-1], "human") for row in before["graders"]]
    assert {t: after_up[t] for t in ("batch_items", "assignments", "queries", "judgments")} == {
        t: before[t] for t in ("batch_items", "assignments", "queries", "judgments")}
