"""trec_eval's measures as NumPy array math over ranked relevance lists (one row per query).

The input is :class:`RankedLists`: for each query, the label of the document at each rank (trec_eval's
``results_rel_list``) and how many judged documents the query has at each label (its ``rel_levels``).
Every function below is the vectorised form of one trec_eval 10 ``m_*.c`` loop; the loop it follows is
named in its docstring, and ``tests/trec`` checks them against trec_eval's own outputs and pytrec_eval.

Codes in ``rel``: a label ``>= 0`` is a judged document; :data:`NONPOOL` (-1) a document the qrels do
not name; :data:`UNJUDGED` (-2) a document the qrels name with a negative label ("in the pool, not
judged": never relevant, outside R, skipped by bpref and infAP); NaN the padding past a list's end.
Imports numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling.metrics.dcg import log2_of_ints, running_sum

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

NONPOOL = -1.0
UNJUDGED = -2.0
MIN_GEO_MEAN = 0.00001  # trec_eval.h: the floor of per-query values in gm_map and gm_bpref
INFAP_EPSILON = 0.00001

# Row sums added left to right, as trec_eval's loops add them (metrics.dcg's, for every sum of terms)
seq_sum = running_sum


@dataclass(frozen=True)
class RankedLists:
    """Ranked relevance lists of ``n`` queries.

    ``rel``: ``(n, width)`` label of the document at each rank (codes in the module docstring), NaN
    past ``num_ret[i]``; ``levels``: the distinct labels ``>= 0`` of the judgments, ascending;
    ``level_counts[i, j]``: how many judged documents query ``i`` has at label ``levels[j]``.
    """

    rel: FloatArray
    num_ret: IntArray
    levels: FloatArray
    level_counts: IntArray

    @property
    def n(self) -> int:
        return int(self.rel.shape[0])


def ranked_lists_from_scores(scores: FloatArray, labels: FloatArray, ideal_labels: FloatArray | None = None,
                             ) -> RankedLists:
    """:class:`RankedLists` from score and label matrices (the registry's inputs).

    Rows are ranked by score descending, equal scores in column order; NaN scores pad a row; NaN
    labels are documents without a judgment (:data:`NONPOOL`), negative labels :data:`UNJUDGED`.
    The judgments counted per label are ``ideal_labels`` (every judgment of the query) when given,
    else the row's own labels.
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    present = ~np.isnan(scores)
    order = np.argsort(np.where(present, -scores, np.inf), axis=1, kind="stable")
    ranked = np.take_along_axis(labels, order, axis=1)
    num_ret = present.sum(axis=1).astype(np.int64)
    cols = np.arange(ranked.shape[1])
    code = np.where(np.isnan(ranked), NONPOOL, np.where(ranked < 0, UNJUDGED, ranked))
    rel = np.where(cols[None, :] < num_ret[:, None], code, np.nan)
    judged = labels if ideal_labels is None else np.asarray(ideal_labels, dtype=np.float64)
    rows = np.repeat(np.arange(judged.shape[0], dtype=np.int64), judged.shape[1])
    return RankedLists(rel, num_ret, *level_counts(rows, judged.ravel(), judged.shape[0]))


def distinct(values: npt.ArrayLike) -> npt.NDArray[Any]:
    """The distinct values, ascending (``np.unique`` without its ``np.ma`` check, whose first call
    imports ``numpy.ma``: 7-30 ms of a small ``eval``)."""
    v = np.sort(np.asarray(values).ravel())
    if len(v) < 2:
        return v
    keep = np.empty(len(v), dtype=bool)
    keep[0] = True
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return v[keep]


def level_counts(row: IntArray, labels: FloatArray, n_rows: int) -> tuple[FloatArray, IntArray]:
    """:class:`RankedLists`' ``levels`` and ``level_counts`` from the judgments' rows (-1: a query not
    evaluated) and labels (negative and NaN ones are not counted)."""
    ok = (row >= 0) & (labels >= 0)
    levels = distinct(labels[ok])
    idx = row[ok] * len(levels) + np.searchsorted(levels, labels[ok])
    counts = np.bincount(idx, minlength=n_rows * len(levels)).reshape(n_rows, len(levels))
    return levels, counts.astype(np.int64)


@dataclass
class Context:
    """One query batch at one relevance level, with the intermediate arrays measures share."""

    lists: RankedLists
    relevance_level: float
    num_docs_in_coll: int = 0

    @cached_property
    def is_rel(self) -> BoolArray:
        # Only a judged document (label >= 0) is ever relevant: at a level <= 0 every judged one is.
        # (trec_eval compares the codes too, so at -l -1 it counts documents the qrels do not name.)
        with np.errstate(invalid="ignore"):
            return self.lists.rel >= max(self.relevance_level, 0.0)

    @cached_property
    def rel_so_far(self) -> IntArray:
        """Relevant documents at ranks ``<= j + 1`` (cumulative count along each row)."""
        return np.cumsum(self.is_rel, axis=1, dtype=np.int64)

    @cached_property
    def num_rel(self) -> IntArray:
        """R: judged documents at a label ``>= relevance_level``."""
        keep = self.lists.levels >= self.relevance_level
        return np.asarray(self.lists.level_counts[:, keep].sum(axis=1), dtype=np.int64)

    @cached_property
    def num_nonrel(self) -> IntArray:
        keep = self.lists.levels < self.relevance_level
        return np.asarray(self.lists.level_counts[:, keep].sum(axis=1), dtype=np.int64)

    @cached_property
    def num_rel_ret(self) -> IntArray:
        return np.asarray(self.is_rel.sum(axis=1), dtype=np.int64)

    @cached_property
    def ranks(self) -> FloatArray:
        return np.arange(1, self.lists.rel.shape[1] + 1, dtype=np.float64)

    def rel_in_top(self, k: int) -> IntArray:
        """Relevant documents among the first ``k`` (all of them when a list is shorter)."""
        if self.lists.rel.shape[1] == 0:
            return np.zeros(self.lists.n, dtype=np.int64)
        return self.rel_so_far[:, min(k, self.lists.rel.shape[1]) - 1]

    @cached_property
    def precision_at_rel(self) -> FloatArray:
        """``rel_so_far / rank`` at relevant ranks, 0 elsewhere (the terms of average precision)."""
        return np.where(self.is_rel, self.rel_so_far / self.ranks, 0.0)

    @cached_property
    def interpolated_precision(self) -> FloatArray:
        """max over ranks ``>= j`` of the precision at that rank (-inf past a list's end)."""
        prec = np.where(np.isnan(self.lists.rel), -np.inf, self.rel_so_far / self.ranks)
        return np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]


