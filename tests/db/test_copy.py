"""The PostgreSQL bulk write: psycopg's binary COPY (``set_types``) of rows given as columns or as tuples
stores the rows given, NULL scores included, with the progress moving every CHUNK rows."""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeling.db import bulk
from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope


@pytest.mark.pg
@pytest.mark.parametrize("db", ["postgresql"], indirect=True)  # PostgreSQL COPY only
def test_rows_copied_in_parts_are_the_rows_given(db, monkeypatch):
    monkeypatch.setattr(bulk, "CHUNK", 1_000)
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
    assert seen == [1000, 2000, 3000, 4000, n]  # per CHUNK rows, then the total
    seen.clear()  # rows as tuples: the same
    with session_scope(db.engine) as session:
        other = m.System(name="t")
        session.add(other)
        session.flush()
        tuples = [(other.id, int(q), d, int(r), None) for q, d, r in zip(qid, range(1, n + 1), rank, strict=True)]
        bulk.bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank", "score"], tuples,
                         session=session, progress=seen.append)
    assert seen == [1000, 2000, 3000, 4000, n]
    with session_scope(db.engine) as session:
        got = session.query(m.RankingEntry.query_id, m.RankingEntry.document_id, m.RankingEntry.rank,
                            m.RankingEntry.score).filter_by(system_id=sid).order_by(m.RankingEntry.document_id).all()
    assert [(r[0], r[1], r[2]) for r in got] == list(zip(qid.tolist(), range(1, n + 1), rank.tolist(), strict=True))
    stored = np.array([np.nan if r[3] is None else r[3] for r in got])
    assert np.array_equal(stored, scores, equal_nan=True)
