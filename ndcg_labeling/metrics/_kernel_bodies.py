"""The bodies of the compiled kernels (plain Python over arrays; numba compiles them, see
:mod:`ndcg_labeling.metrics._kernels` for how they are built, chosen and called).

* :func:`_rank_top_k_py` - for each row, the column indices of the ``K`` best scores: score
  descending, equal scores in column order (a stable sort), NaN scores (padding) left out, ``-1``
  past the end.
* :func:`_top_k_values_py` - for each row, the ``K`` largest values in descending order (NaN left
  out, ``0`` past the end): the ideal ranking's labels.
* the fused NDCG kernels (ranking, DCG and ideal DCG in one pass per row) are in
  :mod:`ndcg_labeling.metrics._fused_bodies`; their ranking steps are here: a tighter threshold
  for ``k <= 16`` (:func:`_lane_threshold_py`), the candidates as bit masks
  (:func:`_candidates_py`) and ranks counted over a fixed width (:func:`_count_ranks_py`).

Why these algorithms: NDCG@10 over 50 documents needs the top 10 only, in a stable order. Per row,
the smallest of the second-largest scores of ``ceil(k / 2)`` column groups is a lower bound of the
k-th best score (:func:`_threshold_py`); one branch-free pass keeps the columns at or above it (about
16 of 50 for random scores) and a stable insertion orders only those. ``np.argpartition`` cannot keep
equal scores in order, and a full sort does more work than needed. Labels are usually small
integers: the ideal top ``k`` is read off a per-row histogram (one predictable pass); other labels
use an insertion. Rows are independent: the
row loops are ``_prange`` loops, ``range`` here and in the serial build, ``numba.prange`` in the
parallel one.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Above this many requested positions the insertion buffer loses to a full stable sort of the row.
_INSERTION_MAX_K = 64

# Integer labels below this are counted (a histogram per row) instead of sorted.
_HIST_LEVELS = 32

# Rows are cut into at most this many chunks (the parallel build's units of work; each allocates
# its scratch once).
_CHUNKS = 256

# Plain range in the Python bodies; numba.prange in the compiled ones.
_prange = range


def _threshold_py(row: FloatArray, k: int) -> float:  # pragma: no cover - compiled
    """A lower bound of the ``k``-th best score of ``row``: at least ``k`` scores are >= it.

    Split the row into ``ceil(k / 2)`` groups and keep the second largest score of each: every group
    has two scores at or above its second largest, so the smallest of them bounds the ``k``-th best
    from below. For 50 random scores and k = 10 about 16 pass (about 22 with the group maxima of
    ``k`` groups). NaN scores never count. ``-inf`` (keep every score) when the row is too short.
    """
    m = row.shape[0]
    half = k - k // 2
    if k >= 2 and m >= 4 * half:
        g = m // half
        thr = np.inf
        for q in range(half):
            m1 = -np.inf
            m2 = -np.inf
            for j in range(q * g, q * g + g):
                v = row[j]
                lo = m1 if v > m1 else v  # the smaller of the two; NaN stays NaN and never wins
                m1 = v if v > m1 else m1
                m2 = lo if lo > m2 else m2
            thr = m2 if m2 < thr else thr
        return thr
    if m >= 2 * k:
        g = m // k
        thr = np.inf
        for q in range(k):
            gmax = -np.inf
            for j in range(q * g, q * g + g):
                v = row[j]
                gmax = v if v > gmax else gmax
            thr = gmax if gmax < thr else thr
        return thr
    return -np.inf


# The threshold of :func:`_lane_threshold_py` for k <= 16: the k-th largest of the maxima of this
# many column lanes.
_LANES = 16

# Candidates are found this many columns at a time, as the bits of an int64 (63: the sign bit stays
# clear, so clearing the lowest set bit never overflows).
_MASK_BITS = 63

# Up to _RANK_WIDTH candidates each one's rank is counted over that fixed width (NaN padding), up to
# _RANK_WIDTH_MAX over that one: 8 at a time (_count_gt8_py), 2 or 4 vector compares a candidate.
_RANK_WIDTH = 16
_RANK_WIDTH_MAX = 32


def _lane_threshold_py(row: FloatArray, k: int, lanes: FloatArray) -> float:  # pragma: no cover - compiled
    """A lower bound of the ``k``-th best score of ``row`` (at least ``k`` scores are >= it), tighter
    than :func:`_threshold_py` for ``k <= 16``: the ``k``-th largest of the maxima of 16 column
    lanes (columns ``l, l + 16, ...``; each maximum is a score of its own), about 13 of 50 random
    scores pass. ``lanes`` (16 long) is scratch. The fused kernel writes the same steps out.
    """
    m = row.shape[0]
    if k > _LANES or m < 2 * _LANES:
        return _threshold(row, k)
    n_lanes = _LANES + (m >> 62)  # 16, but not a constant: LLVM vectorises this loop, not unrolls it
    for q in range(n_lanes):
        lanes[q] = -np.inf
    for t in range(m // _LANES):
        for q in range(n_lanes):
            lanes[q] = max(lanes[q], row[t * _LANES + q]) + 0.0  # + 0.0: no masked store (see _ndcg_py)
    # The k-th largest lane maximum: the smallest one with fewer than k lanes above it (16 independent
    # counts of 2 vector compares each; see _ndcg_py).
    thr = np.inf
    for q in range(_LANES):
        x = lanes[q]
        thr = min(thr, x) if _count_gt8(lanes, 0, x) + _count_gt8(lanes, 8, x) < k else thr
    return thr


def _candidates_py(row: FloatArray, thr: float, cand: IntArray, cand_scores: FloatArray) -> int:  # pragma: no cover - compiled
    """The columns of ``row`` whose score is >= ``thr`` (NaN never is), in column order, into ``cand``
    and their scores into ``cand_scores`` (``_RANK_WIDTH_MAX`` longer than the row: NaN after the
    candidates, up to that width); returns how many. A bit mask per 63 columns in one vectorised
    pass, then one step per set bit.
    """
    m = row.shape[0]
    for q in range(_RANK_WIDTH_MAX):
        cand_scores[q] = np.nan
    cnt = 0
    for b in range(0, m, _MASK_BITS):
        bits = 0
        for q in range(min(_MASK_BITS, m - b)):  # unsigned indices: no wraparound (see _ndcg_py)
            bits |= np.int64(row[np.uint64(b + q)] >= thr) << q  # type: ignore[assignment]
        while bits != 0:
            col = np.uint64(b + _trailing_zeros(bits))
            bits &= bits - 1
            cand_scores[np.uint64(cnt)] = row[col]
            cand[np.uint64(cnt)] = col
            cnt += 1
    return cnt


def _count_ranks_py(cand_scores: FloatArray, cnt: int, ranks: IntArray) -> bool:  # pragma: no cover - compiled
    """Each candidate's number of higher scores into ``ranks``, counted over a fixed width of 16 or 32
    (:func:`_count_gt8_py`; the NaN padding of :func:`_candidates_py` never counts); whether those are
    the ranks.

    Without equal scores they are (0..cnt-1, summing to ``cnt (cnt - 1) / 2``); equal scores make
    the sum smaller, and more than ``_RANK_WIDTH_MAX`` candidates are not counted: False, and the
    caller ranks them stably (:func:`_rank_candidates_py`).
    """
    if cnt > _RANK_WIDTH_MAX:
        return False
    rsum = 0
    for p in range(cnt):
        x = cand_scores[p]
        r = _count_gt8(cand_scores, 0, x) + _count_gt8(cand_scores, 8, x)
        if cnt > _RANK_WIDTH:
            r += _count_gt8(cand_scores, 16, x) + _count_gt8(cand_scores, 24, x)
        ranks[p] = r
        rsum += r
    return rsum == cnt * (cnt - 1) // 2


def _mask_ge8_py(scores: FloatArray, i: int, j: int, n: int, thr: float) -> int:  # pragma: no cover - compiled
    """Bit ``q`` set where ``scores[i, j + q] >= thr`` (NaN never is), ``q < n <= 8``; compiled: one
    vector compare of 8 scores read by a masked load (nothing past ``n`` is read), its mask as bits."""
    return sum(1 << q for q in range(n) if scores[i, j + q] >= thr)


def _count_gt8_py(values: FloatArray, start: int, x: float) -> int:  # pragma: no cover - compiled
    """How many of the 8 ``values[start:start + 8]`` are > ``x`` (NaN never is); compiled: one vector
    compare and a population count. All 8 are read: the caller's array must hold them."""
    return int(np.count_nonzero(values[start:start + 8] > x))


