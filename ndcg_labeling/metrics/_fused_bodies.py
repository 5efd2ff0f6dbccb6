"""The bodies of the fused NDCG kernels: ranking, DCG and ideal DCG in one pass per row, for NDCG
alone at integer cut-offs (compiled by :mod:`ndcg_labeling.metrics._kernels`, like the bodies of
:mod:`ndcg_labeling.metrics._kernel_bodies`, whose helpers they call).

* :func:`_ndcg_py` - the ideal from the row's own labels (the documents present): the hot kernel;
* :func:`_ndcg_ideal_py` - the ideal from a separate row of ideal labels (``ideal_labels``).

Two kernels rather than one with a flag: with a run-time flag in the row loop LLVM optimised the
common case about a fifth worse (measured 2026-12, 100k x 50). Per row, :func:`_ndcg_py`:

1. reads the labels 8 at a time (``_label_counts_py``, compiled from LLVM IR; 3-4% less time
   than numba's loop): the count of each integer level below ``_PACKED_LEVELS`` (8), a byte each
   of one int64, and how many labels are anything else; the ideal DCG prefix is read off the
   counts (highest level first), or, where the highest level present fills all ``k`` places, is
   that level's prefix, made once per chunk of rows (5% less time than the loop at 10k x 50,
   labels 0-3). Rows with other labels (fractional, large, negative, infinite) take
   :func:`_row_ideal_py`, which also finds a bad label;
2. takes a threshold that at least ``k`` scores reach: for ``k <= 16`` the ``k``-th largest of the
   maxima of 16 column lanes (a vectorised pass, then for each maximum a count of the maxima above it),
   about 13 candidates of 50 for random scores; otherwise that of :func:`_threshold_py` (about 16);
3. finds the candidates as the bits of an int64, 8 scores a vector compare whose mask is the bits
   (``_mask_ge8``, LLVM IR: see :func:`~ndcg_labeling.metrics._kernels._vector_compares`; a masked
   load only for the row's last few), and copies them, one step per set bit, where a branch-free
   compaction stores once per column;
4. counts each candidate's rank over a fixed width of 16 or 32 (NaN padding, never counted): the
   number of higher scores, 8 a vector compare and a population count (``_count_gt8``), and puts
   the candidate at it. Without equal scores these are the ranks, and they sum to
   ``cnt (cnt - 1) / 2``; equal scores make the sum smaller, and such rows (and rows of more than
   32 candidates) are ranked again by the stable count or insertion of ``_rank_candidates_py``
   (:mod:`~ndcg_labeling.metrics._kernel_bodies`);
5. sums the DCG prefix and divides at each cut-off; in a loop of its own over a batch of
   ``_BATCH`` (16) rows ranked by steps 1-4: the 10 dependent additions of one row's DCG and the
   next row's are then a few instructions apart, not a whole row, and the processor overlaps
   them (7% faster at 10k x 50, 4% at 100k). Cut any earlier (before step 2 or 3), it was slower.

:func:`_ndcg_ideal_py` takes steps 2-5 as calls (:func:`_dcg_prefix_py`, over the helpers
``_lane_threshold_py``, ``_candidates_py`` and ``_count_ranks_py`` of
:mod:`~ndcg_labeling.metrics._kernel_bodies`), and checks both rows of labels with
:func:`_label_stats_py` (the ideal by level counts or insertion): it pays the reference counts of
its helpers' arrays, the price of not writing the steps out a second time.

The rare paths are compiled as functions of their own and called (:data:`OUT_OF_LINE`): inlined,
their code made the common path slower. And every array handed to an inlined helper costs an atomic
reference count up and down per call, so the hot kernel writes its per-row steps out. In the parallel
build both kernels take their chunks of rows from a shared counter (:func:`_next_chunk_py
<ndcg_labeling.metrics._kernel_bodies._next_chunk_py>`): numba's OpenMP layer would deal the
chunks out in equal shares up front, and a thread on a core shared with another process would
hold the call back.

Measured 2026-12-03 on the 2-core AMD EPYC (Zen 4, AVX-512; a VM), shared with other sessions'
test runs (load average 1.4-4.5): CPU time, best of 15-21 rounds, this kernel alternating in one
process with the body before this rewrite (commit 27776b0's, compiled alongside); 100k x 50,
NDCG@10, labels 0-3, serial: 206-264 ns a row against 461-615 for the body before (0.4-0.57x; the
spread is the other load). Cut after each step (cumulative, one run): labels and ideal 55,
threshold +26, candidates +35, ranks +42, DCG and cut-offs +21 (179 in all). The ``ideal_labels``
kernel: 359-460 against 504-631. The vector compares of steps 3 and 4 (2026-12-03, same host and
method, best of 301-401 rounds of 10k rows): 144-147 ns a row against 165 for commit 2239f39's body;
cut after each step: labels 40, threshold +27, candidates +33, ranks +21, DCG +24 (145). Step 5
in batches (same method): 132 ns a row at 10k rows, 137 at 100k, against 142 and 148 before.
The per-level ideal prefixes and plain loads for whole blocks of 8: 126-141 at 10k (two
processes; the spread between processes is code and data placement), 135 at 100k, against
133-144 and 149. The labels by ``_label_counts``: 123-126 at 10k, 127 at 100k, against 127-129
and 131 (166 and 168 for commit 2239f39's body in the same runs). What each step costs, as the
time saved by leaving it out (commit 1c99039's body, 134 ns): label pass 19, ideal prefix loop
14, threshold 26 (a fixed one instead), candidates 23 (the first 10 columns instead), ranks 17,
DCG 9.
"""

