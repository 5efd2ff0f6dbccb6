"""The two sorting kernels every metric is built on, compiled with numba when it loads.

* :func:`rank_top_k` - for each row, the column indices of the ``K`` best scores: score descending,
  equal scores in column order (a stable sort), NaN scores (padding) left out, ``-1`` past the end.
* :func:`top_k_values` - for each row, the ``K`` largest values in descending order (NaN left out,
  ``0`` past the end): the ideal ranking's labels.

Why numba: NDCG@10 over 50 documents needs the top 10 only, in a stable order. Per row, the
smallest of the maxima of ``k`` column groups is a lower bound of the k-th best score; one
branch-free pass keeps the columns at or above it (about a dozen of 50 for random scores) and a
stable insertion orders only those. ``np.argpartition`` cannot keep equal scores in order, and a
full sort does more work than needed. Labels are usually small integers: the ideal top ``k`` is read
off a per-row histogram (one predictable pass); other labels use an insertion. Rows are
independent, so large batches run in parallel (``prange``) while the machine has idle cores (see
:func:`_parallel`). The compiled code is cached on disk (``cache=True``) so a CLI call does not
recompile; where no cache directory is writable it compiles in memory instead. Where numba cannot be
imported at all the same results come from a NumPy fallback (slower, same numbers).

numba is imported on first use, not when :mod:`ndcg_labeling.metrics` is imported.
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_lock = threading.Lock()
_compiled: dict[str, Callable[..., Any]] | None = None
_numba_failed = False

# Above this many requested positions the insertion buffer loses to a full stable sort of the row.
_INSERTION_MAX_K = 64

# Below this many array elements a parallel region costs more than it saves (thread wake-up, and a
# busy sibling core makes the barrier wait): the serial build runs instead.
_PARALLEL_MIN_SIZE = 200_000

# Integer labels below this are counted (a histogram per row) instead of sorted.
_HIST_LEVELS = 32

# Plain range in the Python bodies; numba.prange in the compiled ones.
_prange = range


def _rank_top_k_py(scores: FloatArray, k: int, out: IntArray) -> None:  # pragma: no cover - compiled
    n, m = scores.shape
    n_chunks = min(n, 256)
    for c in _prange(n_chunks):
        cand = np.empty(m + 1, np.int64)
        for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            row = scores[i]
            dest = out[i]
            if k > _INSERTION_MAX_K:
                # Stable descending order: mergesort of the negated scores keeps equal scores in order.
                cnt = 0
                for j in range(m):
                    if row[j] == row[j]:
                        cand[cnt] = j
                        cnt += 1
                neg = np.empty(cnt, np.float64)
                for p in range(cnt):
                    neg[p] = -row[cand[p]]
                order = np.argsort(neg, kind="mergesort")
                for p in range(min(cnt, k)):
                    dest[p] = cand[order[p]]
                for p in range(min(cnt, k), k):
                    dest[p] = -1
                continue
            # A lower bound of the k-th best score: split the row into k groups; the smallest group
            # maximum has k scores at or above it. Only scores >= it can make the top k.
            thr = -np.inf
            if m >= 2 * k:
                g = m // k
                thr = np.inf
                for q in range(k):
                    gmax = -np.inf
                    for j in range(q * g, q * g + g):
                        v = row[j]
                        gmax = v if v > gmax else gmax  # NaN never wins
                    thr = gmax if gmax < thr else thr
            # Branch-free compaction of the candidates, in column order.
            cnt = 0
            for j in range(m):
                cand[cnt] = j
                cnt += 1 if row[j] >= thr else 0  # NaN compares False
            # Stable insertion of the candidates into the top k (later columns enter only when better).
            filled = 0
            for p in range(cnt):
                j = cand[p]
                s = row[j]
                if filled == k:
                    if not (s > row[dest[k - 1]]):
                        continue
                    pos = k - 1
                else:
                    pos = filled
                    filled += 1
                while pos > 0 and s > row[dest[pos - 1]]:
                    dest[pos] = dest[pos - 1]
                    pos -= 1
                dest[pos] = j
            for p in range(filled, k):
                dest[p] = -1


def _top_k_values_py(
    values: FloatArray, mask: FloatArray, use_mask: bool, k: int, out: FloatArray, bad: IntArray
) -> None:  # pragma: no cover - compiled
    n, m = values.shape
    n_chunks = min(n, 256)
    for c in _prange(n_chunks):
        hist = np.zeros(_HIST_LEVELS, np.int64)
        for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            row = values[i]
            dest = out[i]
            # Labels are usually small integers (grades): count them, one predictable pass.
            for h in range(_HIST_LEVELS):
                hist[h] = 0
            integral = True
            for j in range(m):
                v = row[j]
                if v != v or (use_mask and mask[i, j] != mask[i, j]):  # unjudged, or padding
                    continue
                if v < 0.0 or v == np.inf:
                    if bad[i] < 0:
                        bad[i] = j
                    continue
                if v < _HIST_LEVELS and v == np.floor(v):
                    hist[int(v)] += 1
                else:
                    integral = False
            if integral:
                p = 0
                for h in range(_HIST_LEVELS - 1, -1, -1):
                    take = min(hist[h], k - p)
                    for _ in range(take):
                        dest[p] = h
                        p += 1
                    if p == k:
                        break
                for q in range(p, k):
                    dest[q] = 0.0
                continue
            # Fractional (or large) labels: insertion into the top k.
            cnt = 0
            thr = 0.0
            for j in range(m):
                v = row[j]
                if v != v or (use_mask and mask[i, j] != mask[i, j]) or v < 0.0 or v == np.inf:
                    continue
                if cnt == k:
                    if not (v > thr):
                        continue
                    pos = k - 1
                else:
                    pos = cnt
                    cnt += 1
                while pos > 0 and v > dest[pos - 1]:
                    dest[pos] = dest[pos - 1]
                    pos -= 1
                dest[pos] = v
                if cnt == k:
                    thr = dest[k - 1]
            for q in range(cnt, k):
                dest[q] = 0.0


def _gain_sum_py(
    values: FloatArray, discount: FloatArray, k: int, exponential: bool, out: FloatArray
) -> None:  # pragma: no cover - compiled
    """``out[i] = sum_{p<k} gain(values[i, p]) * discount[p]``, NaN counting as gain 0: DCG in one pass."""
    n = values.shape[0]
    for i in _prange(n):
        total = 0.0
        for p in range(k):
            v = values[i, p]
            if v == v:
                total += ((2.0**v) - 1.0 if exponential else v) * discount[p]
        out[i] = total


def _gather_py(labels: FloatArray, order: IntArray, out: FloatArray) -> None:  # pragma: no cover - compiled
    """``out[i, p] = labels[i, order[i, p]]``, NaN where ``order`` is -1 (no document at that rank)."""
    n, k = order.shape
    for i in _prange(n):
        for p in range(k):
            j = order[i, p]
            out[i, p] = labels[i, j] if j >= 0 else np.nan


def _compile() -> dict[str, Callable[..., Any]] | None:
    global _compiled, _numba_failed
    if _compiled is not None or _numba_failed:
        return _compiled
    with _lock:
        if _compiled is not None or _numba_failed:
            return _compiled
        try:
            import numba
        except Exception:  # noqa: BLE001 - any import failure means: use the NumPy fallback
            _numba_failed = True
            return None
        def jit(fn: Callable[..., Any], parallel: bool) -> Callable[..., Any]:
            # The same body with _prange bound to numba.prange, so rows run in parallel.
            glb = dict(fn.__globals__)
            glb["_prange"] = numba.prange if parallel else range
            compiled_fn = types.FunctionType(fn.__code__, glb, fn.__name__)
            # Distinct names give the two builds distinct on-disk cache entries.
            compiled_fn.__qualname__ = f"{fn.__name__}_{'parallel' if parallel else 'serial'}"
            try:
                return numba.njit(parallel=parallel, cache=True, nogil=True)(compiled_fn)
            except RuntimeError:  # no writable cache directory: compile in memory
                return numba.njit(parallel=parallel, cache=False, nogil=True)(compiled_fn)

        _compiled = {
            "rank": jit(_rank_top_k_py, True),
            "values": jit(_top_k_values_py, True),
            "rank_serial": jit(_rank_top_k_py, False),
            "values_serial": jit(_top_k_values_py, False),
            "gain_sum": jit(_gain_sum_py, True),
            "gain_sum_serial": jit(_gain_sum_py, False),
            "gather": jit(_gather_py, True),
            "gather_serial": jit(_gather_py, False),
        }
        return _compiled


def _parallel(size: int) -> bool:
    """Use the parallel build? Only for large arrays, and only while the machine has idle cores.

    A parallel region ends at a barrier: when another process keeps a core busy, the thread on it is
    descheduled and the whole call waits (measured on a loaded 2-core machine: the parallel build
    2-3x slower than the serial one). Like OpenMP's OMP_DYNAMIC, look at the load average first.
    """
    if size < _PARALLEL_MIN_SIZE:
        return False
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform
        return True
    return load < (os.cpu_count() or 1) - 0.5


def numba_available() -> bool:
    """Whether the compiled kernels are in use (False: the NumPy fallback computes the same numbers)."""
    return _compile() is not None


def gain_sum(values: FloatArray, discount: FloatArray, k: int, exponential: bool) -> FloatArray | None:
    """DCG of the first ``k`` columns of a C-contiguous float64 array in one pass (None without numba)."""
    kernels = _compile()
    if kernels is None or values.dtype != np.float64 or not values.flags.c_contiguous:
        return None
    out = np.empty(values.shape[0], dtype=np.float64)
    name = "gain_sum" if _parallel(values.size) else "gain_sum_serial"
    kernels[name](values, discount, k, exponential, out)
    return out


def rank_top_k(scores: FloatArray, k: int) -> IntArray:
    """Column indices of the ``k`` best scores per row (stable, NaN left out, ``-1`` past the end)."""
    n, m = scores.shape
    out = np.empty((n, k), dtype=np.int64)
    kernels = _compile()
    if kernels is not None and n > 0:
        kernels["rank" if _parallel(scores.size) else "rank_serial"](scores, k, out)
        return out
    return _rank_top_k_numpy(scores, k)


def gather_ranked(labels: FloatArray, order: IntArray) -> FloatArray:
    """The labels in rank order: ``labels[i, order[i, p]]``, NaN where ``order`` is -1 (one pass)."""
    out = np.empty(order.shape, dtype=np.float64)
    kernels = _compile()
    if (kernels is not None and order.shape[0] > 0 and labels.dtype == np.float64
            and labels.flags.c_contiguous and order.flags.c_contiguous):
        kernels["gather" if _parallel(order.size * 8) else "gather_serial"](labels, order, out)
        return out
    present = order >= 0
    ranked = np.take_along_axis(labels, np.where(present, order, 0), axis=1).astype(np.float64)
    return np.where(present, ranked, np.nan)


def top_k_values(values: FloatArray, k: int, mask: FloatArray | None = None) -> tuple[FloatArray, IntArray]:
    """The ``k`` largest non-NaN values per row, descending, ``0`` past the end.

    With ``mask`` (same shape), positions where ``mask`` is NaN (padding of the scores) are left out.

    Also returns, per row, the column of a negative or infinite value (``-1`` when there is none), so
    the caller can report bad labels without a second pass.
    """
    n, m = values.shape
    out = np.empty((n, k), dtype=np.float64)
    bad = np.full(n, -1, dtype=np.int64)
    kernels = _compile()
    if kernels is not None and n > 0:
        use_mask = mask is not None
        name = "values" if _parallel(values.size) else "values_serial"
        kernels[name](values, mask if mask is not None else values, use_mask, k, out, bad)
        return out, bad
    if mask is not None:
        values = np.where(np.isnan(mask), np.nan, values)
    return _top_k_values_numpy(values, k)


def _rank_top_k_numpy(scores: FloatArray, k: int) -> IntArray:
    n, m = scores.shape
    valid = ~np.isnan(scores)
    key = np.where(valid, -scores, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    # A real score of -inf and padding share the key +inf: a second stable pass puts padding last.
    order = np.take_along_axis(order, np.argsort(~np.take_along_axis(valid, order, 1), axis=1, kind="stable"), 1)
    present = np.take_along_axis(valid, order, 1)
    order = np.where(present, order, -1)
    if k <= m:
        return np.ascontiguousarray(order[:, :k], dtype=np.int64)
    out = np.full((n, k), -1, dtype=np.int64)
    out[:, :m] = order
    return out


def _top_k_values_numpy(values: FloatArray, k: int) -> tuple[FloatArray, IntArray]:
    n, m = values.shape
    with np.errstate(invalid="ignore"):
        bad_mask = (values < 0) | np.isinf(values)
    bad = np.where(bad_mask.any(axis=1), bad_mask.argmax(axis=1), -1).astype(np.int64)
    clean = np.where(np.isnan(values) | bad_mask, 0.0, values)
    srt = -np.sort(-clean, axis=1)
    out = np.zeros((n, k), dtype=np.float64)
    w = min(k, m)
    out[:, :w] = srt[:, :w]
    return out, bad