def _trailing_zeros_py(bits: int) -> int:  # pragma: no cover - compiled
    """The index of the lowest set bit of ``bits`` (> 0); compiled: LLVM's ``cttz``, one instruction."""
    return (bits & -bits).bit_length() - 1


def _leading_zeros_py(bits: int) -> int:  # pragma: no cover - compiled
    """How many of the 64 bits of ``bits`` lead its highest set bit (64 for 0); compiled: ``ctlz``."""
    return 64 - (bits & 0xFFFFFFFFFFFFFFFF).bit_length()


def _next_chunk_py(counter: IntArray) -> int:  # pragma: no cover - compiled
    """The next chunk of rows to compute: ``counter[0]``, then one more (compiled: an atomic
    fetch-and-add, so the threads of the parallel build share one counter).

    numba's threading layer here (OpenMP, ``omp for`` without a schedule clause) gives each thread an
    equal share of a parallel loop's iterations up front, with or without ``parallel_chunksize``:
    one thread slowed down by another process then holds the whole call back. So each iteration of
    the fused kernels' parallel loop takes chunks from this counter until none is left: the first
    iteration of each thread does nearly all the work, a thread on a busy core takes fewer chunks,
    and the later iterations find the counter spent.
    """
    c = counter[0]
    counter[0] = c + 1
    return int(c)