from __future__ import annotations

import numpy as np

from ndcg_labeling.metrics._kernel_bodies import (
    _CHUNKS,
    _HIST_LEVELS,
    _LANES,
    _RANK_WIDTH,
    _RANK_WIDTH_MAX,
    FloatArray,
    IntArray,
    _candidates,
    _count_gt8,
    _count_ranks,
    _gain_of,
    _insert_values,
    _lane_threshold,
    _leading_zeros,
    _mask_ge8,
    _next_chunk,
    _prange,
    _rank_candidates_call,
    _trailing_zeros,
)

# Labels in [0, this) that are integers are counted by level (a float: compared with float labels).
_LEVEL_LIMIT = float(_HIST_LEVELS)

# Labels below this that are integers are counted by level in the hot kernel, a byte each in one int64
# (a float: compared with float labels); 8 covers every grading scale.
_PACKED_LEVELS = 8
_PACKED_LIMIT = float(_PACKED_LEVELS)

# The hot kernel finds candidates this many columns (7 vectors of 8) at a time, as bits of an int64.
_MASK_COLUMNS = 56

# The hot kernel ranks this many rows (steps 1-4), then sums their DCG (step 5; see the module docstring).
_BATCH = 16

# Helpers compiled as functions of their own and called, not inlined (see the module docstring).
OUT_OF_LINE = ("_ideal_by_insertion", "_insert_top_k_call", "_row_ideal", "_rank_candidates_call")


def _label_stats_py(vals: FloatArray, mask: FloatArray, use_mask: bool) -> tuple[int, int, bool, bool]:  # pragma: no cover - compiled
    """One branch-free pass over a row of labels: ``(levels, top, small, bad)``.

    Valid labels: not NaN, and (with ``use_mask``) not where ``mask`` is NaN (padding). ``levels``
    has bit ``h`` set for each integer level ``h`` < ``_HIST_LEVELS`` seen, ``top`` is the highest;
    ``small``: every valid label is such a level; ``bad``: some valid label is negative or infinite
    (:func:`_first_bad_py` finds its column).
    """
    levels = 0
    top = 0
    small = True
    bad = False
    for j in range(vals.shape[0]):
        v = vals[j]
        valid = v == v
        if use_mask:
            s = mask[j]
            valid = valid & (s == s)
        in_range = (v >= 0.0) & (v < _LEVEL_LIMIT)
        h = np.int64(v if in_range else 0.0)
        h = h if valid else 0  # type: ignore[assignment]
        small = small & ((valid ^ True) | (in_range & (np.float64(h) == v)))
        bad = bad | (valid & ((v < 0.0) | (v == np.inf)))
        levels |= np.int64(1) << h  # type: ignore[assignment]
        top = max(top, h)  # type: ignore[assignment]
    return levels, top, small, bad


def _label_counts_py(labels: FloatArray, scores: FloatArray, i: int, m: int) -> tuple[int, int]:  # pragma: no cover - compiled
    """Step 1 of :func:`_ndcg_py` for row ``i``: ``(packed, other)``, the count of each integer label
    level below ``_PACKED_LEVELS`` a byte each of ``packed``, and how many labels are anything else,
    of the valid labels (not NaN, score not NaN); compiled: 8 labels at a time (LLVM IR, see
    :func:`~ndcg_labeling.metrics._kernels._vector_compares`)."""
    packed = 0
    other = 0
    for j in range(m):
        v = labels[i, j]
        s = scores[i, j]
        valid = (v == v) & (s == s)
        in_range = (v >= 0.0) & (v < _PACKED_LIMIT)
        h = int(v) if in_range else 0
        other += valid & ((in_range & (h == v)) ^ True)
        packed += int(valid) << (h * 8)
    return packed - (1 << 64) if packed >= 1 << 63 else packed, other


