"""The two sorting kernels every metric is built on, compiled with numba when it loads.

* :func:`rank_top_k` - for each row, the column indices of the ``K`` best scores: score descending,
  equal scores in column order (a stable sort), NaN scores (padding) left out, ``-1`` past the end.
* :func:`top_k_values` - for each row, the ``K`` largest values in descending order (NaN left out,
  ``0`` past the end): the ideal ranking's labels.

Why numba: NDCG@10 over 50 documents needs the top 10 only. A per-row insertion into a 10-slot
buffer touches each score once and sorts 10 items, where ``np.argsort`` sorts all 50 and
``np.argpartition`` cannot keep equal scores in order. Rows are independent, so ``prange`` spreads
them over the cores. The compiled code is cached on disk (``cache=True``) so a CLI call does not
recompile; where no cache directory is writable it compiles in memory instead. Where numba cannot be
imported at all the same results come from a NumPy fallback (slower, same numbers).

numba is imported on first use, not when :mod:`ndcg_labeling.metrics` is imported.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
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

# Plain range in the Python bodies; numba.prange in the compiled ones.
_prange = range


def _import_numba() -> Any:
    """Import numba, working around coverage < 7 (pinned by irrCAC), which breaks numba >= 0.61 at import.

    numba's optional line-coverage hook subclasses ``coverage.types.Tracer``, which exists only in
    coverage 7. Hiding coverage while numba imports turns the hook off and changes nothing else.
    """
    if "numba" in sys.modules:
        return sys.modules["numba"]
    try:
        old_coverage = int(importlib.metadata.version("coverage").split(".")[0]) < 7
    except (importlib.metadata.PackageNotFoundError, ValueError):
        old_coverage = False
    if not old_coverage:
        import numba

        return numba
    saved = sys.modules.get("coverage")
    sys.modules["coverage"] = None  # type: ignore[assignment]  # makes `import coverage` raise ImportError
    try:
        import numba

        return numba
    finally:
        if saved is not None:
            sys.modules["coverage"] = saved
        else:
            del sys.modules["coverage"]


def _rank_top_k_py(scores: FloatArray, k: int, out: IntArray) -> None:  # pragma: no cover - compiled
    n, m = scores.shape
    for i in _prange(n):
        row = scores[i]
        dest = out[i]
        if k > _INSERTION_MAX_K:
            # Stable descending order: mergesort of the negated scores keeps equal scores in column order.
            cnt = 0
            for j in range(m):
                if row[j] == row[j]:
                    cnt += 1
            idx = np.empty(cnt, np.int64)
            neg = np.empty(cnt, np.float64)
            c = 0
            for j in range(m):
                if row[j] == row[j]:
                    idx[c] = j
                    neg[c] = -row[j]
                    c += 1
            order = np.argsort(neg, kind="mergesort")
            for p in range(min(cnt, k)):
                dest[p] = idx[order[p]]
            for p in range(min(cnt, k), k):
                dest[p] = -1
            continue
        cnt = 0
        thr = -np.inf  # score of the last buffered item once the buffer is full
        for j in range(m):
            s = row[j]
            if s != s:  # NaN: padding
                continue
            if cnt == k:
                # A later column with an equal score ranks lower: it enters only when strictly better.
                if not (s > thr):
                    continue
                pos = k - 1
            else:
                pos = cnt
                cnt += 1
            while pos > 0 and s > row[dest[pos - 1]]:
                dest[pos] = dest[pos - 1]
                pos -= 1
            dest[pos] = j
            if cnt == k:
                thr = row[dest[k - 1]]
        for p in range(cnt, k):
            dest[p] = -1


def _top_k_values_py(
    values: FloatArray, mask: FloatArray, use_mask: bool, k: int, out: FloatArray, bad: IntArray
) -> None:  # pragma: no cover - compiled
    n, m = values.shape
    for i in _prange(n):
        row = values[i]
        dest = out[i]
        cnt = 0
        thr = 0.0  # smallest buffered value once the buffer is full
        for j in range(m):
            v = row[j]
            if v != v:  # NaN: not judged / padding
                continue
            if use_mask and mask[i, j] != mask[i, j]:  # the score is NaN: this position is padding
                continue
            if v < 0.0 or v == np.inf:
                if bad[i] < 0:
                    bad[i] = j
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
        for p in range(cnt, k):
            dest[p] = 0.0


def _rank_and_ideal_py(
    scores: FloatArray,
    labels: FloatArray,
    ideal_src: FloatArray,
    own_ideal: bool,
    k: int,
    ki: int,
    ranked: FloatArray,
    present: npt.NDArray[np.bool_],
    ideal: FloatArray,
    bad: IntArray,
    scratch: IntArray,
) -> None:  # pragma: no cover - compiled
    """One pass per row for the common case (top k <= _INSERTION_MAX_K): the labels of the k best
    scores in rank order (NaN past the end), and the ki largest ideal labels (own labels of present
    documents when ``own_ideal``, else ``ideal_src``). Same rules as the two kernels above."""
    n, m = scores.shape
    for i in _prange(n):
        row = scores[i]
        idx = scratch[i]
        cnt = 0
        thr = -np.inf
        for j in range(m):
            s = row[j]
            if s != s:
                continue
            if cnt == k:
                if not (s > thr):
                    continue
                pos = k - 1
            else:
                pos = cnt
                cnt += 1
            while pos > 0 and s > row[idx[pos - 1]]:
                idx[pos] = idx[pos - 1]
                pos -= 1
            idx[pos] = j
            if cnt == k:
                thr = row[idx[k - 1]]
        for p in range(k):
            if p < cnt:
                ranked[i, p] = labels[i, idx[p]]
                present[i, p] = True
            else:
                ranked[i, p] = np.nan
                present[i, p] = False
        src = labels[i] if own_ideal else ideal_src[i]
        dest = ideal[i]
        cnt = 0
        vthr = 0.0
        for j in range(src.shape[0]):
            v = src[j]
            if v != v:
                continue
            if own_ideal and row[j] != row[j]:
                continue
            if v < 0.0 or v == np.inf:
                if bad[i] < 0:
                    bad[i] = j
                continue
            if cnt == ki:
                if not (v > vthr):
                    continue
                pos = ki - 1
            else:
                pos = cnt
                cnt += 1
            while pos > 0 and v > dest[pos - 1]:
                dest[pos] = dest[pos - 1]
                pos -= 1
            dest[pos] = v
            if cnt == ki:
                vthr = dest[ki - 1]
        for p in range(cnt, ki):
            dest[p] = 0.0


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


def _compile() -> dict[str, Callable[..., Any]] | None:
    global _compiled, _numba_failed
    if _compiled is not None or _numba_failed:
        return _compiled
    with _lock:
        if _compiled is not None or _numba_failed:
            return _compiled
        try:
            numba = _import_numba()
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
                return numba.njit(parallel=parallel, cache=True, nogil=True)(compiled_fn)  # type: ignore[no-any-return]
            except RuntimeError:  # no writable cache directory: compile in memory
                return numba.njit(parallel=parallel, cache=False, nogil=True)(compiled_fn)  # type: ignore[no-any-return]

        _compiled = {
            "rank": jit(_rank_top_k_py, True),
            "values": jit(_top_k_values_py, True),
            "rank_serial": jit(_rank_top_k_py, False),
            "values_serial": jit(_top_k_values_py, False),
            "fused": jit(_rank_and_ideal_py, True),
            "fused_serial": jit(_rank_and_ideal_py, False),
            "gain_sum": jit(_gain_sum_py, True),
            "gain_sum_serial": jit(_gain_sum_py, False),
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


def rank_and_ideal(
    scores: FloatArray, labels: FloatArray, ideal_src: FloatArray | None, k: int, ki: int
) -> tuple[FloatArray, npt.NDArray[np.bool_], FloatArray, IntArray] | None:
    """Fused :func:`rank_top_k` + label gather + :func:`top_k_values` (None: use the separate steps).

    Returns ranked labels ``(n, k)`` (NaN past the end), presence ``(n, k)``, ideal ``(n, ki)`` and
    the bad-label column per row, or None when numba is missing or ``k`` is large (full sorts).
    """
    kernels = _compile()
    n = scores.shape[0]
    if kernels is None or n == 0 or k > _INSERTION_MAX_K or ki > _INSERTION_MAX_K:
        return None
    ranked = np.empty((n, k), dtype=np.float64)
    present = np.empty((n, k), dtype=np.bool_)
    ideal = np.empty((n, ki), dtype=np.float64)
    bad = np.full(n, -1, dtype=np.int64)
    name = "fused" if _parallel(scores.size) else "fused_serial"
    own = ideal_src is None
    scratch = np.empty((n, k), dtype=np.int64)
    kernels[name](
        scores, labels, labels if ideal_src is None else ideal_src, own, k, ki, ranked, present, ideal, bad, scratch
    )
    return ranked, present, ideal, bad


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