def _insert_one_py(
    key: float, item: int, filled: int, k: int, keys: FloatArray, items: IntArray
) -> int:  # pragma: no cover - compiled
    """Insert ``key`` (and its ``item``) into the top ``k`` held in ``keys`` (descending) and ``items``.

    ``filled`` positions are in use; returns the new count. An equal key goes after those already
    there (stable), and a key that is not better than the k-th is dropped.
    """
    if filled == k:
        if not (key > keys[k - 1]):
            return filled
        pos = k - 1
    else:
        pos = filled
        filled += 1
    while pos > 0 and key > keys[pos - 1]:
        keys[pos] = keys[pos - 1]
        items[pos] = items[pos - 1]
        pos -= 1
    keys[pos] = key
    items[pos] = item
    return filled


def _insert_top_k_py(
    row: FloatArray, cand: IntArray, cnt: int, k: int, top_scores: FloatArray, dest: IntArray
) -> int:  # pragma: no cover - compiled
    """Stable insertion of the candidate columns (in column order) into the top ``k`` of ``dest``.

    A later column enters only when strictly better, so equal scores keep column order. The scores
    of the top are kept beside it (``top_scores``), so a comparison is one load, not two. Fills
    ``dest`` past the end with ``-1`` and returns how many positions hold a document.
    """
    filled = 0
    for p in range(cnt):
        filled = _insert_one(row[cand[p]], cand[p], filled, k, top_scores, dest)
    for p in range(filled, k):
        dest[p] = -1
    return filled


# Up to this many candidates each one's rank is counted (quadratic, branch-free);
# above (heavy ties, short rows), the stable insertion (linear in the candidates).
_RANK_COUNT_MAX = 64

def _rank_candidates_py(
    row: FloatArray, cand: IntArray, cand_scores: FloatArray, cnt: int, k: int, top_scores: FloatArray,
    top: IntArray,
) -> int:  # pragma: no cover - compiled
    """The top ``k`` of the ``cnt`` candidate columns (in column order, scores beside them) into
    ``top`` (``k + 1`` long); returns how many positions hold a document.

    A candidate's rank is the number of candidates ahead of it: a higher score, or an equal score
    and an earlier column (the stable order). The ranks are a permutation of ``0..cnt-1``; those
    from ``k`` on land in the spare slot ``top[k]``.
    """
    if cnt > _RANK_COUNT_MAX:
        return _insert_top_k_call(row, cand, cnt, k, top_scores, top)
    for p in range(cnt):
        x = cand_scores[p]
        r = 0
        for q in range(cnt):
            y = cand_scores[q]
            r += (y > x) | ((y == x) & (q < p))
        top[min(r, k)] = cand[p]
    filled = min(cnt, k)
    for p in range(filled, k):
        top[p] = -1
    return filled


def _rank_top_k_py(scores: FloatArray, k: int, out: IntArray) -> None:  # pragma: no cover - compiled
    n, m = scores.shape
    n_chunks = min(n, _CHUNKS)
    for c in _prange(n_chunks):
        cand = np.empty(m + 1, np.int64)
        top_scores = np.empty(max(k, 1), np.float64)
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
            thr = _threshold(row, k)
            # Branch-free compaction of the candidates (scores >= thr; NaN compares False), in column order.
            cnt = 0
            for j in range(m):
                cand[cnt] = j
                cnt += 1 if row[j] >= thr else 0
            _insert_top_k(row, cand, cnt, k, top_scores, dest)