def _first_bad_py(vals: FloatArray, mask: FloatArray, use_mask: bool) -> int:  # pragma: no cover - compiled
    """The column of the first valid (see :func:`_label_stats_py`) negative or infinite label, or -1."""
    for j in range(vals.shape[0]):
        v = vals[j]
        if v == v and (not use_mask or mask[j] == mask[j]) and (v < 0.0 or v == np.inf):
            return j
    return -1


def _count_level_py(vals: FloatArray, mask: FloatArray, use_mask: bool, h: int) -> int:  # pragma: no cover - compiled
    """How many valid labels equal ``h`` (one vectorised pass; NaN never equals)."""
    c = 0
    level = float(h)
    for j in range(vals.shape[0]):
        hit = vals[j] == level
        if use_mask:
            hit = hit & (mask[j] == mask[j])
        c += hit
    return c


def _ideal_prefix_py(
    src: FloatArray, mask: FloatArray, use_mask: bool, levels: int, top: int, gains: FloatArray,
    discount: FloatArray, ipref: FloatArray,
) -> None:  # pragma: no cover - compiled
    """``ipref[p]`` = ideal DCG at cut-off ``p + 1`` for small integer labels, from level counts."""
    k = ipref.shape[0]
    total = 0.0
    p = 0
    h = top
    while p < k and h > 0:  # label 0 has gain 0: stop above it
        if (levels >> h) & 1:
            left = _count_level(src, mask, use_mask, h)
            gh = gains[h]
            while left > 0 and p < k:
                total += gh * discount[p]
                ipref[p] = total
                p += 1
                left -= 1
        h -= 1
    for q in range(p, k):
        ipref[q] = total


def _ideal_by_insertion_py(
    src: FloatArray, mask: FloatArray, use_mask: bool, gains: FloatArray, exponential: bool,
    discount: FloatArray, buf: FloatArray, columns: IntArray, ipref: FloatArray,
) -> None:  # pragma: no cover - compiled
    """``ipref`` as :func:`_ideal_prefix_py`, for labels that are not all small integers."""
    k = ipref.shape[0]
    total = 0.0
    p = 0
    for q in range(_insert_values(src, mask, use_mask, k, buf, columns)):
        total += _gain_of(buf[q], gains, exponential) * discount[q]
        ipref[q] = total
        p = q + 1
    for q in range(p, k):
        ipref[q] = total


def _row_ideal_py(
    lab: FloatArray, row: FloatArray, gains: FloatArray, exponential: bool, discount: FloatArray, buf: FloatArray,
    columns: IntArray, ipref: FloatArray,
) -> int:  # pragma: no cover - compiled
    """``ipref`` for a row of labels that are not all small integers (or too many to count by byte);
    returns the column of its first bad label, or -1 (valid: a label whose score is not NaN)."""
    levels, top_level, small, any_bad = _label_stats(lab, row, True)
    if small:
        _ideal_prefix(lab, row, True, levels, top_level, gains, discount, ipref)
    else:
        _ideal_by_insertion(lab, row, True, gains, exponential, discount, buf, columns, ipref)
    return _first_bad(lab, row, True) if any_bad else -1


def _dcg_prefix_py(
    row: FloatArray, lab: FloatArray, k: int, gains: FloatArray, exponential: bool, discount: FloatArray,
    cand: IntArray, cand_scores: FloatArray, ranks: IntArray, lanes: FloatArray, top_scores: FloatArray,
    top: IntArray, pref: FloatArray,
) -> None:  # pragma: no cover - compiled
    """``pref[p]`` = DCG at cut-off ``p + 1`` of the row ranked by score (stable, NaN left out): the
    steps 2-5 of :func:`_ndcg_py` as calls (scratch: ``cand`` and ``ranks`` ``m + 1`` long,
    ``cand_scores`` ``m + _RANK_WIDTH_MAX``, ``lanes`` ``_LANES``, ``top`` ``k + 1``)."""
    cnt = _candidates(row, _lane_threshold(row, k, lanes), cand, cand_scores)
    if _count_ranks(cand_scores, cnt, ranks):
        for p in range(cnt):
            top[min(ranks[p], k)] = cand[p]
        filled = min(cnt, k)
    else:
        filled = _rank_candidates_call(row, cand, cand_scores, cnt, k, top_scores, top)
    total = 0.0
    for p in range(filled):
        v = lab[top[p]]
        if v == v:
            total += _gain_of(v, gains, exponential) * discount[p]
        pref[p] = total
    for p in range(filled, k):
        pref[p] = total


