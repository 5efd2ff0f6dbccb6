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
from ndcg_labeling.db.reads import ranking_rows
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
        bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank"],
                    [(s, q, d, r) for (s, q), lst in lists.items() for d, r in lst], session=session)
    with session_scope(db.engine) as session:
        for systems in ([1, 2, 3, 4], [2], [4], [3, 1]):
            got = ranking_rows(systems, k, session=session)
            want = _reference(lists, systems, k)
            assert [tuple(r) for r in got.tolist()] == want, (systems, k)
