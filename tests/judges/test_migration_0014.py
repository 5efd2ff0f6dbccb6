"""Migration 0014 (64-bit token counts of judge runs and responses) up, down and up again on SQLite and
PostgreSQL (the ``empty_db`` and ``db`` fixtures run on both where PostgreSQL is configured).

On PostgreSQL the four columns go from INTEGER to BIGINT and back; a count of 3,000,000,000 is refused at
0013 and stored and read back exactly at 0014, and a downgrade that would not fit it refuses with a
message, changing nothing. On SQLite, whose INTEGER is 64-bit, the schema is left alone (a table copy
would fire the ON DELETE SET NULL of the rows that name a run) and the count fits at both revisions.
"""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import DataError

from ndcg_labeling.db import migrate
from tests.conftest import invoke
from tests.db.test_migrations_keep_data import ROWS_0001, ROWS_0002, _dump

BIG = 3_000_000_000  # more than 2**31 - 1: a long run's prompt tokens
COUNTS = {"judge_runs": ("prompt_tokens", "completion_tokens"),
          "judge_responses": ("prompt_tokens", "completion_tokens")}
T = "'2026-01-02 03:04:05'"
ROWS_0011 = {
    "judge_runs": [f"INSERT INTO judge_runs (id, batch_id, grader_id, model, base_url, template_name, template_version, "
                   f"template_sha256, temperature, n_items, n_cached, n_sent, n_graded, n_skipped, prompt_tokens, "
                   f"completion_tokens, cost, started_at) VALUES (1, 1, 1, 'gpt', 'http://x/v1', 'relevance', '1', "
                   f"'{'d' * 64}', 0.0, 1, 0, 1, 1, 0, 2147483647, 7, 0.5, {T})"],
    "judge_responses": [f"INSERT INTO judge_responses (id, cache_key, run_id, model, base_url, prompt_sha256, status, "
                        f"grade, raw, reason, prompt_tokens, completion_tokens, created_at) VALUES (1, '{'e' * 64}', 1, "
                        f"'gpt', 'http://x/v1', '{'f' * 64}', 'graded', 2, '{{\"grade\": 2}}', NULL, 2147483647, 7, {T})"],
    "judgment_provenance": [],  # filled below: it needs a judgment of 0001's
}
TABLES = [*ROWS_0001, *ROWS_0002, *ROWS_0011]


def count_types(engine) -> dict[str, str]:
    """``table.column`` -> the reflected type of each token count, as the database names it."""
    return {f"{t}.{c['name']}": str(c["type"]) for t, cols in COUNTS.items()
            for c in inspect(engine).get_columns(t) if c["name"] in cols}


def fill(engine) -> None:
    with engine.begin() as conn:
        for statements in {**ROWS_0001, **ROWS_0002, **ROWS_0011}.values():
            for sql in statements:
                conn.execute(text(sql))
        conn.execute(text("INSERT INTO judgment_provenance (judgment_id, run_id, response_id, model, prompt_sha256, "
                          f"template_version, template_sha256, temperature) VALUES (1, 1, 1, 'gpt', '{'f' * 64}', '1', "
                          f"'{'d' * 64}', 0.0)"))


def store_big(engine) -> None:
    with engine.begin() as conn:
        for table, cols in COUNTS.items():
            conn.execute(text(f"UPDATE {table} SET {cols[0]} = :v WHERE id = 1"), {"v": BIG})


def read_counts(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {f"{t}.{c}": conn.execute(text(f"SELECT {c} FROM {t} WHERE id = 1")).scalar_one()
                for t, cols in COUNTS.items() for c in cols}


def test_0014_widens_the_token_counts_and_the_downgrade_narrows_them(empty_db, runner):
    engine = empty_db.engine
    pg = engine.dialect.name == "postgresql"
    migrate.upgrade(engine, "0013")
    fill(engine)
    old = count_types(engine)
    assert set(old.values()) == {"INTEGER"}
    if pg:  # the failure 0014 removes: PostgreSQL's INTEGER cannot hold the count
        with pytest.raises(DataError, match="out of range"):
            store_big(engine)
    before = _dump(engine, TABLES)
    assert all(before[t] for t in TABLES)

    migrate.upgrade(engine, "0014")
    assert migrate.current_revision(engine) == "0014"
    assert set(count_types(engine).values()) == ({"BIGINT"} if pg else {"INTEGER"})
    assert _dump(engine, TABLES) == before  # every row as it was (PostgreSQL rewrote both tables)
    store_big(engine)
    counts = read_counts(engine)
    assert counts == {"judge_runs.prompt_tokens": BIG, "judge_runs.completion_tokens": 7,
                      "judge_responses.prompt_tokens": BIG, "judge_responses.completion_tokens": 7}
    assert all(type(v) is int for v in counts.values())

    if pg:  # a downgrade that would not fit the count refuses, naming it, and changes nothing
        refused = invoke(runner, empty_db, "db", "downgrade", "0013")
        assert refused.exit_code == 1
        assert refused.stderr == ("Error: cannot downgrade to '0013': judge_runs.prompt_tokens holds 3,000,000,000, more "
                                  "than the 2,147,483,647 that its INTEGER holds at revision 0013; nothing was changed\n")
        assert migrate.current_revision(engine) == "0014"
        assert set(count_types(engine).values()) == {"BIGINT"} and read_counts(engine) == counts
        with engine.begin() as conn:
            for table, cols in COUNTS.items():
                conn.execute(text(f"UPDATE {table} SET {cols[0]} = 2147483647"))
        migrate.downgrade(engine, "0013")
        assert _dump(engine, TABLES) == before
    else:  # SQLite's INTEGER held it at 0013 as well: nothing to refuse
        migrate.downgrade(engine, "0013")
        assert read_counts(engine) == counts
    assert migrate.current_revision(engine) == "0013"
    assert count_types(engine) == old
    migrate.upgrade(engine)
    assert set(count_types(engine).values()) == ({"BIGINT"} if pg else {"INTEGER"})


def test_a_run_whose_answers_total_over_2_31_tokens_is_stored(db):
    """The failure at the end of a long run: ``finish_run`` writes the sums of the answers' tokens
    (300 answers of 10,000,000 prompt tokens, the most one answer may report) into the run."""
    from ndcg_labeling.db import models as m
    from ndcg_labeling.db.session import session_scope
    from ndcg_labeling.judges.client import MAX_TOKENS
    from ndcg_labeling.sources.judge_answers import finish_run

    with db.engine.begin() as conn:
        for statements in {**ROWS_0001, **ROWS_0002, "judge_runs": ROWS_0011["judge_runs"]}.values():
            for sql in statements:
                conn.execute(text(sql))
        conn.execute(text("UPDATE judge_runs SET prompt_tokens = 0, completion_tokens = 0"))
    with session_scope(db.engine) as session:
        session.add_all(m.JudgeResponse(cache_key=f"{i:064d}", run_id=1, model="gpt", base_url="http://x/v1",
                                        prompt_sha256="f" * 64, status="graded", grade=1, raw="{}",
                                        prompt_tokens=MAX_TOKENS, completion_tokens=3) for i in range(300))
        session.flush()
        assert finish_run(1, session=session, finished=True, fields={}, prices=(1.0, None)) == (BIG, 900, 3000.0)
    with db.engine.connect() as conn:
        row = conn.execute(text("SELECT prompt_tokens, completion_tokens, cost FROM judge_runs")).one()
    assert tuple(row) == (BIG, 900, 3000.0)
