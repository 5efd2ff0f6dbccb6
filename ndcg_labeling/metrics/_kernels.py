"""NDCG at integer cut-offs as one plain numba loop (ranx style): the compiled twin of the NumPy
reference in :mod:`ndcg_labeling.metrics._core`.

Per row, one pass keeps the ``k`` best scores in a small buffer by insertion (score descending, equal
scores in column order, NaN scores - padding - left out), a second keeps the ``k_ideal`` largest
judged labels; DCG and ideal DCG are then summed rank by rank. Nothing but loops over arrays: no
intrinsics, no LLVM IR. The body is compiled twice by :func:`ndcg_labeling._jit.compile_kernel`, a
parallel build (rows in ``numba.prange``) and a serial one, cached on disk; which one a call takes
(or NumPy) is the :class:`~ndcg_labeling.backend.Plan` of :func:`ndcg_labeling.backend.plan`. numba
is imported on first use, not when :mod:`ndcg_labeling.metrics` is imported.

Why it stays (issue 32's rule, ``benchmarks/bench_metrics.py --ratio``): NDCG@10 over 100k x 50 takes
a fraction of straightforward NumPy's time (figures in the commit that made it and in
benchmarks/RESULTS.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling import _jit, backend
from ndcg_labeling.backend import Plan
from ndcg_labeling.metrics import dcg as _dcg

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Integer labels below this are counted per row (and their gains looked up) instead of inserted.
LEVELS = 32

# Above this many positions the insertion buffer does more work than a sort: NumPy serves.
MAX_K = 64

_prange = range  # numba.prange in the parallel build
_lock = threading.Lock()
_compiled: dict[str, Callable[..., Any]] | None = None


def _gain(g: float, table: FloatArray, exponential: bool) -> float:  # pragma: no cover - compiled
    """``2**g - 1`` (``table`` holds it for the small integer labels) or ``g``."""
    if not exponential:
        return g
    h = int(g)
    return float(table[h]) if h == g and h < table.shape[0] else 2.0 ** g - 1.0


def _top_columns(row: FloatArray, k: int, lanes: FloatArray, cand_s: FloatArray, cand_j: IntArray,
                 ranks: IntArray, top_j: IntArray) -> int:  # pragma: no cover - compiled
    """The columns of the ``k`` best scores of ``row`` into ``top_j`` (stable, NaN left out); how many.

    A lower bound of the ``k``-th best score first (``k <= 16``): the ``k``-th largest of the maxima of
    16 column lanes (column ``j`` in lane ``j % 16``), since ``k`` lanes hold a score at or above it.
    The scores at or above it (about 13 of 50 random ones for k = 10) are kept without a branch and
    ranked by counting. The loops are plain; LLVM vectorises the lane maxima and the counts."""
    m = row.shape[0]
    thr = -np.inf
    if k <= 16 and m >= 32:
        lanes[:] = -np.inf
        for b in range(0, m - 15, 16):
            for t in range(16):
                x = row[b + t]
                lanes[t] = x if x > lanes[t] else lanes[t]  # NaN never wins
        for j in range(m - m % 16, m):
            x = row[j]
            lanes[j % 16] = x if x > lanes[j % 16] else lanes[j % 16]
        thr = np.inf
        for t in range(16):
            x = lanes[t]
            above = 0  # lane maxima higher than this one
            for u in range(16):
                above += lanes[u] > x
            thr = min(thr, x) if above < k else thr
    c = 0
    for j in range(m):
        cand_s[c] = row[j]
        cand_j[c] = j
        c += row[j] >= thr  # NaN never passes
    if c <= 4 * k + 16:
        # Each candidate's rank is the number of higher scores; without equal scores those are
        # 0..c-1 (summing to c (c - 1) / 2); equal scores make the sum smaller: then the insertion.
        width = (c + 15) // 16 * 16  # whole vector steps: -inf after the candidates never counts
        cand_s[c:width] = -np.inf
        ranks[:width] = 0
        for b in range(c):  # ranks[a] += 1 for each higher score: vector adds, no sum per candidate
            x = cand_s[b]
            for a in range(width):
                ranks[a] += x > cand_s[a]
        total = 0
        for a in range(c):
            r = ranks[a]
            total += r
            if r < k:
                top_j[r] = cand_j[a]
        if total == c * (c - 1) // 2:
            return min(c, k)
    n = 0  # a stable insertion: many candidates, or equal scores among them
    for a in range(c):  # the buffer is the first n (<= a) places of the candidates
        x, col = cand_s[a], cand_j[a]
        if n == k and not x > cand_s[k - 1]:
            continue
        p = min(n, k - 1)
        n = min(n + 1, k)
        while p > 0 and cand_s[p - 1] < x:
            cand_s[p], cand_j[p] = cand_s[p - 1], cand_j[p - 1]
            p -= 1
        cand_s[p], cand_j[p] = x, col
    top_j[:n] = cand_j[:n]
    return n


def _top_labels(vals: FloatArray, mask: FloatArray, own: bool, top_v: FloatArray) -> int:  # pragma: no cover - compiled
    """The largest judged labels of ``vals`` into ``top_v`` (descending, 0 after); the first negative or
    infinite one's column (-1: none). ``own``: only where ``mask`` (the scores) is not NaN.

    Integer labels below :data:`LEVELS` (the usual case) are counted level by level from the highest
    down, one branch-free pass each; other labels are inserted."""
    k, m = top_v.shape[0], vals.shape[0]
    top_v[:] = 0.0
    odd, hi = 0, 0
    for j in range(m):  # integer selects and sums only, so LLVM vectorises it (float max/min it does not)
        v = vals[j]
        used = (v == v) & ((mask[j] == mask[j]) | (not own))
        level = int(v) if (v >= 0) & (v < LEVELS) else -1
        odd += used & ((level < 0) | (level != v))  # negative, infinite, fractional or >= LEVELS
        hi = max(hi, level if used else 0)
    if odd:
        return _insert_labels(vals, mask, own, top_v)
    p, h = 0, hi
    while h >= 1 and p < k:
        count = 0
        for j in range(m):
            count += (vals[j] == h) & ((mask[j] == mask[j]) | (not own))
        for _ in range(min(count, k - p)):
            top_v[p] = h
            p += 1
        h -= 1
    return -1


def _insert_labels(vals: FloatArray, mask: FloatArray, own: bool, top_v: FloatArray) -> int:  # pragma: no cover - compiled
    """:func:`_top_labels` for any labels, by insertion."""
    k = top_v.shape[0]
    bad = -1
    for j in range(vals.shape[0]):
        v = vals[j]
        if v != v or (own and mask[j] != mask[j]):
            continue
        if v < 0 or v == np.inf:
            bad = j if bad < 0 else bad
        elif v > top_v[k - 1]:
            p = k - 1
            while p > 0 and top_v[p - 1] < v:
                top_v[p] = top_v[p - 1]
                p -= 1
            top_v[p] = v
    return bad


def _ndcg_rows_py(scores: FloatArray, labels: FloatArray, ideal: FloatArray, own: bool, cuts: IntArray,
                  k: int, k_ideal: int, exponential: bool, table: FloatArray, log2_ranks: FloatArray,
                  empty_value: float, out: FloatArray, bad: IntArray) -> None:  # pragma: no cover - compiled
    """``out[i, c]``: NDCG of row ``i`` at ``cuts[c]``; ``bad[i]``: the first column of row ``i``
    whose ideal label is negative or infinite (-1: none). ``own``: the ideal comes from the row's
    labels where a score is present (``ideal`` is then ``labels``)."""
    n, m = scores.shape
    chunk = max(1, -(-n // 256))
    for part in _prange(-(-n // chunk)):  # scratch allocated once per chunk of rows
        first = part * chunk
        cand_s = np.empty(m + 16)
        cand_j = np.empty(m, dtype=np.int64)
        ranks = np.empty(m + 16, dtype=np.int64)
        top_j = np.empty(k, dtype=np.int64)
        top_v = np.empty(k_ideal)
        lanes = np.empty(16)
        for i in range(first, min(first + chunk, n)):
            count = _top_columns(scores[i], k, lanes, cand_s, cand_j, ranks, top_j)
            # the scores mask the row's own labels; a separate ideal list may be wider than the scores,
            # so it is its own (unused) mask: _top_labels reads mask[j] for every column of vals
            bad[i] = _top_labels(ideal[i], scores[i] if own else ideal[i], own, top_v)
            for c in range(cuts.shape[0]):
                dcg = 0.0
                for p in range(min(cuts[c], count)):
                    g = labels[i, top_j[p]]
                    if g == g:
                        dcg += _gain(g, table, exponential) / log2_ranks[p]
                idcg = 0.0
                for p in range(min(cuts[c], k_ideal)):
                    idcg += _gain(top_v[p], table, exponential) / log2_ranks[p]
                out[i, c] = dcg / idcg if idcg > 0 else empty_value


def _compile() -> dict[str, Callable[..., Any]] | None:
    """Both builds (``ndcg``, ``ndcg_serial``), compiled or loaded from the disk cache; None without numba."""
    global _compiled
    with _lock:
        if _compiled is None:
            numba = _jit.load_numba()
            if numba is None:
                return None
            helpers: dict[str, Any] = {}
            for name, fn in (("_gain", _gain), ("_top_columns", _top_columns), ("_insert_labels", _insert_labels),
                             ("_top_labels", _top_labels)):
                helpers[name] = _jit.compile_kernel(fn, helpers, name, inline="always", error_model="numpy")
            _compiled = {f"ndcg{suffix}": _jit.compile_kernel(
                _ndcg_rows_py, {**helpers, "_prange": numba.prange if parallel else range},
                f"_ndcg_rows_{'parallel' if parallel else 'serial'}", parallel=parallel, error_model="numpy")
                for parallel, suffix in ((True, ""), (False, "_serial"))}
    return _compiled


def numba_available() -> bool:
    """Whether the compiled kernel can be used; loads it (False: NumPy computes the same numbers).
    Which calls use it is the backend policy's decision, not this."""
    return _jit.load_numba() is not None and _compile() is not None


