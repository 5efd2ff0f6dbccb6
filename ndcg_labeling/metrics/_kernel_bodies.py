"""The bodies of the compiled kernels (plain Python over arrays; numba compiles them, see
:mod:`ndcg_labeling.metrics._kernels` for how they are built, chosen and called).

* :func:`_rank_top_k_py` - for each row, the column indices of the ``K`` best scores: score
  descending, equal scores in column order (a stable sort), NaN scores (padding) left out, ``-1``
  past the end.
* :func:`_top_k_values_py` - for each row, the ``K`` largest values in descending order (NaN left
  out, ``0`` past the end): the ideal ranking's labels.
* :func:`_ndcg_py` - NDCG at several integer cut-offs in one pass per row (ranking, DCG and ideal
  DCG together), for the common case of NDCG alone.

Why these algorithms: NDCG@10 over 50 documents needs the top 10 only, in a stable order. Per row,
the smallest of the second-largest scores of ``ceil(k / 2)`` column groups is a lower bound of the
k-th best score (:func:`_threshold_py`); one branch-free pass keeps the columns at or above it (about
16 of 50 for random scores) and a stable insertion orders only those. ``np.argpartition`` cannot keep
equal scores in order, and a full sort does more work than needed. Labels are usually small
integers: the ideal top ``k`` is read off a per-row histogram (one predictable pass, the same pass
as the ranking's in the fused kernel); other labels use an insertion. Rows are independent: the
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

# Up to this many candidates the fused kernel counts each one's rank (quadratic, branch-free and
# vectorised); above, the stable insertion (linear in the candidates, a mispredicted branch or two each).
_RANK_COUNT_MAX = 64

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


def _rank_top_k_py(scores: FloatArray, k: int, out: IntArray) -> None:  # pragma: no cover - compiled
    n, m = scores.shape
    n_chunks = min(n, 256)
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


def _label_stats_py(vals: FloatArray, mask: FloatArray, use_mask: bool) -> tuple[int, int, bool, bool]:  # pragma: no cover - compiled
    """One branch-free (vectorised) pass over a row of labels: ``(levels, top, small, bad)``.

    Valid labels: not NaN, and (with ``use_mask``) not where ``mask`` is NaN (padding). ``levels``
    has bit ``h`` set for each integer level ``h`` < ``_HIST_LEVELS`` seen, ``top`` is the highest;
    ``small``: every valid label is such a level (the ideal is then read off counts); ``bad``: some
    valid label is negative or infinite (:func:`_first_bad_py` finds its column). Bitwise ``&`` /
    ``|`` instead of ``and`` / ``or``: no branch per label, so LLVM vectorises the loop.
    """
    levels = np.int64(0)
    top = np.int64(0)
    small = True
    bad = False
    for j in range(vals.shape[0]):
        v = vals[j]
        valid = v == v
        if use_mask:
            s = mask[j]
            valid = valid & (s == s)
        in_range = (v >= 0.0) & (v < _HIST_LEVELS)
        h = np.int64(v if in_range & valid else 0.0)
        small = small & ((valid ^ True) | (in_range & (np.float64(h) == v)))
        bad = bad | (valid & ((v < 0.0) | (v == np.inf)))
        levels |= np.int64(1) << h
        top = h if h > top else top
    return int(levels), int(top), small, bad


def _first_bad_py(vals: FloatArray, mask: FloatArray, use_mask: bool) -> int:  # pragma: no cover - compiled
    """The column of the first valid (see :func:`_label_stats_py`) negative or infinite label, or -1."""
    for j in range(vals.shape[0]):
        v = vals[j]
        if v == v and (not use_mask or mask[j] == mask[j]) and (v < 0.0 or v == np.inf):
            return j
    return -1


def _count_level_py(vals: FloatArray, mask: FloatArray, use_mask: bool, h: int) -> int:  # pragma: no cover - compiled
    """How many valid labels equal ``h`` (one vectorised pass; NaN never equals)."""
    count = 0
    level = np.float64(h)
    for j in range(vals.shape[0]):
        hit = vals[j] == level
        if use_mask:
            hit = hit & (mask[j] == mask[j])
        count += hit
    return count


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


def _ideal_prefix_py(
    src: FloatArray, mask: FloatArray, use_mask: bool, small: bool, levels: int, top: int,
    gains: FloatArray, exponential: bool, discount: FloatArray, buf: FloatArray, columns: IntArray,
    ipref: FloatArray,
) -> None:  # pragma: no cover - compiled
    """``ipref[p]`` = ideal DCG at cut-off ``p + 1``: from the counts of the levels present (highest
    first, each counted only when needed: labels 0-3 rarely need more than level 3) for small integer
    labels, by insertion otherwise."""
    k = ipref.shape[0]
    total = 0.0
    p = 0
    if small:
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
    else:
        for q in range(_insert_values(src, mask, use_mask, k, buf, columns)):
            total += _gain_of(buf[q], gains, exponential) * discount[q]
            ipref[q] = total
            p = q + 1
    for q in range(p, k):
        ipref[q] = total


def _top_k_values_py(
    values: FloatArray, mask: FloatArray, use_mask: bool, k: int, out: FloatArray, bad: IntArray
) -> None:  # pragma: no cover - compiled
    n, m = values.shape
    n_chunks = min(n, 256)
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


def _rank_candidates_py(
    row: FloatArray, cand: IntArray, cand_scores: FloatArray, cnt: int, k: int, top_scores: FloatArray,
    top: IntArray,
) -> int:  # pragma: no cover - compiled
    """The top ``k`` of the ``cnt`` candidate columns (in column order, scores beside them) into
    ``top``; returns how many positions hold a document.

    Up to ``_RANK_COUNT_MAX`` candidates, each one's rank is counted: the candidates ahead of it are
    those with a higher score, or an equal score and an earlier column (the stable order). The count
    is a branch-free loop LLVM vectorises and the rank is a store index, where an insertion
    mispredicts a branch or two per candidate. The ranks are a permutation of ``0..cnt-1``; those
    from ``k`` on land in the spare slot ``top[k]``. More candidates (heavy ties, short rows):
    the stable insertion, linear in ``cnt``.
    """
    if cnt > _RANK_COUNT_MAX:
        return _insert_top_k(row, cand, cnt, k, top_scores, top)
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


def _ndcg_row_py(
    row: FloatArray, lab: FloatArray, irow: FloatArray, use_ideal: bool, k: int, cuts: IntArray,
    gains: FloatArray, exponential: bool, discount: FloatArray, empty_value: float, out_row: FloatArray,
    cand: IntArray, cand_scores: FloatArray, top_scores: FloatArray, top: IntArray, pref: FloatArray,
    ipref: FloatArray, buf: FloatArray, columns: IntArray,
) -> tuple[int, int]:  # pragma: no cover - compiled
    """One row of :func:`_ndcg_py`; returns the bad columns of ``lab`` and ``irow`` (``-1``: none).

    ``use_ideal`` is a constant at each call (the kernel calls it once with ``True``, once with
    ``False``): every helper below then gets a constant ``use_mask`` and LLVM vectorises their loops.
    """
    bad_ideal = -1
    if use_ideal:
        # Every non-NaN label is checked (padding too); the ideal comes from the ideal row.
        levels, top_level, small, any_bad = _label_stats(lab, lab, False)
        bad = _first_bad(lab, lab, False) if any_bad else -1
        levels, top_level, small, any_bad = _label_stats(irow, irow, False)
        bad_ideal = _first_bad(irow, irow, False) if any_bad else -1
    else:
        levels, top_level, small, any_bad = _label_stats(lab, row, True)
        bad = _first_bad(lab, row, True) if any_bad else -1
    thr = _threshold(row, k)
    # Branch-free compaction of the candidates (scores >= thr; NaN compares False), in column order.
    cnt = 0
    for j in range(row.shape[0]):
        s = row[j]
        cand[cnt] = j
        cand_scores[cnt] = s
        cnt += s >= thr
    filled = _rank_candidates(row, cand, cand_scores, cnt, k, top_scores, top)
    total = 0.0
    for p in range(filled):
        v = lab[top[p]]
        if v == v:
            total += _gain_of(v, gains, exponential) * discount[p]
        pref[p] = total
    for p in range(filled, k):
        pref[p] = total
    if use_ideal:
        _ideal_prefix(irow, irow, False, small, levels, top_level, gains, exponential, discount, buf, columns, ipref)
    else:
        _ideal_prefix(lab, row, True, small, levels, top_level, gains, exponential, discount, buf, columns, ipref)
    k_ideal = ipref.shape[0]
    for q in range(cuts.shape[0]):
        kc = cuts[q]
        best = ipref[min(kc, k_ideal) - 1]
        out_row[q] = pref[min(kc, k) - 1] / best if best > 0.0 else empty_value
    return bad, bad_ideal


def _ndcg_py(
    scores: FloatArray, labels: FloatArray, ideal: FloatArray, use_ideal: bool, k: int, k_ideal: int,
    cuts: IntArray, gains: FloatArray, exponential: bool, discount: FloatArray, empty_value: float,
    out: FloatArray, bad: IntArray, bad_ideal: IntArray,
) -> None:  # pragma: no cover - compiled
    """NDCG at each cut-off in ``cuts``, one row at a time: rank, DCG and ideal DCG fused.

    Per row (:func:`_ndcg_row_py`): one vectorised pass over the labels (:func:`_label_stats_py`:
    bad labels, and whether the ideal can be read off level counts), the threshold, one branch-free
    pass collecting the candidates, their ranks, the DCG prefix, the ideal DCG prefix (from the row
    of ``ideal`` with ``use_ideal``). Only the top ``k`` positions are ranked; ``k_ideal`` ideal
    positions are summed. ``bad`` / ``bad_ideal`` get the column of the first negative or infinite
    label of each row.
    """
    n, m = scores.shape
    n_chunks = min(n, _CHUNKS)
    for c in _prange(n_chunks):
        cand = np.empty(m + 1, np.int64)
        cand_scores = np.empty(m + 1, np.float64)
        top_scores = np.empty(k, np.float64)
        top = np.empty(k + 1, np.int64)
        pref = np.empty(k, np.float64)
        ipref = np.empty(k_ideal, np.float64)
        buf = np.empty(k_ideal, np.float64)
        columns = np.empty(k_ideal, np.int64)
        for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            if use_ideal:
                bad[i], bad_ideal[i] = _ndcg_row(scores[i], labels[i], ideal[i], True, k, cuts, gains, exponential,
                                                 discount, empty_value, out[i], cand, cand_scores, top_scores, top,
                                                 pref, ipref, buf, columns)
            else:
                bad[i], bad_ideal[i] = _ndcg_row(scores[i], labels[i], ideal[i], False, k, cuts, gains, exponential,
                                                 discount, empty_value, out[i], cand, cand_scores, top_scores, top,
                                                 pref, ipref, buf, columns)


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
_insert_one = _insert_one_py
_insert_top_k = _insert_top_k_py
_tally = _tally_py
_insert_values = _insert_values_py
_gain_of = _gain_of_py
_ideal_prefix = _ideal_prefix_py
_label_stats = _label_stats_py
_first_bad = _first_bad_py
_count_level = _count_level_py
_rank_candidates = _rank_candidates_py
_ndcg_row = _ndcg_row_py
