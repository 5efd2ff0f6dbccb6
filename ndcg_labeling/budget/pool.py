"""The pool of a set of runs, as arrays: one row per (query, document) pair that some run ranks within the
pool depth, with each run's rank of it.

Runs come in as ``(systems, queries, depth)`` integer document codes (any non-negative integers, unique
within a query's list; ``-1`` pads a short list). A code means the same document in every run of one query;
codes of different queries are unrelated. The pool is every code some run ranks at rank <= ``depth``.
Pair indices ``0 .. pairs-1`` are ordered by query, then by best rank, then by code, so the order does not
depend on which run is listed first.

Grades travel as a float array over the pairs: a grade >= 0 where the pair is judged, NaN where it is not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Pool:
    """A depth-``depth`` pool.

    ``query`` (pairs,): the query index of each pair; ``code`` (pairs,): its document code;
    ``min_rank`` (pairs,): its best 1-based rank over the runs; ``run_pairs`` (systems, queries, width):
    the pair index at each rank of each run (``-1`` where the run has no document at that rank, or its
    document lies outside the pool depth); ``n_queries`` and ``depth`` as given.
    """

    query: IntArray
    code: IntArray
    min_rank: IntArray
    run_pairs: IntArray
    depth: int

    @property
    def n_pairs(self) -> int:
        return int(self.query.shape[0])

    @property
    def n_systems(self) -> int:
        return int(self.run_pairs.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.run_pairs.shape[1])

    def query_sizes(self) -> IntArray:
        """Pairs per query, shape (queries,)."""
        return np.bincount(self.query, minlength=self.n_queries).astype(np.int64)

    def system_ranks(self) -> IntArray:
        """(systems, pairs): the 1-based rank at which each run puts each pair, 0 when it does not."""
        ranks = np.zeros((self.n_systems, self.n_pairs), dtype=np.int64)
        s_idx, _, r_idx = np.nonzero(self.run_pairs >= 0)
        pairs = self.run_pairs[self.run_pairs >= 0]
        ranks[s_idx, pairs] = r_idx + 1
        return ranks


def build_pool(runs: npt.ArrayLike, depth: int) -> Pool:
    """Pool the runs to ``depth``.

    ``runs``: ``(systems, queries, width)`` integer document codes, ``-1`` padding; ``width`` may exceed
    ``depth`` (ranks below the depth are kept in ``run_pairs`` only where that document is pooled by
    another run). Raises ``ValueError`` for a wrong shape, a depth < 1, a code below -1, or a code repeated
    in one run's list.
    """
    arr = np.asarray(runs)
    if arr.ndim != 3 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"build_pool: runs must be a 3-D integer array (systems, queries, width), got "
                         f"shape {arr.shape} of {arr.dtype}")
    if depth < 1:
        raise ValueError(f"build_pool: depth must be >= 1, got {depth}")
    arr = arr.astype(np.int64)
    if (arr < -1).any():
        raise ValueError(f"build_pool: document codes must be >= 0 (-1 pads), got {int(arr.min())}")
    n_sys, n_q, width = arr.shape
    for s in range(n_sys):
        for q in range(n_q):
            row = arr[s, q][arr[s, q] >= 0]
            if np.unique(row).size != row.size:
                raise ValueError(f"build_pool: run {s} lists a document twice for query {q}")
    top = arr[:, :, :depth]
    q_idx = np.broadcast_to(np.arange(n_q)[None, :, None], top.shape)
    r_idx = np.broadcast_to(np.arange(1, top.shape[2] + 1)[None, None, :], top.shape)
    ok = top >= 0
    qs, codes, ranks = q_idx[ok], top[ok], r_idx[ok]
    # one row per (query, code): its best rank
    order = np.lexsort((ranks, codes, qs))
    qs, codes, ranks = qs[order], codes[order], ranks[order]
    first = np.ones(qs.size, dtype=bool)
    first[1:] = (qs[1:] != qs[:-1]) | (codes[1:] != codes[:-1])
    qs, codes, ranks = qs[first], codes[first], ranks[first]
    order = np.lexsort((codes, ranks, qs))
    query, code, min_rank = qs[order], codes[order], ranks[order]
    run_pairs = np.full(arr.shape, -1, dtype=np.int64)
    for q in range(n_q):
        sel = np.nonzero(query == q)[0]
        lookup = dict(zip(code[sel].tolist(), sel.tolist(), strict=True))
        for s in range(n_sys):
            for r in range(width):
                c = int(arr[s, q, r])
                if c >= 0 and c in lookup:
                    run_pairs[s, q, r] = lookup[c]
    return Pool(query=query.astype(np.int64), code=code.astype(np.int64), min_rank=min_rank.astype(np.int64),
                run_pairs=run_pairs, depth=depth)


def run_labels(pool: Pool, grades: npt.ArrayLike, k: int) -> FloatArray:
    """(systems, queries, k) grades of each run's top ``k`` (NaN where unjudged, outside the pool or empty)."""
    g = np.asarray(grades, dtype=np.float64)
    top = pool.run_pairs[:, :, :k]
    out = np.full(top.shape, np.nan)
    ok = top >= 0
    out[ok] = g[top[ok]]
    return out


def ideal_labels(pool: Pool, grades: npt.ArrayLike) -> FloatArray:
    """(queries, max pairs per query): every judged grade of each query, NaN padded (the ideal list)."""
    g = np.asarray(grades, dtype=np.float64)
    sizes = pool.query_sizes()
    out = np.full((pool.n_queries, max(int(sizes.max(initial=0)), 1)), np.nan)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    col = np.arange(pool.n_pairs) - starts[pool.query]
    out[pool.query, col] = g
    return out
