"""Assignment of grading items to graders, and each grader's own order: a pure kernel (numpy only).

* :func:`balanced_assignment`: each item to ``overlap`` distinct graders, greedily to the
  least-loaded ones with random tie-breaks, so the busiest and the idlest grader differ by at most
  one item;
* :func:`grader_orders`: every grader's position of each of their items, queries in random order
  and documents within a query in random order, independently per grader (position-blind grading:
  the order carries nothing of a system's ranking).

Both draw from the ``numpy.random.Generator`` they are given, in a fixed sequence, so a seeded
generator reproduces the assignment and the orders.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: above this many (item, grader) tie-break draws, they are drawn one item at a time (memory)
_TIE_TABLE_LIMIT = 20_000_000


def balanced_assignment(n_items: int, n_graders: int, overlap: int,
                        rng: np.random.Generator) -> NDArray[np.int64]:
    """``(n_items, overlap)`` grader indices: each item to the ``overlap`` least-loaded graders,
    ties broken at random. Loads never differ by more than one item.

    Raises ``ValueError`` when ``overlap`` is not between 1 and ``n_graders`` or ``n_items < 0``.
    """
    if n_items < 0:
        raise ValueError(f"balanced_assignment: n_items must be >= 0, got {n_items}")
    if not 1 <= overlap <= n_graders:
        raise ValueError(f"balanced_assignment: overlap must be between 1 and n_graders ({n_graders}), got {overlap}")
    loads = np.zeros(n_graders, dtype=np.int64)
    out = np.empty((n_items, overlap), dtype=np.int64)
    ties = rng.random((n_items, n_graders)) if n_items * n_graders <= _TIE_TABLE_LIMIT else None
    for i in range(n_items):
        tie = ties[i] if ties is not None else rng.random(n_graders)
        chosen = np.lexsort((tie, loads))[:overlap]
        out[i] = chosen
        loads[chosen] += 1
    return out


def grader_orders(item_query: NDArray[np.int64], chosen: NDArray[np.int64],
                  rng: np.random.Generator) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Each grader's order of their items.

    ``item_query[i]`` is the query of item ``i``; ``chosen`` is :func:`balanced_assignment`'s
    ``(n_items, overlap)`` table. Every (grader, query) gets a random key, then every (grader, item)
    a random key; a grader's items are sorted by (query key, item key), so a grader sees the
    documents of one query together, queries in random order, documents in random order.

    Returns ``(item, grader, position)``, one entry per assignment, sorted by grader then position
    (``position`` counts from 0 per grader).
    """
    n_items, overlap = chosen.shape
    if item_query.shape != (n_items,):
        raise ValueError(f"grader_orders: item_query must have shape ({n_items},), got {item_query.shape}")
    item = np.repeat(np.arange(n_items, dtype=np.int64), overlap)
    grader = chosen.ravel().astype(np.int64)
    query = item_query[item]
    # one key per distinct (grader, query), drawn in (grader, query) order
    pairs, pair_of = np.unique(np.column_stack([grader, query]), axis=0, return_inverse=True)
    qkey = rng.random(len(pairs))[pair_of.ravel()]
    # one key per assignment, drawn in (grader, item) order
    by_grader_item = np.lexsort((item, grader))
    dkey = np.empty(len(item))
    dkey[by_grader_item] = rng.random(len(item))
    # stable sort by (grader, query key, item key), ties kept in (grader, item) order
    g, q, d = grader[by_grader_item], qkey[by_grader_item], dkey[by_grader_item]
    order = by_grader_item[np.lexsort((d, q, g))]
    grader_sorted = grader[order]
    starts = np.r_[0, np.flatnonzero(np.diff(grader_sorted)) + 1]
    position = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return item[order], grader_sorted, position.astype(np.int64)
