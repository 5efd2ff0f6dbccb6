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

import numpy as np

from ndcg_labeling.metrics import dcg as _dcg
from ndcg_labeling.metrics._trec_kernels import (
    Context,
    FloatArray,
    IntArray,
    RankedLists,
    _safe_div,
    distinct,
    gain_table,
    rbp_powers,
    seq_sum,
)
from ndcg_labeling.metrics._validation import Ranking
from ndcg_labeling.metrics.dcg import libm_log2

_WHOLE = np.iinfo(np.int64).max // 4  # a cut-off past every list


def results_gains(ctx: Context, pairs: Mapping[float, float]) -> FloatArray:
    """The gain of the document at each rank (0 for unjudged documents and padding)."""
    rel = ctx.lists.rel
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


def ideal_dcg_before(gains: FloatArray, cum: IntArray, m: IntArray | int, *, discount: bool = True) -> FloatArray:
    """Ideal DCG of the first ``m`` ranks (``m`` per query or one for all), added one rank at a time
    as trec_eval does; ``discount=False``: the sum of the ideal gains (m_G.c's ``sum_ideal``)."""
    n = cum.shape[0]
    total = cum[:, -1] if cum.size else np.zeros(n, dtype=np.int64)
    stop = np.minimum(np.broadcast_to(np.asarray(m, dtype=np.int64), (n,)), total)
    out = np.zeros(n)
    block = 512
    for start in range(0, int(stop.max()) if n else 0, block):
        rows = np.flatnonzero(stop > start)
        ranks = np.arange(start, min(start + block, int(stop[rows].max())), dtype=np.int64)
        terms = _ideal_block(gains, cum[rows], ranks)
        if discount:
            terms = terms / _dcg.log2_ranks(int(ranks[-1]) + 1)[None, ranks]
        terms = np.where(ranks[None, :] < stop[rows, None], terms, 0.0)
        terms[:, 0] += out[rows]
        out[rows] = np.cumsum(terms, axis=1)[:, -1]
    return out


def _ideal_block(gains: FloatArray, cum: IntArray, ranks: IntArray) -> FloatArray:
    """``(rows, len(ranks))``: the ideal list's gain at each of ``ranks``, 0 past its positive part."""
    out = np.zeros((cum.shape[0], len(ranks)))
    before = np.zeros((cum.shape[0], 1), dtype=np.int64)
    for g in range(len(gains)):
        hi = cum[:, g : g + 1]
        out[(ranks[None, :] >= before) & (ranks[None, :] < hi)] = gains[g]
        before = hi
    return out


def ndcg_family(ctx: Context, which: str, pairs: Mapping[float, float]) -> FloatArray:
    """m_ndcg.c: ``ndcg``, ``dcg`` and ``ideal_dcg`` over the whole list; the ideal uses every
    judged document, retrieved or not."""
    dcg = _dcg.dcg(results_gains(ctx, pairs))
    if which == "dcg":
        return dcg
    gains, cum = ideal_groups(ctx, pairs)
    ideal = ideal_dcg_before(gains, cum, _WHOLE)
    return ideal if which == "ideal_dcg" else _safe_div(dcg, ideal)


def ndcg_cut(ctx: Context, cutoffs: tuple[int, ...]) -> FloatArray:
    """m_ndcg_cut.c: DCG and ideal DCG both cut at K; gains are the labels (no parameters). The
    registry's NDCG kernel over :func:`ranking` (an ideal DCG of 0 comes with a DCG of 0: 0)."""
    from ndcg_labeling.metrics import _core  # not at import: eval's start does without the backend policy

    r = ranking(ctx.lists, max(cutoffs), "ndcg_cut")
    return np.column_stack([_core.ndcg_from_ranking(r, k, "linear", "zero") for k in cutoffs])