def _ndcg_py(
    scores: FloatArray, labels: FloatArray, k: int, k_ideal: int, cuts: IntArray, gains: FloatArray,
    exponential: bool, discount: FloatArray, empty_value: float, out: FloatArray, bad: IntArray,
) -> None:  # pragma: no cover - compiled
    """NDCG at each of ``cuts``, the ideal from the row's own labels (those with a score); ``bad``
    gets the column of the first negative or infinite label of each row (``-1``: none).

    The hot kernel, its steps written out over ``scores[i, j]`` rather than row views: each row view
    and each array handed to an inlined helper costs an atomic reference count up and down, 30-90 ns
    a row (measured 2026-12). Only the rare paths take row views (:data:`OUT_OF_LINE`): labels that
    are not all integers below ``_PACKED_LEVELS`` (:func:`_row_ideal_py`), and candidates with equal
    scores or more than ``_RANK_WIDTH_MAX`` of them (``_rank_candidates_py``). The tests hold it to
    the general path bit for bit.
    """
    n, m = scores.shape
    n_chunks = min(n, _CHUNKS)
    half = k - k // 2
    packs = m < 256  # a level's count fits its byte of ``packed``
    counter = np.zeros(1, np.int64)
    for _ in _prange(n_chunks):  # chunks handed out as threads ask (see _next_chunk_py)
        c = _next_chunk(counter)
        if c >= n_chunks:  # all taken (by a thread that ran ahead): no scratch to allocate
            continue
        cand = np.empty(m + 1, np.int64)
        cand_scores = np.empty(m + _RANK_WIDTH_MAX, np.float64)
        top_scores = np.empty(k, np.float64)
        tops = np.empty((_BATCH, k + 1), np.int64)  # for each row of a batch: its ranking (step 4)
        fills = np.empty(_BATCH, np.int64)
        tinies = np.empty(_BATCH, np.bool_)
        lanes = np.empty(_LANES, np.float64)
        pref = np.empty(k, np.float64)
        iprefs = np.empty((_PACKED_LEVELS + _BATCH, k_ideal), np.float64)  # see step 1
        ideal_rows = np.empty(_BATCH, np.int64)
        for level in range(_PACKED_LEVELS):
            total = 0.0
            for p in range(k_ideal):
                total += gains[level] * discount[p]
                iprefs[level, p] = total
        buf = np.empty(k_ideal, np.float64)
        columns = np.empty(k_ideal, np.int64)
        while c < n_chunks:
            end = (c + 1) * n // n_chunks
            for row0 in range(c * n // n_chunks, end, _BATCH):  # steps 1-4 for a batch of rows, then 5
                for i in range(row0, min(row0 + _BATCH, end)):
                    slot = np.uint64(i - row0)
                    # 1. The labels in one vectorised pass: the count of each level below _PACKED_LEVELS (a
                    # byte each), and how many valid labels are anything else (fractional, large, negative,
                    # infinite: those rows take _row_ideal_py, which also finds a bad label's column).
                    packed, other = _label_counts(labels, scores, i, m)
                    tiny = (other == 0) & packs
                    row_ideal = np.int64(slot) + _PACKED_LEVELS  # the row's ideal prefix: a row of iprefs
                    if tiny:
                        bad[i] = -1
                        top_level = (63 - _leading_zeros(packed)) >> 3
                        if top_level >= 0 and (packed >> (8 * top_level)) & 255 >= k_ideal:
                            row_ideal = top_level  # type: ignore[assignment]  # its prefix, made per chunk
                        else:
                            total = 0.0
                            p = 0
                            for level in range(_PACKED_LEVELS - 1, 0, -1):  # label 0 has gain 0: stop above it
                                left = (packed >> (8 * level)) & 255
                                gh = gains[level]
                                while left > 0 and p < k_ideal:
                                    total += gh * discount[p]
                                    iprefs[row_ideal, p] = total
                                    p += 1
                                    left -= 1
                            for q in range(p, k_ideal):
                                iprefs[row_ideal, q] = total
                    else:
                        bad[i] = _row_ideal(labels[i], scores[i], gains, exponential, discount, buf, columns,
                                            iprefs[row_ideal])
                    ideal_rows[slot] = row_ideal
                    # 2. The threshold: at least k scores are >= it. For k <= 16: the k-th largest of the
                    # maxima of 16 lanes (columns l, l + 16, ...; each maximum is a score of its own), about
                    # 13 candidates of 50 for random scores; otherwise the bound of _threshold_py (about 16).
                    if k <= _LANES and m >= 2 * _LANES:
                        # 16, but not a constant to LLVM: it unrolls a constant loop of 16 into scalar code
                        # (numba leaves LLVM's SLP vectoriser off); this one it vectorises.
                        n_lanes = _LANES + (m >> 62)
                        for q in range(n_lanes):
                            lanes[q] = -np.inf
                        for t in range(m // _LANES):
                            for q in range(n_lanes):
                                # NaN never wins. + 0.0: without it LLVM stores only the lanes whose maximum
                                # changed, a masked store, slow on AMD (-0.0 becomes 0.0: the same threshold).
                                lanes[q] = max(lanes[q], scores[i, t * _LANES + q]) + 0.0
                        # The k-th largest maximum: the smallest with fewer than k above it. 16 independent
                        # counts (2 vector compares each) instead of sorting each half of the lanes on
                        # registers by a network of 19 exchanges and taking the best split of k between
                        # the halves: 10% less time on the 2-core Xeon (serial, 100k x 50: 15.1 -> 13.6 ms).
                        thr = np.inf
                        for q in range(_LANES):
                            x = lanes[q]
                            above = _count_gt8(lanes, 0, x) + _count_gt8(lanes, 8, x)
                            thr = min(thr, x) if above < k else thr
                    elif k >= 2 and m >= 4 * half:  # _threshold_py
                        g = m // half
                        thr = np.inf
                        for q in range(half):
                            m1 = -np.inf
                            m2 = -np.inf
                            for j in range(q * g, q * g + g):
                                v = scores[i, j]
                                lo = m1 if v > m1 else v  # NaN stays NaN and never wins
                                m1 = v if v > m1 else m1
                                m2 = lo if lo > m2 else m2
                            thr = m2 if m2 < thr else thr
                    elif m >= 2 * k:
                        g = m // k
                        thr = np.inf
                        for q in range(k):
                            gmax = -np.inf
                            for j in range(q * g, q * g + g):
                                v = scores[i, j]
                                gmax = v if v > gmax else gmax
                            thr = gmax if gmax < thr else thr
                    else:
                        thr = -np.inf
                    # 3. The candidates (scores >= thr; NaN compares False) in column order: a bit mask in one
                    # vectorised pass, then one step per set bit. NaN after them: never counted ahead.
                    for q in range(_RANK_WIDTH_MAX):
                        cand_scores[q] = np.nan
                    cnt = 0
                    for b in range(0, m, _MASK_COLUMNS):
                        bits = 0
                        stop = min(_MASK_COLUMNS, m - b)
                        full = stop & -8
                        for q in range(0, full, 8):  # 8 compared at once, the mask as bits (8: no masked load)
                            bits |= _mask_ge8(scores, i, b + q, 8, thr) << q
                        if full < stop:
                            bits |= _mask_ge8(scores, i, b + full, stop - full, thr) << full
                        while bits != 0:
                            col = np.uint64(b + _trailing_zeros(bits))
                            bits &= bits - 1
                            cand_scores[np.uint64(cnt)] = scores[i, col]
                            cand[np.uint64(cnt)] = col
                            cnt += 1
                    # 4. Each candidate's rank: how many score higher, counted over a fixed width of 16 or
                    # 32, 8 at a time (_count_gt8_py), and the candidate put at it. Without equal scores the
                    # ranks are 0..cnt-1 and sum to cnt(cnt-1)/2; equal scores make the sum smaller, and the
                    # stable count (_rank_candidates_py) settles them (and rewrites the row's ranking).
                    rsum = -1
                    if cnt <= _RANK_WIDTH_MAX:
                        rsum = 0
                        for p in range(cnt):
                            x = cand_scores[p]
                            r = _count_gt8(cand_scores, 0, x) + _count_gt8(cand_scores, 8, x)
                            if cnt > _RANK_WIDTH:
                                r += _count_gt8(cand_scores, 16, x) + _count_gt8(cand_scores, 24, x)
                            tops[slot, np.uint64(min(r, k))] = cand[p]  # unsigned: no wraparound
                            rsum += r
                    if rsum == cnt * (cnt - 1) // 2:
                        filled = min(cnt, k)
                    else:
                        filled = _rank_candidates_call(scores[i], cand, cand_scores, cnt, k, top_scores,
                                                       tops[slot])
                    tinies[slot] = tiny
                    fills[slot] = filled
                for i in range(row0, min(row0 + _BATCH, end)):
                    slot = np.uint64(i - row0)
                    tiny = tinies[slot]
                    filled = fills[slot]
                    # 5. For each row of the batch: the DCG prefix, then NDCG at each cut-off.
                    total = 0.0
                    for p in range(filled):
                        v = labels[i, np.uint64(tops[slot, p])]
                        if tiny:  # gains[0] is 0: an unjudged (NaN) label adds +0.0, as if skipped
                            total += gains[np.int64(v) if v == v else 0] * discount[p]
                        elif v == v:
                            total += _gain_of(v, gains, exponential) * discount[p]
                        pref[p] = total
                    for p in range(filled, k):
                        pref[p] = total
                    for q in range(cuts.shape[0]):
                        kc = cuts[q]
                        best = iprefs[ideal_rows[slot], min(kc, k_ideal) - 1]
                        out[i, q] = pref[min(kc, k) - 1] / best if best > 0.0 else empty_value
            c = _next_chunk(counter)


def _ndcg_ideal_py(
    scores: FloatArray, labels: FloatArray, ideal: FloatArray, k: int, k_ideal: int, cuts: IntArray,
    gains: FloatArray, exponential: bool, discount: FloatArray, empty_value: float, out: FloatArray,
    bad: IntArray, bad_ideal: IntArray,
) -> None:  # pragma: no cover - compiled
    """NDCG at each of ``cuts``, the ideal from the rows of ``ideal``. Every non-NaN label is checked
    (under padding too): ``bad`` / ``bad_ideal`` get the first bad column of each row of ``labels``
    / ``ideal``."""
    n, m = scores.shape
    n_chunks = min(n, _CHUNKS)
    counter = np.zeros(1, np.int64)
    for _ in _prange(n_chunks):  # chunks handed out as threads ask (see _next_chunk_py)
        c = _next_chunk(counter)
        if c >= n_chunks:  # all taken (by a thread that ran ahead): no scratch to allocate
            continue
        cand = np.empty(m + 1, np.int64)
        cand_scores = np.empty(m + _RANK_WIDTH_MAX, np.float64)
        ranks = np.empty(m + 1, np.int64)
        lanes = np.empty(_LANES, np.float64)
        top_scores = np.empty(k, np.float64)
        top = np.empty(k + 1, np.int64)
        pref = np.empty(k, np.float64)
        ipref = np.empty(k_ideal, np.float64)
        buf = np.empty(k_ideal, np.float64)
        columns = np.empty(k_ideal, np.int64)
        while c < n_chunks:
            for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
                row = scores[i]
                lab = labels[i]
                irow = ideal[i]
                levels, top_level, small, any_bad = _label_stats(lab, lab, False)
                bad[i] = _first_bad(lab, lab, False) if any_bad else -1
                levels, top_level, small, any_bad = _label_stats(irow, irow, False)
                bad_ideal[i] = _first_bad(irow, irow, False) if any_bad else -1
                _dcg_prefix(row, lab, k, gains, exponential, discount, cand, cand_scores, ranks, lanes, top_scores, top,
                            pref)
                if small:
                    _ideal_prefix(irow, irow, False, levels, top_level, gains, discount, ipref)
                else:
                    _ideal_by_insertion(irow, irow, False, gains, exponential, discount, buf, columns, ipref)
                for q in range(cuts.shape[0]):
                    kc = cuts[q]
                    best = ipref[min(kc, k_ideal) - 1]
                    out[i, q] = pref[min(kc, k) - 1] / best if best > 0.0 else empty_value
            c = _next_chunk(counter)


# The names the kernel bodies call; bound to the compiled helpers in the compiled kernels.
_label_stats = _label_stats_py
_label_counts = _label_counts_py
_first_bad = _first_bad_py
_count_level = _count_level_py
_ideal_prefix = _ideal_prefix_py
_ideal_by_insertion = _ideal_by_insertion_py
_dcg_prefix = _dcg_prefix_py
_row_ideal = _row_ideal_py
