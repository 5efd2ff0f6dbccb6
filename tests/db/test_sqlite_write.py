"""SQLite bulk writes go as multi-row INSERT statements (db/rows.py, ``sqlite_write``). The reference is
``sqlite3.executemany`` of the same one-row statement over the same rows, into a copy of the same
table: both must leave identical tables (same row ids, order, values and types), the upsert must let
the last of two rows with one key win inside one statement as across statements, and a refused row
must leave nothing written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.exc import IntegrityError

from ndcg_labeling.db.bulk import ColumnRows, OnConflict, bulk_insert
from ndcg_labeling.db.session import make_engine, session_scope

TABLE = "CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, d INTEGER, s REAL, name TEXT, UNIQUE (k, d))"
COLS = ["k", "d", "s", "name"]


@pytest.fixture
def engine(tmp_path: Path):
    engine = make_engine(f"sqlite:///{tmp_path / 'w.db'}", pool_size=1, max_overflow=0)
    with engine.begin() as conn:
        conn.exec_driver_sql(TABLE)
    yield engine
    engine.dispose()


def _peer(tmp_path: Path, rows: list[tuple], upsert: str = "") -> list[tuple]:
    """The table after sqlite3.executemany of the one-row statement."""
    con = sqlite3.connect(tmp_path / "peer.db")
    con.execute(TABLE)
    con.executemany(f"INSERT INTO t (k, d, s, name) VALUES (?, ?, ?, ?){upsert}", rows)
    con.commit()
    got = con.execute("SELECT id, k, d, s, name, typeof(s), typeof(d) FROM t ORDER BY id").fetchall()
    con.close()
    return got


def _ours(engine, rows, on_conflict=None, progress=None, n=None) -> list[tuple]:
    n = len(rows) if n is None else n
    with session_scope(engine) as session:
        written = bulk_insert(_table(), COLS, rows, session=session, on_conflict=on_conflict,
                              progress=progress)
        assert written == n
    with engine.connect() as conn:
        return [tuple(r) for r in conn.exec_driver_sql(
            "SELECT id, k, d, s, name, typeof(s), typeof(d) FROM t ORDER BY id").all()]


def _table():
    from sqlalchemy import column, table

    return table("t", *(column(c) for c in COLS))


def _rows(n: int, seed: int = 3) -> tuple[list[tuple], ColumnRows]:
    rng = np.random.default_rng(seed)
    k = np.repeat(np.arange(n // 7 + 1), 7)[:n]
    d = rng.permutation(n * 3)[:n]
    s = rng.random(n)
    s[::11] = np.nan  # NULL
    names = [f"n{i}" if i % 5 else "é'\"" for i in range(n)]
    tuples = [(int(a), int(b), None if c != c else float(c), e) for a, b, c, e in zip(k, d, s, names, strict=True)]
    return tuples, ColumnRows([k, d, s, names], n)


@pytest.mark.parametrize("n", [1, 499, 500, 501, 1_234, 50_001])
def test_multi_row_insert_leaves_the_table_executemany_leaves(engine, tmp_path, n):
    tuples, columns = _rows(n)
    assert _ours(engine, columns) == _peer(tmp_path, tuples)


def _statements(engine) -> list[str]:
    """Collects the INSERT statements SQLite runs on the one pooled connection."""
    seen: list[str] = []
    with engine.connect() as conn:
        conn.connection.driver_connection.set_trace_callback(
            lambda sql: seen.append(sql) if sql.startswith("INSERT") else None)
    return seen


def test_statements_of_many_rows_and_the_rest(engine, tmp_path):
    tuples, columns = _rows(1_234)
    seen = _statements(engine)
    assert _ours(engine, columns) == _peer(tmp_path, tuples)
    assert [s.count("), (") + 1 for s in seen] == [500, 500, 234]


def test_rows_given_as_tuples_and_a_low_variable_limit(engine, tmp_path):
    tuples, _ = _rows(2_003)
    with engine.connect() as conn:  # at most 10 variables, so 2 rows of 4 columns a statement
        conn.connection.driver_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 10)
    seen = _statements(engine)
    calls: list[int] = []
    assert _ours(engine, iter(tuples), progress=calls.append, n=len(tuples)) == _peer(tmp_path, tuples)
    assert len(seen) == 1_002 and all(s.count("), (") == 1 for s in seen[:-1])
    assert calls[-1] == 2_003 and calls == sorted(calls)


def test_upsert_inside_one_statement_lets_the_last_row_win(engine, tmp_path):
    tuples = [(1, 1, 0.5, "a"), (1, 2, 0.25, "b"), (1, 1, 0.75, "c"), (2, 1, None, "d"), (1, 1, 1.5, "e")]
    upsert = " ON CONFLICT (k, d) DO UPDATE SET s = excluded.s, name = excluded.name"
    ours = _ours(engine, tuples, on_conflict=OnConflict(keys=("k", "d"), update=("s", "name")))
    assert ours == _peer(tmp_path, tuples, upsert)
    assert [r[4] for r in ours] == ["e", "b", "d"]


def test_a_refused_row_is_one_driver_error_and_nothing_is_written(engine):
    tuples, _ = _rows(3_000)
    tuples[2_345] = tuples[17]  # the same (k, d) twice, far into the rows
    with pytest.raises(IntegrityError, match="UNIQUE constraint failed: t.k, t.d"):
        with session_scope(engine) as session:
            bulk_insert(_table(), COLS, tuples, session=session)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar_one() == 0