def warm_up_kernels() -> bool:
    """Load both builds now (a tiny call each) so the first large call does not wait for numba;
    whether they are there. Follows the policy: nothing under ``numpy``."""
    if backend.load_numba_for() is None:
        return False
    ok = ndcg(np.array([[0.5, 1.0, np.nan]]), np.array([[1.0, 0.0, 2.0]]), None, np.array([2]), 2, 2, True, 0.0,
              Plan(True, True)) is not None
    return ok and ndcg(np.ones((1, 2)), np.ones((1, 2)), None, np.array([1]), 1, 1, True, 0.0,
                       Plan(True, False)) is not None


def ndcg(scores: FloatArray, labels: FloatArray, ideal: FloatArray | None, cuts: IntArray, k: int, k_ideal: int,
         exponential: bool, empty_value: float, plan: Plan) -> tuple[FloatArray, IntArray] | None:
    """NDCG at each of ``cuts`` (``(n, len(cuts))``) and, per row, the first bad column of the ideal's
    source (``-1``: none); None where the plan is NumPy or numba cannot be loaded.

    ``k`` ranked and ``k_ideal`` ideal positions (each at most :data:`MAX_K`); ``ideal`` None means
    the ideal comes from the row's own labels.
    """
    kernels = _compile() if plan.numba else None
    if kernels is None:
        return None
    n = scores.shape[0]
    out = np.empty((n, len(cuts)), dtype=np.float64)
    bad = np.empty(n, dtype=np.int64)
    table = _dcg.exp_gain(np.arange(LEVELS, dtype=np.float64))
    kernels["ndcg" if plan.parallel else "ndcg_serial"](
        scores, labels, labels if ideal is None else ideal, ideal is None, np.ascontiguousarray(cuts, dtype=np.int64),
        k, k_ideal, exponential, table, _dcg.log2_ranks(max(k, k_ideal)), empty_value, out, bad)
    return out, bad