def _tally_py(v: float, j: int, hist: IntArray, seen: IntArray) -> None:  # pragma: no cover - compiled
    """Count a (non-NaN) label ``v`` of column ``j`` in ``hist`` when it is a small integer.

    ``seen`` carries the row's state: ``[highest level counted, 1 while every label was counted,
    column of the first bad label or -1]``. A label that cannot be counted (fractional, or >=
    ``_HIST_LEVELS``) clears the flag; a bad one (negative or infinite) is remembered. Grades are
    small integers: counting them is one predictable pass, and the ideal ordering is read off the
    counts.
    """
    if v >= 0.0 and v < _HIST_LEVELS:
        h = int(v)
        if h == v:
            hist[h] += 1
            if h > seen[0]:
                seen[0] = h
        else:
            seen[1] = 0
    elif v < 0.0 or v == np.inf:
        if seen[2] < 0:
            seen[2] = j
    else:
        seen[1] = 0


def _insert_values_py(
    src: FloatArray, mask: FloatArray, use_mask: bool, k: int, dest: FloatArray, columns: IntArray
) -> int:  # pragma: no cover - compiled
    """The ``k`` largest valid values of ``src`` into ``dest``, descending; returns how many there are.

    Valid: not NaN, not masked (``mask`` NaN, with ``use_mask``), non-negative and finite.
    ``columns`` (at least ``k`` long) is scratch: where each value came from, which no caller needs.
    """
    cnt = 0
    for j in range(src.shape[0]):
        v = src[j]
        if v != v or (use_mask and mask[j] != mask[j]) or v < 0.0 or v == np.inf:
            continue
        cnt = _insert_one(v, j, cnt, k, dest, columns)
    return cnt


def _gain_of_py(v: float, gains: FloatArray, exponential: bool) -> float:  # pragma: no cover - compiled
    """``gain(v)``: a table lookup for small integer labels, ``2**v - 1`` or ``v`` otherwise."""
    if v >= 0.0 and v < _HIST_LEVELS and int(v) == v:
        return float(gains[int(v)])
    return (2.0**v) - 1.0 if exponential else v


def _top_k_values_py(
    values: FloatArray, mask: FloatArray, use_mask: bool, k: int, out: FloatArray, bad: IntArray
) -> None:  # pragma: no cover - compiled
    n, m = values.shape
    n_chunks = min(n, _CHUNKS)
    for c in _prange(n_chunks):
        hist = np.zeros(_HIST_LEVELS, np.int64)
        seen = np.empty(3, np.int64)
        columns = np.empty(k, np.int64)
        for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            row = values[i]
            mrow = mask[i]
            dest = out[i]
            seen[0], seen[1], seen[2] = 0, 1, -1
            for j in range(m):
                v = row[j]
                if v != v or (use_mask and mrow[j] != mrow[j]):  # unjudged, or padding
                    continue
                _tally(v, j, hist, seen)
            level, integral, bad[i] = seen[0], seen[1] == 1, seen[2]
            p = 0
            if integral:
                for h in range(level, -1, -1):
                    take = min(hist[h], k - p)
                    for _ in range(take):
                        dest[p] = h
                        p += 1
                    if p == k:
                        break
            for h in range(level + 1):
                hist[h] = 0
            if not integral:
                p = _insert_values(row, mrow, use_mask, k, dest, columns)
            for q in range(p, k):
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


# The names the kernel bodies call; bound to the compiled helpers in the compiled kernels.
_threshold = _threshold_py
_lane_threshold = _lane_threshold_py
_candidates = _candidates_py
_count_ranks = _count_ranks_py
_trailing_zeros = _trailing_zeros_py
_leading_zeros = _leading_zeros_py
_mask_ge8 = _mask_ge8_py
_count_gt8 = _count_gt8_py
_next_chunk = _next_chunk_py
_insert_one = _insert_one_py
_insert_top_k = _insert_top_k_py
_insert_top_k_call = _insert_top_k_py
_rank_candidates_call = _rank_candidates_py
_tally = _tally_py
_insert_values = _insert_values_py
_gain_of = _gain_of_py
