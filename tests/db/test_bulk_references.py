"""SQLite bulk imports write with foreign keys off and check each key once over the distinct values
(db/references.py). The reference here is SQLite's own enforcement: every write it refuses row by row
must be refused in bulk too, nothing may be written then, and the next transaction on the same pooled
connection must enforce foreign keys again."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from ndcg_labeling.db import migrate
from ndcg_labeling.db import models as m
from ndcg_labeling.db.bulk import ColumnRows, bulk_insert
from ndcg_labeling.db.references import begin_bulk
from ndcg_labeling.db.session import make_engine, session_scope

NOW = "2026-12-03 12:00:00.000000"
RUN_COLS = ["system_id", "query_id", "document_id", "rank", "score"]
JUDGMENT_COLS = ["grader_id", "query_id", "document_id", "grade", "scale", "batch", "created_at"]


@pytest.fixture
def engine(tmp_path: Path):
    engine = make_engine(f"sqlite:///{tmp_path / 'refs.db'}", pool_size=1, max_overflow=0)  # one pooled connection
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO systems (id, name) VALUES (1, 's')"))
        conn.execute(text("INSERT INTO graders (id, name, active) VALUES (1, 'g', 1)"))
        conn.execute(text("INSERT INTO queries (id, external_id) VALUES (1, 'q')"))
        for i in range(1, 21):
            conn.execute(text("INSERT INTO documents (id, external_id) VALUES (:i, :e)"), {"i": i, "e": f"d{i}"})
    yield engine
    engine.dispose()


def _rank_rows(docs: list[int], as_columns: bool):
    rows = [(1, 1, d, r + 1, 1.0) for r, d in enumerate(docs)]
    if as_columns:
        import numpy as np

        return ColumnRows([1, 1, np.asarray(docs, dtype=np.int64), np.arange(1, len(docs) + 1), 1.0], len(docs))
    return rows


def _write(engine, model, columns, rows, *, bulk: bool) -> None:
    with session_scope(engine) as session:
        if bulk:
            begin_bulk(session)
        keys_on = session.connection().exec_driver_sql("PRAGMA foreign_keys").scalar_one()
        assert keys_on == (0 if bulk else 1)
        bulk_insert(model, columns, rows, session=session)


def _count(engine, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


@pytest.mark.parametrize("as_columns", [False, True])
@pytest.mark.parametrize("docs, holes", [
    ([3, 4, 21], ()),        # above the stored range: the range count fails, the join finds it
    ([25, 2], ()),           # far outside
    ([5, 7, 9], (7,)),       # a deleted document inside the range
])
def test_bulk_refuses_what_sqlite_refuses(engine, docs, holes, as_columns):
    with engine.begin() as conn:
        for d in holes:
            conn.execute(text("DELETE FROM documents WHERE id = :d"), {"d": d})
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):  # SQLite itself, row by row
        _write(engine, m.RankingEntry, RUN_COLS, _rank_rows(docs, as_columns), bulk=False)
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        _write(engine, m.RankingEntry, RUN_COLS, _rank_rows(docs, as_columns), bulk=True)
    assert _count(engine, "ranking_entries") == 0


@pytest.mark.parametrize("holes", [(), (6, 11)])
def test_bulk_writes_what_sqlite_accepts(engine, holes):
    with engine.begin() as conn:
        for d in holes:
            conn.execute(text("DELETE FROM documents WHERE id = :d"), {"d": d})
    docs = [d for d in range(1, 21) if d not in holes]
    _write(engine, m.RankingEntry, RUN_COLS, _rank_rows(docs, True), bulk=True)
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT document_id FROM ranking_entries ORDER BY rank")).scalars().all()
        assert stored == docs
        assert conn.execute(text("PRAGMA foreign_key_check")).all() == []  # SQLite's own check of every row


def test_a_text_key_is_checked_in_bulk(engine):
    bad = [(1, 1, 1, 2, "no-such-scale", "", NOW)]
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        _write(engine, m.Judgment, JUDGMENT_COLS, bad, bulk=False)
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        _write(engine, m.Judgment, JUDGMENT_COLS, bad, bulk=True)
    _write(engine, m.Judgment, JUDGMENT_COLS, [(1, 1, 1, 2, "0-3", "", NOW)], bulk=True)
    assert _count(engine, "judgments") == 1


def test_the_next_transaction_enforces_keys_again(engine):
    _write(engine, m.RankingEntry, RUN_COLS, _rank_rows([1, 2], False), bulk=True)
    with engine.connect() as conn:  # the same pooled connection (pool of one)
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
    with pytest.raises(IntegrityError, match="FOREIGN KEY"), engine.begin() as conn:
        conn.execute(text("INSERT INTO ranking_entries (system_id, query_id, document_id, rank) VALUES (1, 1, 99, 9)"))


def test_a_transaction_already_begun_keeps_per_row_keys(engine):
    with session_scope(engine) as session:
        session.execute(text("SELECT 1"))
        begin_bulk(session)  # too late: SQLite switches keys only between transactions
        assert session.connection().exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
