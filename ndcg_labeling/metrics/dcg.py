"""The package's one DCG: the discount, the gains and the rank-by-rank sums every NDCG is made of.

``DCG = sum over ranks r = 1.. of gain(label_r) / log2(r + 1)``, each term a division by the C
library's ``log2`` (as trec_eval's ``m_ndcg*.c`` divide; NumPy's SIMD ``log2`` differs from it in
the last bit for some ranks), added one rank at a time, left to right (as trec_eval's loops add
them: a row's sum does not depend on the other rows, on the width of the batch or on trailing
zeros). ``report``, ``eval``, ``batch_ndcg`` (NumPy, and its compiled and torch twins, which take
:func:`log2_ranks` as an array and do the same division and the same order), calibration, budget
and the online kernels all compute DCG through this module; ``tests/metrics/test_one_dcg.py``
checks that no other module computes a ``log2``. Imports numpy only.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@lru_cache(maxsize=8)
def _log2_table(n: int) -> FloatArray:
    table = np.array([-math.inf, *map(math.log2, range(1, n))], dtype=np.float64)
    table.flags.writeable = False
    return table


def log2_of_ints(k: npt.ArrayLike) -> FloatArray:
    """``log2(k)`` for integers ``k >= 1`` (``-inf`` for 0), from the C library as trec_eval calls it."""
    k = np.asarray(k, dtype=np.int64)
    top = int(k.max()) + 1 if k.size else 2
    return np.asarray(_log2_table(1 << max(top - 1, 1).bit_length())[np.maximum(k, 0)], dtype=np.float64)


def libm_log2(x: npt.ArrayLike) -> FloatArray:
    """``log2`` of any doubles through the C library (``math.log2``), one call per element."""
    x = np.asarray(x, dtype=np.float64)
    return np.fromiter(map(math.log2, x.ravel().tolist()), dtype=np.float64, count=x.size).reshape(x.shape)


def log2_ranks(width: int) -> FloatArray:
    """``log2(r + 1)`` for ranks ``r = 1..width``: every DCG term is a gain divided by it."""
    return log2_of_ints(np.arange(2, width + 2, dtype=np.int64))


def discount(ranks: npt.ArrayLike) -> FloatArray:
    """``1 / log2(r + 1)`` at 1-based ``ranks`` (the weight of a document at rank ``r``; 0 for ranks < 1)."""
    r = np.asarray(ranks, dtype=np.int64)
    with np.errstate(divide="ignore"):
        out = 1.0 / log2_of_ints(r + 1)
    return np.where(r >= 1, out, 0.0)


def exp_gain(labels: FloatArray) -> FloatArray:
    """``2^label - 1``: exact for integer labels; the C library's ``pow`` for the others (NumPy's SIMD
    ``exp2`` can differ in the last bit, and a label must get one gain wherever it is ranked)."""
    labels = np.asarray(labels, dtype=np.float64)
    out = np.exp2(labels) - 1.0
    odd = labels != np.floor(labels)
    if odd.any():
        values, where = np.unique(labels[odd], return_inverse=True)
        out[odd] = np.array([math.pow(2.0, v) - 1.0 for v in values.tolist()])[where.ravel()]
    return np.asarray(out, dtype=np.float64)


def gains(labels: npt.ArrayLike, gain: str) -> FloatArray:
    """The gain of each label: ``2^label - 1`` (``"exponential"``) or the label (``"linear"``); a label
    that is NaN (unjudged, padding), negative or infinite gains 0."""
    lab = np.asarray(labels, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(lab) & (lab > 0)
    g = np.where(ok, lab, 0.0)
    return np.where(ok, exp_gain(g), 0.0) if gain == "exponential" else g


def running_sum(terms: FloatArray) -> FloatArray:
    """Row sums added one term at a time, left to right (NumPy's pairwise ``sum`` differs in the last
    bits: enough to move a printed 4th decimal on a tie such as 0.34375). Zero terms change nothing."""
    if terms.shape[1] == 0:
        return np.zeros(terms.shape[0])
    return np.asarray(np.cumsum(terms, axis=1)[:, -1], dtype=np.float64)


def dcg_terms(ranked_gains: FloatArray) -> FloatArray:
    """``(n, width)``: ``gain / log2(r + 1)`` of the document at each rank (0 where the gain is 0)."""
    return np.asarray(ranked_gains / log2_ranks(ranked_gains.shape[1])[None, :], dtype=np.float64)


def cumulative_dcg(ranked_gains: FloatArray) -> FloatArray:
    """``(n, width)``: DCG of the first ``j + 1`` ranks of each row."""
    return np.asarray(np.cumsum(dcg_terms(ranked_gains), axis=1), dtype=np.float64)


def dcg(ranked_gains: FloatArray) -> FloatArray:
    """``(n,)``: DCG of each row of gains in rank order (cut the columns for DCG@k)."""
    return running_sum(dcg_terms(ranked_gains))


def ideal_dcg(label_rows: FloatArray, k: int | None, gain: str) -> FloatArray:
    """``(n,)``: ideal DCG at cut-off ``k`` (None: all) of each row's labels (NaN padding), the gains
    sorted descending."""
    g = -np.sort(-gains(label_rows, gain), axis=1)
    return dcg(g if k is None else g[:, :k])
