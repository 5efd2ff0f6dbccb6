"""trec_eval's gain-based measures (ndcg, dcg, ideal_dcg, ndcg_cut, ndcg_rel, Rndcg, G, rbp) as
NumPy array math over :class:`~ndcg_labeling.metrics._trec_kernels.RankedLists`.

Gains follow trec_eval's ``setup_gains``: a label's gain is the label itself unless a ``label=gain``
parameter says otherwise. The ideal list takes the judged documents by gain descending and stops at
the first gain that is not positive. Equal gains of different labels form one group (trec_eval's
comparator truncates gain differences to integers, so its order of gains less than 1 apart is
unspecified; ours is exact).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

import numpy as np

from ndcg_labeling.metrics._trec_kernels import Context, FloatArray, IntArray, _safe_div, distinct, gain_table


@lru_cache(maxsize=8)
def _discount_table(n: int) -> FloatArray:
    """``D[k] = sum of 1 / log2(i + 2) for i < k`` for k = 0..n."""
    return np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0))))


def _discounts(width: int) -> FloatArray:
    return 1.0 / np.log2(np.arange(width, dtype=np.float64) + 2.0)


def results_gains(ctx: Context, pairs: Mapping[float, float], positive_labels_only: bool = False) -> FloatArray:
    """The gain of the document at each rank (0 for unjudged documents and padding)."""
    rel = ctx.lists.rel
    if positive_labels_only:  # ndcg_cut: the label itself, when positive
        with np.errstate(invalid="ignore"):
            return np.where(rel > 0, rel, 0.0)
    keys, gains = gain_table(ctx, pairs)
    if not len(keys):
        return np.zeros(rel.shape)
    safe = np.where(np.isnan(rel), keys[0] - 1.0, rel)
    idx = np.clip(np.searchsorted(keys, safe), 0, len(keys) - 1)
    return np.where(keys[idx] == safe, gains[idx], 0.0)


def ideal_groups(ctx: Context, pairs: Mapping[float, float]) -> tuple[FloatArray, IntArray]:
    """Positive gains, descending, and per query the cumulative count of judged documents up to and
    including each gain: ``(gains (G,), cum (n, G))``."""
    levels = ctx.lists.levels
    level_gains = np.array([pairs.get(float(v), float(v)) for v in levels], dtype=np.float64)
    positive = distinct(level_gains[level_gains > 0])[::-1]
    counts = np.zeros((ctx.lists.n, len(positive)), dtype=np.int64)
    for g, gain in enumerate(positive):
        counts[:, g] = ctx.lists.level_counts[:, level_gains == gain].sum(axis=1)
    return positive, np.cumsum(counts, axis=1)


def ideal_dcg_before(gains: FloatArray, cum: IntArray, m: IntArray | int) -> FloatArray:
    """Ideal DCG of the first ``m`` ranks (``m`` per query or one for all)."""
    total = int(cum[:, -1].max()) if cum.size else 0
    limit = np.asarray(m, dtype=np.int64)
    if limit.ndim == 0:
        limit = np.full(cum.shape[0], int(limit), dtype=np.int64)
    table = _discount_table(max(total, 1))
    out = np.zeros(cum.shape[0])
    before = np.zeros(cum.shape[0], dtype=np.int64)
    for g in range(len(gains)):
        hi = np.minimum(np.minimum(cum[:, g], limit), total)
        lo = np.minimum(np.minimum(before, limit), total)
        out += gains[g] * (table[hi] - table[lo])
        before = cum[:, g]
    return out


def ideal_gain_at_ranks(gains: FloatArray, cum: IntArray, width: int) -> FloatArray:
    """``(n, width)``: the ideal list's gain at each rank, 0 past its positive part."""
    ranks = np.arange(width)[None, :]
    out = np.zeros((cum.shape[0], width))
    before = np.zeros((cum.shape[0], 1), dtype=np.int64)
    for g in range(len(gains)):
        hi = cum[:, g : g + 1]
        out[(ranks >= before) & (ranks < hi)] = gains[g]
        before = hi
    return out