def _safe_div(num: FloatArray | IntArray, den: FloatArray | IntArray) -> FloatArray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


# --- set and count measures -------------------------------------------------------------------


def counts(ctx: Context, which: str) -> FloatArray:
    """num_ret, num_rel, num_rel_ret, num_nonrel_judged_ret (m_num_*.c)."""
    if which == "num_ret":
        return ctx.lists.num_ret.astype(np.float64)
    if which == "num_rel":
        return ctx.num_rel.astype(np.float64)
    if which == "num_rel_ret":
        return ctx.num_rel_ret.astype(np.float64)
    with np.errstate(invalid="ignore"):
        judged_nonrel = (ctx.lists.rel >= 0) & ~ctx.is_rel
    return np.asarray(judged_nonrel.sum(axis=1), dtype=np.float64)


def set_measure(ctx: Context, which: str, beta: float = 1.0) -> FloatArray:
    """set_P, set_recall, set_relative_P, set_map, set_F (m_set_*.c): the retrieved list as a set."""
    ret, rel, rr = ctx.lists.num_ret, ctx.num_rel, ctx.num_rel_ret
    if which == "set_P":
        return _safe_div(rr, ret)
    if which == "set_recall":
        return _safe_div(rr, rel)
    if which == "set_relative_P":
        return np.where((ret > 0) & (rel > 0), _safe_div(rr, np.minimum(ret, rel)), 0.0)
    if which == "set_map":
        return np.where((ret > 0) & (rel > 0), _safe_div(rr.astype(np.float64) ** 2, ret * rel.astype(np.float64)), 0.0)
    p, r = _safe_div(rr, ret), _safe_div(rr, rel)
    return np.where(rr > 0, _safe_div((beta + 1.0) * p * r, beta * p + r), 0.0)


def utility(ctx: Context, params: tuple[float, ...]) -> FloatArray:
    """m_utility.c: ``a*rel_ret + b*nonrel_ret + c*rel_not_ret + d*nonrel_not_ret``."""
    a, b, c, d = params
    ret, rel, rr = ctx.lists.num_ret, ctx.num_rel, ctx.num_rel_ret
    return np.asarray(a * rr + b * (ret - rr) + c * (rel - rr) + d * (ctx.num_docs_in_coll + rr - ret - rel),
                      dtype=np.float64)


# --- rank measures ----------------------------------------------------------------------------


def average_precision(ctx: Context, cutoffs: tuple[int, ...] | None = None) -> FloatArray:
    """m_map.c (``cutoffs`` None: one column) and m_map_cut.c (one column per cut-off)."""
    terms = ctx.precision_at_rel
    if cutoffs is None:
        return _safe_div(seq_sum(terms), ctx.num_rel)[:, None]
    cum = np.cumsum(terms, axis=1)
    return np.column_stack([_safe_div(_at(cum, k), ctx.num_rel) for k in cutoffs])


