"""The binary COPY sent in parts (issue 17): each part encoded while the server stores the one before. The
parts join to the one payload of the whole rows, a column that might not encode keeps the whole payload,
and rows written in parts are the rows given, with the progress moving per part."""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeling.db import bulk, pg_binary
from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope

TYPES = ["integer", "bigint", "double precision", "character varying"]


def _columns(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    scores = rng.random(n)
    scores[rng.random(n) < 0.2] = np.nan  # NULLs: rows of two layouts
    return [7, rng.integers(-2**40, 2**40, n), scores, "run.txt"]


@pytest.mark.parametrize("n, part", [(10, 3), (9, 3), (1000, 999), (1000, 1), (5, 7)])
def test_parts_join_to_the_whole_payload(n, part):
    columns = _columns(n)
    parts = pg_binary.encode_parts(columns, n, TYPES, part)
    assert parts is not None
    chunks = list(parts)
    assert len(chunks) == -(-n // part)
    assert b"".join(chunks) == pg_binary.encode_columns(columns, n, TYPES)
    # every row encoded the same: a fixed layout too
    fixed = [7, np.arange(n), np.linspace(0, 1, n), "x"]
    assert b"".join(pg_binary.encode_parts(fixed, n, TYPES, part) or []) == pg_binary.encode_columns(fixed, n, TYPES)


def test_parts_refused_where_a_part_might_not_encode():
    n = 10
    ok = _columns(n)
    assert pg_binary.encode_parts(ok, n, TYPES, 3) is not None
    too_big = [7, np.full(n, 2**31), ok[2], "x"]  # out of range for integer: PostgreSQL's own error, as text
    assert pg_binary.encode_parts(too_big, n, ["integer", "integer", "double precision", "text"], 3) is None
    assert pg_binary.encode_parts([7, list(range(n)), ok[2], "x"], n, TYPES, 3) is None  # a list: not checked ahead
    assert pg_binary.encode_parts([7, ok[1], ok[2], 5], n, TYPES, 3) is None  # an int for text
    assert pg_binary.encode_parts([7, ok[1].astype(float), ok[2], "x"], n, TYPES, 3) is None  # floats for bigint


@pytest.mark.pg
@pytest.mark.parametrize("db", ["postgresql"], indirect=True)  # PostgreSQL COPY only
def test_rows_copied_in_parts_are_the_rows_given(db, monkeypatch):
    monkeypatch.setattr(bulk, "COPY_PART", 1_000)
    n = 4_500
    rng = np.random.default_rng(3)
    scores = np.round(rng.random(n), 3)
    scores[::7] = np.nan
    seen: list[int] = []
    with session_scope(db.engine) as session:
        system = m.System(name="s")
        session.add(system)
        session.flush()
        bulk.bulk_insert(m.Query, ["external_id"], [(f"q{i}",) for i in range(n // 100)], session=session)
        bulk.bulk_insert(m.Document, ["external_id"], [(f"d{i}",) for i in range(n)], session=session)
        qid = np.repeat(np.arange(1, n // 100 + 1), 100)
        rank = np.tile(np.arange(1, 101), n // 100)
        rows = bulk.ColumnRows([system.id, qid, np.arange(1, n + 1), rank, scores], n)
        written = bulk.bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank", "score"], rows,
                                   session=session, progress=seen.append)
        sid = system.id
    assert written == n
    assert seen == [1000, 2000, 3000, 4000, n]  # per part, then the total
    seen.clear()  # rows as tuples: one payload, whose progress is its total alone
    with session_scope(db.engine) as session:
        other = m.System(name="t")
        session.add(other)
        session.flush()
        tuples = [(other.id, int(q), d, int(r), None) for q, d, r in zip(qid, range(1, n + 1), rank, strict=True)]
        bulk.bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank", "score"], tuples,
                         session=session, progress=seen.append)
    assert seen == [n]
    with session_scope(db.engine) as session:
        got = session.query(m.RankingEntry.query_id, m.RankingEntry.document_id, m.RankingEntry.rank,
                            m.RankingEntry.score).filter_by(system_id=sid).order_by(m.RankingEntry.document_id).all()
    assert [(r[0], r[1], r[2]) for r in got] == list(zip(qid.tolist(), range(1, n + 1), rank.tolist(), strict=True))
    stored = np.array([np.nan if r[3] is None else r[3] for r in got])
    assert np.array_equal(stored, scores, equal_nan=True)