def ranking(lists: RankedLists, k_max: int | None, func: str) -> Ranking:
    """The ranked lists as the :class:`Ranking` every registry kernel reads (``batch_ndcg``'s, so
    ``report`` and ``eval`` score with the same code as the library API): the labels of the first
    ``k_max`` ranks (None: all; documents without a judgment, or with a negative label, as NaN), which
    ranks hold a document, the query's judged labels descending (every judgment, retrieved or not) and
    R at any threshold from the label counts."""
    rel = lists.rel
    k_rank = rel.shape[1] if k_max is None else max(1, min(k_max, rel.shape[1]))
    with np.errstate(invalid="ignore"):
        ranked = np.where(rel[:, :k_rank] >= 0, rel[:, :k_rank], np.nan)
    levels, cum = ideal_groups(Context(lists, 0.0), {})
    longest = int(cum[:, -1].max()) if cum.size and lists.n else 0
    k_ideal = max(1, longest if k_max is None else min(k_max, longest))

    def n_relevant(threshold: float) -> FloatArray:
        return np.asarray(lists.level_counts[:, lists.levels >= threshold].sum(axis=1), dtype=np.float64)

    return Ranking(np, ranked, ~np.isnan(rel[:, :k_rank]), _ideal_block(levels, cum, np.arange(k_ideal)),
                   n_relevant, _dcg.log2_ranks(max(k_rank, k_ideal)), rel.shape[1], func)


def ndcg_rel(ctx: Context, pairs: Mapping[float, float]) -> FloatArray:
    """m_ndcg_rel.c: NDCG averaged over the ranks of the documents with a positive gain; each one
    not retrieved adds the final DCG over the full ideal DCG."""
    width = ctx.lists.rel.shape[1]
    rg = results_gains(ctx, pairs)
    dcg_cum = _dcg.cumulative_dcg(rg)
    gains, cum = ideal_groups(ctx, pairs)
    ideal_cum = _dcg.cumulative_dcg(_ideal_block(gains, cum, np.arange(width, dtype=np.int64)))
    with np.errstate(divide="ignore", invalid="ignore"):
        total = seq_sum(np.where(rg > 0, dcg_cum / ideal_cum, 0.0))
        n_pos = cum[:, -1] if cum.size else np.zeros(ctx.lists.n, dtype=np.int64)
        final_dcg = dcg_cum[:, -1] if width else np.zeros(ctx.lists.n)
        full = ideal_dcg_before(gains, cum, _WHOLE)
        total = total + (n_pos - (rg > 0).sum(axis=1)) * final_dcg / full
        return np.where(total > 0, total / n_pos, 0.0)


def rndcg(ctx: Context, pairs: Mapping[float, float]) -> FloatArray:
    """m_Rndcg.c: NDCG averaged at the R-level boundaries (the ranks where the ideal gain changes);
    trec_eval adds NDCG at the end of the list only when the list is longer than the positive ideal
    list plus one. NaN where no boundary has a positive ideal DCG (trec_eval prints nan there too)."""
    width = ctx.lists.rel.shape[1]
    num_ret = ctx.lists.num_ret
    dcg_cum = _dcg.cumulative_dcg(results_gains(ctx, pairs))
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
    full = ideal_dcg_before(gains, cum, _WHOLE)
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
    cost = np.cumsum(np.maximum(_ideal_block(gains, cum, np.arange(width, dtype=np.int64)), 1.0), axis=1)
    got = np.cumsum(rg, axis=1)
    terms = np.zeros(rg.shape)
    at = rg != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms[at] = rg[at] / libm_log2(2.0 + cost[at] - got[at])
    sum_ideal = ideal_dcg_before(gains, cum, _WHOLE, discount=False)
    return _safe_div(seq_sum(terms), sum_ideal)


def rbp(ctx: Context, pairs: Mapping[float, float], p: float) -> FloatArray:
    """m_rbp.c: rank-biased precision ``(1 - p) * sum of gain_i * p^i``; gains outside [0, 1] are
    rescaled per query to ``(gain - min) / (max - min)`` over the gains of the labels 0..the query's
    highest judged label and the ``label=gain`` parameters (trec_eval 10 reads its min and max
    uninitialised; we start them from those gains)."""
    rel = ctx.lists.rel
    width = rel.shape[1]
    rg = results_gains(ctx, pairs)
    has = ctx.lists.level_counts > 0
    top = np.full(ctx.lists.n, -1.0)
    if has.shape[1]:  # no judged label at all (every label negative): no label has a gain
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
    powers = rbp_powers(p, width)
    with np.errstate(invalid="ignore"):
        terms = np.where(np.isnan(rel) | (scaled == 0), 0.0, scaled * powers[None, :])
    return (1.0 - p) * seq_sum(terms)