def _at(cum: FloatArray | IntArray, k: int) -> FloatArray:
    """``cum[:, k - 1]`` clamped to the width (0 for an empty matrix)."""
    if cum.shape[1] == 0:
        return np.zeros(cum.shape[0])
    return np.asarray(cum[:, min(k, cum.shape[1]) - 1], dtype=np.float64)


def yaap(ctx: Context) -> FloatArray:
    """m_yaap.c: ``log((1 + S) / (1 + R - S))`` with S the sum of precisions at relevant ranks (the
    C library's log)."""
    total = seq_sum(ctx.precision_at_rel)
    ratio = (1.0 + total) / (1.0 + ctx.num_rel.astype(np.float64) - total)
    with np.errstate(invalid="ignore"):
        return np.array([math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan) for x in ratio.tolist()])


def gm(values: FloatArray) -> FloatArray:
    """gm_map / gm_bpref per query: ``log(max(value, MIN_GEO_MEAN))`` (the mean is exp of their mean)."""
    floor = np.maximum(values, MIN_GEO_MEAN)  # the C library's log, as trec_eval (NumPy's SIMD log differs)
    return np.fromiter(map(math.log, floor.ravel().tolist()), dtype=np.float64, count=floor.size).reshape(floor.shape)


def cut_measure(ctx: Context, which: str, cutoffs: tuple[int, ...]) -> FloatArray:
    """P, recall, relative_P, success, unj at each cut-off (m_P.c, m_recall.c, m_rel_P.c,
    m_success.c, m_unjudged.c)."""
    cols = []
    if which == "unj":
        with np.errstate(invalid="ignore"):
            unj = np.cumsum(ctx.lists.rel < 0, axis=1, dtype=np.int64)
        return np.column_stack([_at(unj, k) / k for k in cutoffs])
    for k in cutoffs:
        found = ctx.rel_in_top(k).astype(np.float64)
        if which == "P":
            cols.append(found / k)
        elif which == "recall":
            cols.append(_safe_div(found, ctx.num_rel))
        elif which == "relative_P":
            cols.append(_safe_div(found, np.minimum(ctx.num_rel, k)))
        else:  # success
            cols.append((found > 0).astype(np.float64))
    return np.column_stack(cols)


def recip_rank(ctx: Context) -> FloatArray:
    """m_recip_rank.c: 1 / rank of the first relevant document, 0 without one."""
    first = np.argmax(ctx.is_rel, axis=1)
    return np.where(ctx.num_rel_ret > 0, 1.0 / (first + 1.0), 0.0)


def rprec(ctx: Context) -> FloatArray:
    """m_Rprec.c: precision at rank R (R = num_rel; a shorter list counts what it has)."""
    found = _gather(ctx.rel_so_far, np.minimum(ctx.num_rel, ctx.lists.num_ret))
    return np.where(np.minimum(ctx.num_rel, ctx.lists.num_ret) > 0, _safe_div(found, ctx.num_rel), 0.0)


def _gather(cum: IntArray | FloatArray, k: IntArray) -> FloatArray:
    """Per row ``cum[i, k[i] - 1]``, 0 where ``k[i] <= 0``; ``k`` clamped to the width."""
    if cum.shape[1] == 0:
        return np.zeros(cum.shape[0])
    idx = np.clip(k - 1, 0, cum.shape[1] - 1)
    got = np.take_along_axis(cum, idx[:, None], axis=1)[:, 0].astype(np.float64)
    return np.where(k > 0, got, 0.0)


def rprec_mult(ctx: Context, multiples: tuple[float, ...]) -> FloatArray:
    """m_Rprec_mult.c: precision at rank ``(long)(m * R + 0.9)`` for each multiple ``m``."""
    cols = []
    for m in multiples:
        cut = np.trunc(m * ctx.num_rel + 0.9).astype(np.int64)
        found = _gather(ctx.rel_so_far, np.minimum(cut, ctx.lists.num_ret))
        cols.append(np.where(cut > 0, _safe_div(found, cut), 0.0))
    return np.column_stack(cols)


