"""Grader quality and judge calibration: a pure kernel (numpy only), arrays in, arrays out.

* :func:`gold_quality`: per grader, from their answers to gold items (in time order): ``n_gold``,
  exact accuracy, within-one accuracy, mean absolute error, bias (mean signed error), trust, and the
  drift of accuracy between the first and the second half of their gold answers;
* :func:`weighted_kappa`, :func:`confusion_matrix`, :func:`kendall_tau_b`, :func:`tau_ap`,
  :func:`rank_positions`, :func:`judge_agreement` (kappas and leniency with intervals over queries): the
  statistics ``calibrate`` compares an automatic judge with people by;
* :func:`allocate_gold`: which gold items go to which graders (each to ``overlap`` graders, of the
  graders' own queries first, unseen ones first);
* :func:`gold_gaps`: where gold items go in a grader's order (never two in a row, at query-block edges);
* :func:`block_sizes`, :func:`insert_blocks`: the query blocks of a grader's order, and new items put
  into them (or into new blocks between them) without splitting one.

Every input check raises ``ValueError`` naming the function, the rule and the value received.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: the ``trusted`` codes of :class:`GoldQuality`
TRUSTED, UNTRUSTED, UNDECIDED = 1, 0, -1


def _ints(func: str, name: str, values: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{func}: {name} must be one-dimensional, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        as_float = arr.astype(np.float64)
        if not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
            raise ValueError(f"{func}: {name} must hold integers, got {arr[:5].tolist()}...")
    return arr.astype(np.int64)


#: two-sided confidence of the trust and drift intervals: each side is a one-sided 95% bound
TRUST_CONFIDENCE = 0.9
#: gold answers each half needs before drift is tested (halves of 2 flagged drift 21% of the time)
MIN_DRIFT_HALF = 5


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return float(NormalDist().inv_cdf(0.5 + confidence / 2.0))


def wilson_interval(successes: ArrayLike, n: ArrayLike, confidence: float = TRUST_CONFIDENCE
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score interval of a proportion (Wilson 1927), elementwise; NaN where ``n == 0``.

    ``(p + z^2/2n ± z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``z`` the normal quantile of
    ``0.5 + confidence/2``; equals ``statsmodels.stats.proportion.proportion_confint(method="wilson")``.
    """
    k = np.asarray(successes, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    z = _z(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / m
        denom = 1.0 + z * z / m
        centre = (p + z * z / (2 * m)) / denom
        half = z * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / denom
    low: NDArray[np.float64] = np.where(m > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high: NDArray[np.float64] = np.where(m > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


def newcombe_interval(k1: ArrayLike, n1: ArrayLike, k2: ArrayLike, n2: ArrayLike,
                      confidence: float = TRUST_CONFIDENCE) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Newcombe's hybrid score interval (1998, method 10) of ``p1 - p2`` from two Wilson intervals;
    equals ``statsmodels.stats.proportion.confint_proportions_2indep(method="newcomb", compare="diff")``."""
    a1, b1 = np.asarray(k1, dtype=np.float64), np.asarray(n1, dtype=np.float64)
    a2, b2 = np.asarray(k2, dtype=np.float64), np.asarray(n2, dtype=np.float64)
    l1, u1 = wilson_interval(a1, b1, confidence)
    l2, u2 = wilson_interval(a2, b2, confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p2 = a1 / b1, a2 / b2
    d = p1 - p2
    return d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


@dataclass(frozen=True)
class GoldQuality:
    """Per grader (index = grader code), arrays of length ``n_graders``.

    ``n_gold`` answers; ``accuracy`` (answer == expected), ``within_one`` (|error| <= 1), ``mae`` (mean
    |error|), ``bias`` (mean answer - expected: > 0 lenient, < 0 strict), NaN without answers;
    ``accuracy_low`` / ``accuracy_high``: the Wilson interval of the accuracy at ``confidence``;
    ``trusted``: :data:`TRUSTED` when the interval lies at or above ``min_accuracy`` (its lower bound
    ``>= min_accuracy``), :data:`UNTRUSTED` when it lies below (upper bound ``< min_accuracy``),
    :data:`UNDECIDED` when it straddles the threshold or there are no answers;
    ``accuracy_first`` / ``accuracy_second``: accuracy over the first ``n_gold // 2`` and the last
    ``n_gold // 2`` answers in time (the middle answer of an odd count is in neither), NaN below two
    answers; ``drift`` = second - first; ``drift_low`` / ``drift_high``: Newcombe's interval of
    ``drift``; ``drift_flagged``: each half has at least ``min_half`` answers and ``drift_high < 0``
    (a drop, at the one-sided ``(1 + confidence) / 2`` level).
    """

    n_gold: NDArray[np.int64]
    accuracy: NDArray[np.float64]
    within_one: NDArray[np.float64]
    mae: NDArray[np.float64]
    bias: NDArray[np.float64]
    trusted: NDArray[np.int64]
    accuracy_first: NDArray[np.float64]
    accuracy_second: NDArray[np.float64]
    drift: NDArray[np.float64]
    drift_flagged: NDArray[np.bool_]
    accuracy_low: NDArray[np.float64]
    accuracy_high: NDArray[np.float64]
    drift_low: NDArray[np.float64]
    drift_high: NDArray[np.float64]


def _mean_by(grader: NDArray[np.int64], values: NDArray[np.float64], n: int,
             counts: NDArray[np.int64]) -> NDArray[np.float64]:
    sums = np.bincount(grader, weights=values, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: NDArray[np.float64] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return out


def trust_codes(correct: ArrayLike, n: ArrayLike, min_accuracy: float,
                confidence: float = TRUST_CONFIDENCE) -> NDArray[np.int64]:
    """:data:`TRUSTED` / :data:`UNTRUSTED` / :data:`UNDECIDED` from ``correct`` of ``n`` gold answers
    (elementwise): the Wilson interval at or above ``min_accuracy``, below it, or neither."""
    low, high = wilson_interval(correct, n, confidence)
    out = np.full(np.shape(low), UNDECIDED, dtype=np.int64)
    out[np.nan_to_num(low, nan=-1.0) >= min_accuracy] = TRUSTED
    out[np.nan_to_num(high, nan=2.0) < min_accuracy] = UNTRUSTED
    return out


def gold_quality(grader: ArrayLike, answer: ArrayLike, expected: ArrayLike, n_graders: int, *,
                 min_accuracy: float = 0.7, confidence: float = TRUST_CONFIDENCE,
                 min_half: int = MIN_DRIFT_HALF) -> GoldQuality:
    """Gold statistics per grader; ``grader``, ``answer``, ``expected`` are parallel, **in time order**.

    ``grader`` codes are ``0..n_graders-1``. Raises ``ValueError`` for mismatched lengths, codes out of
    range, ``min_accuracy`` outside [0, 1], ``confidence`` outside (0, 1) or ``min_half < 1``.
    """
    f = "gold_quality"
    g = _ints(f, "grader", grader)
    a = _ints(f, "answer", answer)
    e = _ints(f, "expected", expected)
    if not (g.shape == a.shape == e.shape):
        raise ValueError(f"{f}: grader, answer and expected must have one length, got {g.size}, {a.size}, {e.size}")
    if g.size and (g.min() < 0 or g.max() >= n_graders):
        raise ValueError(f"{f}: grader codes must be in 0..{n_graders - 1}, got {int(g.min())}..{int(g.max())}")
    if not 0.0 <= min_accuracy <= 1.0:
        raise ValueError(f"{f}: min_accuracy must be between 0 and 1, got {min_accuracy}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"{f}: confidence must be between 0 and 1, got {confidence}")
    if min_half < 1:
        raise ValueError(f"{f}: min_half must be at least 1, got {min_half}")
    err = (a - e).astype(np.float64)
    counts = np.bincount(g, minlength=n_graders).astype(np.int64)
    correct = (err == 0).astype(np.float64)
    n_correct = np.bincount(g, weights=correct, minlength=n_graders)
    accuracy = _mean_by(g, correct, n_graders, counts)
    within_one = _mean_by(g, (np.abs(err) <= 1).astype(np.float64), n_graders, counts)
    mae = _mean_by(g, np.abs(err), n_graders, counts)
    bias = _mean_by(g, err, n_graders, counts)
    acc_low, acc_high = wilson_interval(n_correct, counts, confidence)
    trusted = trust_codes(n_correct, counts, min_accuracy, confidence)
    # rank of each answer within its grader's answers, in time order (stable sort keeps the order given)
    order = np.argsort(g, kind="stable")
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    rank = np.empty(g.size, dtype=np.int64)
    rank[order] = np.arange(g.size) - np.repeat(starts, counts)
    half = counts // 2
    first = rank < half[g]
    second = rank >= (counts - half)[g]
    k_first = np.bincount(g[first], weights=correct[first], minlength=n_graders)
    k_second = np.bincount(g[second], weights=correct[second], minlength=n_graders)
    acc_first = _mean_by(g[first], correct[first], n_graders, half)
    acc_second = _mean_by(g[second], correct[second], n_graders, half)
    drift = acc_second - acc_first
    drift_low, drift_high = newcombe_interval(k_second, half, k_first, half, confidence)
    flagged = (half >= min_half) & (np.nan_to_num(drift_high, nan=0.0) < 0)
    return GoldQuality(n_gold=counts, accuracy=accuracy, within_one=within_one, mae=mae, bias=bias,
                       trusted=trusted, accuracy_first=acc_first, accuracy_second=acc_second, drift=drift,
                       drift_flagged=flagged, accuracy_low=acc_low, accuracy_high=acc_high, drift_low=drift_low,
                       drift_high=drift_high)


# --- calibration of a judge against people ---------------------------------------------------------


def _paired(func: str, a: ArrayLike, b: ArrayLike, values: ArrayLike) -> tuple[
        NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    x = _ints(func, "a", a)
    y = _ints(func, "b", b)
    dom = np.unique(_ints(func, "values", values))
    if x.shape != y.shape:
        raise ValueError(f"{func}: a and b must have one length, got {x.size} and {y.size}")
    if dom.size == 0:
        raise ValueError(f"{func}: values must name at least one category")
    for name, arr in (("a", x), ("b", y)):
        outside = ~np.isin(arr, dom)
        if outside.any():
            raise ValueError(f"{func}: {name} holds {int(arr[np.flatnonzero(outside)[0]])}, not one of {dom.tolist()}")
    return np.searchsorted(dom, x), np.searchsorted(dom, y), dom


def confusion_matrix(a: ArrayLike, b: ArrayLike, values: ArrayLike) -> NDArray[np.int64]:
    """``(k, k)`` counts: row = category of ``a`` (e.g. people), column = category of ``b`` (the judge),
    categories = the sorted distinct ``values`` (as ``sklearn.metrics.confusion_matrix(a, b, labels=values)``)."""
    i, j, dom = _paired("confusion_matrix", a, b, values)
    k = dom.size
    return np.bincount(i * k + j, minlength=k * k).reshape(k, k).astype(np.int64)


def weighted_kappa(a: ArrayLike, b: ArrayLike, values: ArrayLike, *, weights: str = "quadratic") -> float:
    """Cohen's kappa of two raters with ``weights`` ``"quadratic"`` ((i - j)^2), ``"linear"`` (|i - j|) or
    ``"none"``, over the categories ``values`` (indices i, j of the sorted categories).

    ``kappa = 1 - sum(w * O) / sum(w * E)`` with ``O`` the confusion matrix and ``E`` the outer product
    of its margins over n (Cohen 1968); equals ``sklearn.metrics.cohen_kappa_score(a, b,
    labels=values, weights=...)``. NaN when there are no pairs or ``sum(w * E) == 0`` (one category only).
    """
    _check_weights("weighted_kappa", weights)
    return float(kappa_from_confusion(confusion_matrix(a, b, values), weights=weights))


def _check_weights(func: str, weights: str) -> None:
    if weights not in ("quadratic", "linear", "none"):
        raise ValueError(f"{func}: weights must be quadratic, linear or none, got {weights!r}")


def kendall_tau_b(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's tau-b of two paired samples (ties in either corrected, as ``scipy.stats.kendalltau``).

    ``(C - D) / sqrt((n0 - Tx) (n0 - Ty))`` over all pairs (O(n^2): meant for tens of systems). NaN with
    fewer than two pairs or when either sample is constant. Raises ``ValueError`` for NaN or lengths
    that differ.
    """
    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if xa.shape != ya.shape or xa.ndim != 1:
        raise ValueError(f"kendall_tau_b: x and y must be 1-D of one length, got {xa.shape} and {ya.shape}")
    if np.isnan(xa).any() or np.isnan(ya).any():
        raise ValueError("kendall_tau_b: x and y must not hold NaN")
    if xa.size < 2:
        return float("nan")
    iu = np.triu_indices(xa.size, k=1)
    sx = np.sign(xa[:, None] - xa[None, :])[iu]
    sy = np.sign(ya[:, None] - ya[None, :])[iu]
    n_x = float(np.count_nonzero(sx))
    n_y = float(np.count_nonzero(sy))
    if n_x == 0 or n_y == 0:
        return float("nan")
    return float((sx * sy).sum() / np.sqrt(n_x * n_y))


def rank_positions(values: ArrayLike) -> NDArray[np.int64]:
    """1-based rank of each entry, highest value first; ties share the best rank of their group
    (``[0.5, 0.7, 0.5] -> [2, 1, 2]``)."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or np.isnan(v).any():
        raise ValueError("rank_positions: values must be 1-D without NaN")
    out: NDArray[np.int64] = (1 + (v[None, :] > v[:, None]).sum(axis=1)).astype(np.int64)
    return out


def tau_ap(truth: ArrayLike, estimate: ArrayLike) -> float:
    """AP rank correlation of an estimated ranking with the true one (Yilmaz, Aslam and Robertson 2008),
    both orders highest value first: ``2 / (n - 1) * sum_{i=2..n} C(i) / (i - 1) - 1``, where the items are
    taken in the **estimate's** order and ``C(i)`` counts the items above position ``i`` that the truth
    also puts above it. A swap at the top costs more than one at the bottom (truth A > B > C > D: the
    estimate B, A, C, D gives 1/3, the estimate A, B, D, C gives 7/9; Kendall's tau is 2/3 for both). Not
    symmetric: ``truth`` is the reference (here, the systems' order under people's labels).

    Ties in ``estimate`` are treated as Urbano and Marrero (2017, ``tauAP_a``; the R package ``ircor``)
    do: the expected value over the orders of each tied group. A pair tied in ``truth`` counts as not
    concordant. NaN with fewer than two items; ``ValueError`` for NaN or lengths that differ.
    """
    x = np.asarray(truth, dtype=np.float64)
    y = np.asarray(estimate, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"tau_ap: truth and estimate must be 1-D of one length, got {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("tau_ap: truth and estimate must not hold NaN")
    n = x.size
    if n < 2:
        return float("nan")
    # ascending positions from the top: p = 1 + how many the estimate puts strictly above, t = the tie group's size
    p = 1 + (y[None, :] > y[:, None]).sum(axis=1)
    t = (y[None, :] == y[:, None]).sum(axis=1)
    above = y[None, :] > y[:, None]  # [i, j]: j above i in the estimate
    concordant = above & (x[None, :] > x[:, None])  # ... and above i in the truth too
    c_above = concordant.sum(axis=1).astype(np.float64)
    total = 0.0
    for i in range(n):
        ks = np.arange(1, t[i] + 1, dtype=np.float64)
        if p[i] != 1:
            total += c_above[i] * float(np.mean(1.0 / (p[i] + ks - 2)))
        within = ks[:-1]
        total += float(np.sum(within / (p[i] + within - 1))) / (2 * t[i])
    return float(2.0 * total / (n - 1) - 1.0)


def kappa_from_confusion(confusion: ArrayLike, *, weights: str = "quadratic") -> NDArray[np.float64]:
    """Cohen's kappa of each confusion matrix in ``confusion`` (shape ``(..., k, k)``, counts or weights):
    the formula of :func:`weighted_kappa`; NaN where a matrix is empty or ``sum(w * E) == 0``."""
    _check_weights("kappa_from_confusion", weights)
    obs = np.asarray(confusion, dtype=np.float64)
    k = obs.shape[-1]
    idx = np.arange(k, dtype=np.float64)
    diff = idx[:, None] - idx[None, :]
    w = diff**2 if weights == "quadratic" else (np.abs(diff) if weights == "linear" else (diff != 0).astype(float))
    n = obs.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = obs.sum(axis=-1)[..., :, None] * obs.sum(axis=-2)[..., None, :] / n[..., None, None]
        denom = (w * expected).sum(axis=(-2, -1))
        out = 1.0 - (w * obs).sum(axis=(-2, -1)) / denom
    out = np.where((n > 0) & (denom > 0), out, np.nan)
    return np.asarray(out, dtype=np.float64)


@dataclass
class JudgeAgreement:
    """:func:`judge_agreement`: point values and 95 % bootstrap intervals (over queries) of the label
    statistics of a judge against people; each interval is ``(low, high)``, NaN where undefined."""

    kappa_quadratic: float
    kappa_unweighted: float
    kappa_binary: float
    leniency: float  # mean of judge - human over the pairs (grades): > 0 is a lenient judge
    kappa_quadratic_ci: tuple[float, float]
    kappa_unweighted_ci: tuple[float, float]
    kappa_binary_ci: tuple[float, float]
    leniency_ci: tuple[float, float]
    replicates: int


def _percentile_ci(values: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    ok = values[~np.isnan(values)]
    if ok.size == 0:
        return float("nan"), float("nan")
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(ok, [alpha, 1.0 - alpha])
    return float(low), float(high)


def judge_agreement(human: ArrayLike, judge: ArrayLike, query: ArrayLike, values: ArrayLike, *,
                    relevant_from: int, replicates: int = 1000, confidence: float = 0.95,
                    seed: int = 0) -> JudgeAgreement:
    """Cohen's kappa of ``judge`` against ``human`` (paired grades; ``query``: the query of each pair) on the
    categories ``values``: quadratic-weighted, unweighted, and binarized (relevant = grade >=
    ``relevant_from``, unweighted on the two classes), and the leniency (mean of judge - human), each with
    a percentile bootstrap interval that resamples **queries** with replacement (the pairs of a query stay
    together: a judge's errors cluster by query). ``replicates`` resamples, seeded by ``seed``."""
    i, j, dom = _paired("judge_agreement", human, judge, values)
    q = np.unique(np.asarray(query), return_inverse=True)[1].ravel()
    if q.size != i.size:
        raise ValueError(f"judge_agreement: query must have one entry per pair, got {q.size} for {i.size}")
    if replicates < 1:
        raise ValueError(f"judge_agreement: replicates must be at least 1, got {replicates}")
    k, nq = dom.size, int(q.max()) + 1 if q.size else 0
    per_query = np.zeros((nq, k * k))
    np.add.at(per_query, (q, i * k + j), 1.0)
    binary_of = (dom >= relevant_from).astype(np.int64)
    bin_cells = (binary_of[:, None] * 2 + binary_of[None, :]).ravel()
    per_query_bin = np.zeros((nq, 4))
    for cell in range(4):
        per_query_bin[:, cell] = per_query[:, bin_cells == cell].sum(axis=1)
    diff = (dom[j] - dom[i]).astype(np.float64)
    diff_sum, counts = np.bincount(q, weights=diff, minlength=nq), np.bincount(q, minlength=nq).astype(np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, nq, size=(replicates, nq)) if nq else np.zeros((replicates, 0), np.int64)
    weight = np.zeros((replicates, nq))
    np.add.at(weight, (np.repeat(np.arange(replicates), nq), draws.ravel()), 1.0)
    conf = (weight @ per_query).reshape(replicates, k, k)
    conf_bin = (weight @ per_query_bin).reshape(replicates, 2, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        lenient = (weight @ diff_sum) / (weight @ counts)
    whole = per_query.sum(axis=0).reshape(k, k)
    whole_bin = per_query_bin.sum(axis=0).reshape(2, 2)
    return JudgeAgreement(
        kappa_quadratic=float(kappa_from_confusion(whole)), kappa_unweighted=float(kappa_from_confusion(whole, weights="none")),
        kappa_binary=float(kappa_from_confusion(whole_bin, weights="none")),
        leniency=float(diff.mean()) if diff.size else float("nan"),
        kappa_quadratic_ci=_percentile_ci(kappa_from_confusion(conf), confidence),
        kappa_unweighted_ci=_percentile_ci(kappa_from_confusion(conf, weights="none"), confidence),
        kappa_binary_ci=_percentile_ci(kappa_from_confusion(conf_bin, weights="none"), confidence),
        leniency_ci=_percentile_ci(np.asarray(lenient, dtype=np.float64), confidence), replicates=replicates)


# --- where gold items go in a grader's order -----------------------------------------------------------


def gold_gaps(item_query: ArrayLike, gold_query: ArrayLike, rng: np.random.Generator) -> NDArray[np.int64]:
    """For a grader's ordinary items (``item_query``: the query of each, in the grader's order) and the
    gold items to mix in (``gold_query``), the gap each gold item goes into: gap ``i`` is just before
    ordinary item ``i`` (gap ``n`` after the last).

    Each gap takes at most one gold item, so no two gold items are ever next to each other. A gold
    item of a query the grader sees goes into a gap at the edge or inside that query's block (where
    another document of the query would be); any other goes to an edge between two query blocks (or
    the start or end), where a new query would start. Candidates are drawn at random; when those are
    taken, any free gap. Raises ``ValueError`` when there are more gold items than gaps (``n + 1``).
    """
    q = _ints("gold_gaps", "item_query", item_query)
    gq = _ints("gold_gaps", "gold_query", gold_query)
    n = q.size
    if gq.size > n + 1:
        raise ValueError(f"gold_gaps: {gq.size} gold items do not fit into the {n + 1} gaps of {n} items")
    free = np.ones(n + 1, dtype=bool)
    edges = np.r_[True, q[1:] != q[:-1], True] if n else np.ones(1, dtype=bool)
    out = np.empty(gq.size, dtype=np.int64)
    for k, query in enumerate(gq.tolist()):
        inside = np.flatnonzero(q == query)
        # the gaps from the start to the end of each of the query's items; else the block edges
        candidates = np.unique(np.r_[inside, inside + 1]) if inside.size else np.flatnonzero(edges)
        candidates = candidates[free[candidates]]
        if candidates.size == 0:
            candidates = np.flatnonzero(free)
        gap = int(candidates[rng.integers(candidates.size)])
        free[gap] = False
        out[k] = gap
    return out


def block_sizes(item_query: ArrayLike) -> NDArray[np.int64]:
    """For a grader's items in order (``item_query``: the query of each), the size of the query block
    each item sits in (a block: consecutive items of one query). Empty in, empty out."""
    q = _ints("block_sizes", "item_query", item_query)
    if q.size == 0:
        return np.empty(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    lengths = np.diff(np.r_[starts, q.size])
    out: NDArray[np.int64] = np.repeat(lengths, lengths).astype(np.int64)
    return out


def insert_blocks(item_query: ArrayLike, new_query: ArrayLike,
                  rng: np.random.Generator) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Put new items (``new_query``: the query of each) into a grader's order (``item_query``, where each
    query forms one block). Returns the position of every old item and of every new item in the merged
    order (``0 .. n_old + n_new - 1``); the old items keep their order.

    A new item of a query the order has goes into that query's block (its first block, should a query
    form two), at a random place; the new items of any other query form one new block together, at a
    random edge between two blocks (or the start or the end), and inside it in a random order. No block
    is ever split. Nothing is drawn from ``rng`` when there are no new items.
    """
    q = _ints("insert_blocks", "item_query", item_query)
    nq = _ints("insert_blocks", "new_query", new_query)
    n = q.size
    if nq.size == 0:
        return np.arange(n, dtype=np.int64), np.empty(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if n else np.empty(0, dtype=np.int64)
    ends = np.r_[starts[1:], n] - 1  # the last item of each block
    block_of_query: dict[int, int] = {}
    for b, query in enumerate(q[starts].tolist()):
        block_of_query.setdefault(query, b)
    # sort keys: old block b -> 2b + 1 and a new block at edge e (0..n_blocks) -> 2e; then a per-block
    # tie-break (two new blocks at one edge stay apart); then the place inside the block
    block_key = np.r_[2 * (np.cumsum(np.r_[True, q[1:] != q[:-1]]) - 1) + 1 if n else np.empty(0), np.zeros(nq.size)]
    tie = np.zeros(n + nq.size)
    inner = np.r_[np.arange(n, dtype=np.float64), np.zeros(nq.size)]
    new_blocks: dict[int, tuple[int, float]] = {}
    for k, query in enumerate(nq.tolist()):
        if query in block_of_query:  # uniform over the block's gaps, its two edges included
            b = block_of_query[query]
            block_key[n + k] = 2 * b + 1
            inner[n + k] = rng.uniform(starts[b] - 0.5, ends[b] + 0.5)
            continue
        if query not in new_blocks:
            new_blocks[query] = (2 * int(rng.integers(starts.size + 1)), float(rng.random()))
        block_key[n + k], tie[n + k] = new_blocks[query]
        inner[n + k] = rng.random()
    order = np.lexsort((inner, tie, block_key))
    position = np.empty(n + nq.size, dtype=np.int64)
    position[order] = np.arange(n + nq.size)
    return position[:n], position[n:]


# --- pace of grading ---------------------------------------------------------------------------------


def median_seconds_per_item(grader: ArrayLike, sequence: ArrayLike, seconds: ArrayLike, n_graders: int, *,
                            max_gap: float = 600.0) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per grader: the median number of seconds between two consecutive saved grades, and how many
    such intervals there were.

    ``grader`` (codes ``0..n_graders-1``), ``sequence`` (one code per grader and batch: intervals are
    taken within a sequence only) and ``seconds`` (the time each grade was saved) are parallel, in any
    order. Within a sequence the times are sorted and differenced; an interval longer than ``max_gap``
    seconds is a pause (a break, another task), not the time of an item, and is left out. A grader
    with no interval gets NaN and 0. Raises ``ValueError`` for mismatched lengths, codes out of range,
    non-finite times or a ``max_gap`` that is not positive.
    """
    f = "median_seconds_per_item"
    g = _ints(f, "grader", grader)
    s = _ints(f, "sequence", sequence)
    t = np.asarray(seconds, dtype=np.float64)
    if not (g.shape == s.shape == t.shape):
        raise ValueError(f"{f}: grader, sequence and seconds must have one length, got {g.size}, {s.size}, {t.size}")
    if g.size and (g.min() < 0 or g.max() >= n_graders):
        raise ValueError(f"{f}: grader codes must be in 0..{n_graders - 1}, got {int(g.min())}..{int(g.max())}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{f}: seconds must be finite")
    if not max_gap > 0:
        raise ValueError(f"{f}: max_gap must be positive, got {max_gap}")
    medians = np.full(n_graders, np.nan)
    counts = np.zeros(n_graders, dtype=np.int64)
    if g.size < 2:
        return medians, counts
    order = np.lexsort((t, s))
    g, s, t = g[order], s[order], t[order]
    gaps = np.diff(t)
    keep = (s[1:] == s[:-1]) & (g[1:] == g[:-1]) & (gaps <= max_gap)
    owner, kept = g[1:][keep], gaps[keep]
    for k in np.unique(owner).tolist():
        mine = kept[owner == k]
        medians[k] = float(np.median(mine))
        counts[k] = mine.size
    return medians, counts
def allocate_gold(has_query: ArrayLike, seen: ArrayLike, wanted: ArrayLike, overlap: int,
                  rng: np.random.Generator, gold_query: ArrayLike | None = None
                  ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Give gold items to graders: returns ``(gold, grader)``, one entry per gold assignment.

    ``has_query[g, r]``: gold item ``g``'s query is among grader ``r``'s ordinary items (it then sits in
    that query's block instead of forming a one-document block that gives it away); ``seen[g, r]``:
    grader ``r`` had gold item ``g`` in an earlier batch; ``wanted[r]``: gold items grader ``r`` should get.

    Every gold item used goes to exactly ``overlap`` distinct graders, as every ordinary item does (a
    gold item shared by more graders than the rest would be found by colluding graders), so a grader may
    get one more or fewer than wanted. Gold items are taken one at a time, the best first: the most
    graders still in need who have its query and have not seen it, then who have its query, then who
    have not seen it (ties at random); it goes to the ``overlap`` graders in need ranked the same way
    (those with its query, unseen, most in need first), topped up by graders not in need when fewer
    than ``overlap`` are. Stops when no grader is in need or the gold items run out.

    With ``gold_query`` (the query of each gold item), a grader who has no item of a query and already
    got one gold item of it comes last for another one of it (two would share one block of their own).
    """
    f = "allocate_gold"
    hq = np.asarray(has_query, dtype=bool)
    sn = np.asarray(seen, dtype=bool)
    need = _ints(f, "wanted", wanted).copy()
    if hq.ndim != 2 or hq.shape != sn.shape or hq.shape[1] != need.size:
        raise ValueError(f"{f}: has_query and seen must be (n_gold, n_graders) with n_graders = {need.size}, "
                         f"got {hq.shape} and {sn.shape}")
    n_gold, n_graders = hq.shape
    if not 1 <= overlap <= max(n_graders, 1):
        raise ValueError(f"{f}: overlap must be between 1 and n_graders ({n_graders}), got {overlap}")
    gq = _ints(f, "gold_query", gold_query) if gold_query is not None else np.zeros(n_gold, dtype=np.int64)
    if gq.shape != (n_gold,):
        raise ValueError(f"{f}: gold_query must have one query per gold item ({n_gold}), got {gq.size}")
    given: dict[int, set[int]] = {}  # query -> graders without the query given a gold item of it
    free = np.ones(n_gold, dtype=bool)
    tie = rng.random(n_gold)
    out_gold: list[int] = []
    out_grader: list[int] = []
    while free.any() and (need > 0).any():
        needy = need > 0
        own_fresh = np.minimum((hq & ~sn)[:, needy].sum(axis=1), overlap)
        own = np.minimum(hq[:, needy].sum(axis=1), overlap)
        fresh = np.minimum((~sn)[:, needy].sum(axis=1), overlap)
        score = ((own_fresh * (overlap + 1) + own) * (overlap + 1) + fresh).astype(np.float64) + tie
        score[~free] = -1.0
        g = int(np.argmax(score))
        free[g] = False
        again = np.zeros(n_graders, dtype=bool)
        if gold_query is not None:
            again[list(given.get(int(gq[g]), ()))] = True
        rank = np.lexsort((np.asarray(rng.random(n_graders)), -need, sn[g], ~hq[g], ~needy, again))
        chosen = rank[:overlap]
        if gold_query is not None:
            given.setdefault(int(gq[g]), set()).update(chosen[~hq[g, chosen]].tolist())
        need[chosen] -= 1
        out_gold += [g] * chosen.size
        out_grader += chosen.tolist()
    return np.asarray(out_gold, dtype=np.int64), np.asarray(out_grader, dtype=np.int64)
