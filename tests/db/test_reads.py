"""Bulk reads against a plain-Python reference, on SQLite and PostgreSQL.

``ranking_rows`` reads only ranks ``<= k`` and looks up the rest of a list only where it must: these
lists are built to hit every case (full lists, short lists, ranks with holes, lists whose ranks all
exceed ``k``, queries a system never ranked, a system with no rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ndcg_labeling.db import models as m
from ndcg_labeling.db.reads import fetch_array, ranking_rows
from ndcg_labeling.db.repository import bulk_insert
from ndcg_labeling.db.session import session_scope


def _lists(seed: int, n_queries: int, n_systems: int) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """(system, query) -> [(document, rank)], in no particular order."""
    rng = np.random.default_rng(seed)
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for s in range(1, n_systems + 1):
        if s == n_systems:
            continue  # the last system stores nothing
        for q in range(1, n_queries + 1):
            kind = rng.integers(0, 5)
            if kind == 0:
                continue  # this system never ranked the query
            length = int(rng.integers(1, 30))
            if kind == 1:
                ranks = np.arange(1, length + 1)  # dense 1..n
            elif kind == 2:
                ranks = np.sort(rng.choice(np.arange(1, 60), size=length, replace=False))  # holes
            elif kind == 3:
                ranks = np.sort(rng.choice(np.arange(11, 60), size=length, replace=False))  # all past 10
            else:
                ranks = np.arange(1, min(length, 4) + 1)  # short
            docs = rng.choice(np.arange(1, 101), size=len(ranks), replace=False)
            out[(s, q)] = [(int(d), int(r)) for d, r in zip(docs, ranks, strict=True)]
    return out


def _reference(lists: dict[tuple[int, int], list[tuple[int, int]]], systems: list[int], k: int | None) -> list[tuple[int, int, int]]:
    rows = []
    for (s, q), lst in sorted(lists.items()):
        if s in systems:
            ranked = sorted(lst, key=lambda dr: dr[1])
            rows.extend((s, q, d) for d, _ in (ranked if k is None else ranked[:k]))
    return sorted(rows, key=lambda r: (r[0], r[1]))  # stable: rank order kept within a list


@pytest.mark.parametrize("k", [None, 1, 3, 10, 25])
def test_ranking_rows_matches_a_plain_reading_of_every_list(db: Any, k: int | None) -> None:
    n_queries, n_systems = 40, 4
    lists = _lists(7, n_queries, n_systems)
    with session_scope(db.engine) as session:
        bulk_insert(m.Query, ["id", "external_id"], [(q, f"q{q}") for q in range(1, n_queries + 1)], session=session)
        bulk_insert(m.Document, ["id", "external_id"], [(d, f"d{d}") for d in range(1, 101)], session=session)
        bulk_insert(m.System, ["id", "name"], [(s, f"s{s}") for s in range(1, n_systems + 1)], session=session)
        entries = [(s, q, d, r) for (s, q), lst in lists.items() for d, r in lst]
        # stored out of order: a reading in table order (SQLite, every system asked for) must sort them
        order = np.random.default_rng(3).permutation(len(entries))
        bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank"],
                    [entries[i] for i in order], session=session)
    with session_scope(db.engine) as session:
        for systems in ([1, 2, 3, 4], [4, 3, 2, 1], [2], [4], [3, 1]):
            got = ranking_rows(systems, k, session=session)
            want = _reference(lists, systems, k)
            assert [tuple(r) for r in got.tolist()] == want, (systems, k)


def test_ranking_rows_of_full_lists_stored_out_of_order(db: Any) -> None:
    # Every list holds ranks 1..20, so no list needs rows past k: the first reading is all there is,
    # and it must come back in (system, query, rank) order however the rows lie in the table.
    n_queries, n_systems, k = 30, 3, 5
    rng = np.random.default_rng(11)
    lists = {(s, q): [(int(d), r + 1) for r, d in enumerate(rng.choice(np.arange(1, 101), 20, replace=False))]
             for s in range(1, n_systems + 1) for q in range(1, n_queries + 1)}
    entries = [(s, q, d, r) for (s, q), lst in lists.items() for d, r in lst]
    order = rng.permutation(len(entries))
    with session_scope(db.engine) as session:
        bulk_insert(m.Query, ["id", "external_id"], [(q, f"q{q}") for q in range(1, n_queries + 1)], session=session)
        bulk_insert(m.Document, ["id", "external_id"], [(d, f"d{d}") for d in range(1, 101)], session=session)
        bulk_insert(m.System, ["id", "name"], [(s, f"s{s}") for s in range(1, n_systems + 1)], session=session)
        bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank"],
                    [entries[i] for i in order], session=session)
    with session_scope(db.engine) as session:
        for systems in ([1, 2, 3], [3, 1, 2], [2, 3]):
            got = ranking_rows(systems, k, session=session)
            assert [tuple(r) for r in got.tolist()] == _reference(lists, systems, k), systems


def test_fetch_array_floats_with_and_without_null(db: Any) -> None:
    # Rows without NULL fill the array straight from the tuples; one NULL anywhere turns into NaN.
    with session_scope(db.engine) as session:
        bulk_insert(m.Query, ["id", "external_id"], [(1, "q1")], session=session)
        bulk_insert(m.Document, ["id", "external_id"], [(d, f"d{d}") for d in range(1, 4)], session=session)
        bulk_insert(m.System, ["id", "name"], [(1, "s1")], session=session)
        bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank", "score"],
                    [(1, 1, 1, 1, 2.5), (1, 1, 2, 2, None), (1, 1, 3, 3, -0.125)], session=session)
    with session_scope(db.engine) as session:
        sql = "SELECT rank, score FROM ranking_entries WHERE {} ORDER BY rank"
        full = fetch_array(sql.format("score IS NOT NULL"), 2, session=session)
        assert full.dtype == np.float64 and full.tolist() == [[1.0, 2.5], [3.0, -0.125]]
        holed = fetch_array(sql.format("1 = 1"), 2, session=session)
        assert holed[:, 0].tolist() == [1.0, 2.0, 3.0]
        assert holed[0, 1] == 2.5 and np.isnan(holed[1, 1]) and holed[2, 1] == -0.125