def iprec_at_recall(ctx: Context, recalls: tuple[float, ...]) -> FloatArray:
    """m_iprec_at_recall.c: interpolated precision at recall ``r`` = the best precision at or after
    the rank where ``lround(r * R)`` relevant documents have been seen; 0 when fewer are retrieved,
    NaN (as trec_eval) for a need of 0 over an empty list."""
    ip = ctx.interpolated_precision
    cols = []
    for r in recalls:
        need = np.floor(r * ctx.num_rel + 0.5).astype(np.int64)  # lround for r * R >= 0
        # First rank holding the need-th relevant document (need 0: the top).
        pos = (ctx.rel_so_far < np.maximum(need, 1)[:, None]).sum(axis=1)
        got = _gather(ip, pos + 1) if ip.shape[1] else np.zeros(ctx.lists.n)
        ok = need <= ctx.num_rel_ret
        # An empty list (-J with nothing judged retrieved) divides 0 by 0 in trec_eval: NaN.
        value = np.where(ctx.lists.num_ret > 0, np.maximum(got, 0.0), np.nan)
        cols.append(np.where(ok, value, 0.0))
    return np.column_stack(cols)


def bpref_and_infap(ctx: Context, which: str) -> FloatArray:
    """m_bpref.c and m_infap.c: judged documents only (unjudged and unpooled ones are skipped)."""
    rel = ctx.lists.rel
    with np.errstate(invalid="ignore"):
        judged_nonrel = (rel >= 0) & ~ctx.is_rel
        pooled_unjudged = rel == UNJUDGED
    nonrel_before = np.cumsum(judged_nonrel, axis=1, dtype=np.int64)  # a relevant rank adds none
    R = ctx.num_rel[:, None]
    if which == "bpref":
        denom = np.minimum(ctx.num_nonrel[:, None], R)
        frac = 1.0 - _safe_div(np.minimum(nonrel_before, R), denom)
        terms = np.where(ctx.is_rel, np.where(nonrel_before > 0, frac, 1.0), 0.0)
        return _safe_div(seq_sum(terms), ctx.num_rel)
    j = np.arange(rel.shape[1], dtype=np.float64)[None, :]
    rel_before = ctx.rel_so_far - 1
    unj_before = np.cumsum(pooled_unjudged, axis=1, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_before + nonrel_before + unj_before) / j) * (
            (rel_before + INFAP_EPSILON) / (rel_before + nonrel_before + 2 * INFAP_EPSILON))
    terms = np.where(ctx.is_rel, np.where(j == 0, 1.0, later), 0.0)
    return _safe_div(seq_sum(terms), ctx.num_rel)


def bin_g(ctx: Context) -> FloatArray:
    """m_binG.c: each relevant document at rank ``i`` (0-based, k-th relevant) adds
    ``1 / log2(3 + i - k)``; divided by R."""
    j = np.arange(ctx.lists.rel.shape[1], dtype=np.int64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(ctx.is_rel, 1.0 / log2_of_ints(3 + j - ctx.rel_so_far), 0.0)
    return np.where(ctx.num_rel_ret > 0, _safe_div(seq_sum(terms), ctx.num_rel), 0.0)


def rbp_resid(ctx: Context, p: float) -> FloatArray:
    """m_rbp_resid.c: ``p^num_ret + (1 - p) * sum of p^i over unjudged ranks i``, 0 when none is."""
    with np.errstate(invalid="ignore"):
        unj = ctx.lists.rel < 0
    powers = rbp_powers(p, ctx.lists.rel.shape[1] + 1)
    total = seq_sum(np.where(unj, powers[None, :-1], 0.0))
    return np.where(unj.any(axis=1), powers[ctx.lists.num_ret] + (1 - p) * total, 0.0)


def rbp_powers(p: float, n: int) -> FloatArray:
    """``p^0 .. p^(n-1)`` as trec_eval's ``cur_p = cur_p * p`` makes them (one product at a time)."""
    return np.asarray(np.cumprod(np.concatenate(([1.0], np.full(max(n - 1, 0), p)))), dtype=np.float64)


def relstring(ctx: Context, length: int) -> list[str]:
    """m_relstring.c: the labels of the first ``length`` documents, one character each."""
    return ["".join(">" if v > 9 else str(int(v)) if v >= 0 else "-" if v == NONPOOL else "."
                    for v in row[: min(length, int(n))])
            for row, n in zip(ctx.lists.rel, ctx.lists.num_ret, strict=True)]


# gains: see _trec_gains.py


def gain_table(ctx: Context, pairs: Mapping[float, float]) -> tuple[FloatArray, FloatArray]:
    """Labels with a gain (ascending) and their gains: every judged label at its own value unless
    ``pairs`` (trec_eval's ``label=gain`` parameters) says otherwise; pairs may name other labels."""
    keys = distinct(np.concatenate((ctx.lists.levels, np.array(sorted(pairs), dtype=np.float64))))
    gains = np.array([pairs.get(float(k), float(k)) for k in keys], dtype=np.float64)
    return keys, gains