def ndcg_family(ctx: Context, which: str, pairs: Mapping[float, float]) -> FloatArray:
    """m_ndcg.c: ``ndcg``, ``dcg`` and ``ideal_dcg`` over the whole list; the ideal uses every
    judged document, retrieved or not."""
    dcg = np.asarray((results_gains(ctx, pairs) * _discounts(ctx.lists.rel.shape[1])[None, :]).sum(axis=1),
                     dtype=np.float64)
    if which == "dcg":
        return dcg
    gains, cum = ideal_groups(ctx, pairs)
    ideal = ideal_dcg_before(gains, cum, np.iinfo(np.int64).max // 4)
    return ideal if which == "ideal_dcg" else _safe_div(dcg, ideal)


def ndcg_cut(ctx: Context, cutoffs: tuple[int, ...]) -> FloatArray:
    """m_ndcg_cut.c: DCG and ideal DCG both cut at K; gains are the labels (no parameters)."""
    cum_dcg = np.cumsum(results_gains(ctx, {}, positive_labels_only=True) * _discounts(ctx.lists.rel.shape[1]),
                        axis=1)
    gains, cum = ideal_groups(ctx, {})
    cols = []
    for k in cutoffs:
        dcg = cum_dcg[:, min(k, cum_dcg.shape[1]) - 1] if cum_dcg.shape[1] else np.zeros(ctx.lists.n)
        ideal = ideal_dcg_before(gains, cum, k)
        cols.append(np.where(ideal > 0, _safe_div(dcg, ideal), dcg))
    return np.column_stack(cols)


def ndcg_rel(ctx: Context, pairs: Mapping[float, float]) -> FloatArray:
    """m_ndcg_rel.c: NDCG averaged over the ranks of the documents with a positive gain; each one
    not retrieved adds the final DCG over the full ideal DCG."""
    width = ctx.lists.rel.shape[1]
    rg = results_gains(ctx, pairs)
    dcg_cum = np.cumsum(rg * _discounts(width), axis=1)
    gains, cum = ideal_groups(ctx, pairs)
    ideal_cum = _ideal_cum(gains, cum, width)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = np.where(rg > 0, dcg_cum / ideal_cum, 0.0).sum(axis=1)
        n_pos = cum[:, -1] if cum.size else np.zeros(ctx.lists.n, dtype=np.int64)
        final_dcg = dcg_cum[:, -1] if width else np.zeros(ctx.lists.n)
        full = ideal_dcg_before(gains, cum, np.iinfo(np.int64).max // 4)
        total = total + (n_pos - (rg > 0).sum(axis=1)) * final_dcg / full
        return np.where(total > 0, total / n_pos, 0.0)


def _ideal_cum(gains: FloatArray, cum: IntArray, width: int) -> FloatArray:
    """``(n, width)``: ideal DCG of the first ``j + 1`` ranks."""
    return np.cumsum(ideal_gain_at_ranks(gains, cum, width) * _discounts(width), axis=1)


def rndcg(ctx: Context, pairs: Mapping[float, float]) -> FloatArray:
    """m_Rndcg.c: NDCG averaged at the R-level boundaries (the ranks where the ideal gain changes);
    trec_eval adds NDCG at the end of the list only when the list is longer than the positive ideal
    list plus one. NaN where no boundary has a positive ideal DCG (trec_eval prints nan there too)."""
    width = ctx.lists.rel.shape[1]
    num_ret = ctx.lists.num_ret
    dcg_cum = np.cumsum(results_gains(ctx, pairs) * _discounts(width), axis=1)
    gains, cum = ideal_groups(ctx, pairs)

    def dcg_before(m: IntArray) -> FloatArray:
        if not width:
            return np.zeros(ctx.lists.n)
        idx = np.clip(m - 1, 0, width - 1)
        return np.where(m > 0, np.take_along_axis(dcg_cum, idx[:, None], axis=1)[:, 0], 0.0)

    total = np.zeros(ctx.lists.n)
    count = np.zeros(ctx.lists.n)
    before = np.zeros(ctx.lists.n, dtype=np.int64)
    for g in range(len(gains)):
        b = cum[:, g]
        new = b > before
        ideal = ideal_dcg_before(gains, cum, b)
        ratio = _safe_div(dcg_before(np.minimum(b, num_ret)), ideal)
        total += np.where(new & (ideal > 0), ratio, 0.0)
        count += new & (ideal > 0)
        before = np.maximum(before, b)
    n_pos = cum[:, -1] if cum.size else np.zeros(ctx.lists.n, dtype=np.int64)
    full = ideal_dcg_before(gains, cum, np.iinfo(np.int64).max // 4)
    tail = (n_pos + 1 < num_ret) & (full > 0)
    total += np.where(tail, _safe_div(dcg_before(num_ret), full), 0.0)
    count += tail
    with np.errstate(invalid="ignore", divide="ignore"):
        value = total / count
    return np.where(ctx.num_rel == 0, 0.0, value)


def g_measure(ctx: Context, pairs: Mapping[float, float]) -> FloatArray:
    """m_G.c: gain over a cost that grows by ``max(ideal gain, 1)`` per rank."""
    width = ctx.lists.rel.shape[1]
    rg = results_gains(ctx, pairs)
    gains, cum = ideal_groups(ctx, pairs)
    cost = np.cumsum(np.maximum(ideal_gain_at_ranks(gains, cum, width), 1.0), axis=1)
    got = np.cumsum(rg, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(rg != 0, rg / np.log2(2.0 + cost - got), 0.0)
    sum_ideal = (gains[None, :] * np.diff(np.concatenate((np.zeros((ctx.lists.n, 1), dtype=np.int64), cum), axis=1),
                                          axis=1)).sum(axis=1) if cum.size else np.zeros(ctx.lists.n)
    return _safe_div(terms.sum(axis=1), sum_ideal)


def rbp(ctx: Context, pairs: Mapping[float, float], p: float) -> FloatArray:
    """m_rbp.c: rank-biased precision ``(1 - p) * sum of gain_i * p^i``; gains outside [0, 1] are
    rescaled per query to ``(gain - min) / (max - min)`` over the gains of the labels 0..the query's
    highest judged label and the ``label=gain`` parameters (trec_eval 10 reads its min and max
    uninitialised; we start them from those gains)."""
    rel = ctx.lists.rel
    width = rel.shape[1]
    rg = results_gains(ctx, pairs)
    has = ctx.lists.level_counts > 0
    top = np.where(has.any(axis=1), ctx.lists.levels[np.where(has, np.arange(has.shape[1]), -1).max(axis=1)], -1.0)
    pair_gains = np.array(list(pairs.values()), dtype=np.float64)
    lo = np.full(ctx.lists.n, pair_gains.min() if len(pair_gains) else np.inf)
    hi = np.full(ctx.lists.n, pair_gains.max() if len(pair_gains) else -np.inf)
    top_int = int(np.floor(top.max())) if len(top) else -1
    for level in range(max(top_int, -1) + 1):
        if float(level) in pairs:
            continue
        inside = level <= top
        lo = np.where(inside, np.minimum(lo, level), lo)
        hi = np.where(inside, np.maximum(hi, level), hi)
    for level in ctx.lists.levels:  # non-integer labels (consensus means) count with their own gain
        if float(level) not in pairs and level != np.floor(level):
            inside = ctx.lists.level_counts[:, ctx.lists.levels == level][:, 0] > 0
            lo = np.where(inside, np.minimum(lo, level), lo)
            hi = np.where(inside, np.maximum(hi, level), hi)
    rescale = ((lo < 0) | (hi > 1)) & (hi > lo)
    with np.errstate(invalid="ignore"):
        in_table = ~np.isnan(rel) & ((rel >= 0) | np.isin(rel, list(pairs)))
    scaled = np.where(rescale[:, None] & in_table, (rg - lo[:, None]) / np.where(rescale, hi - lo, 1.0)[:, None], rg)
    powers = p ** np.arange(width, dtype=np.float64)
    return np.asarray((1.0 - p) * (np.where(np.isnan(rel), 0.0, scaled) * powers[None, :]).sum(axis=1), dtype=np.float64)
