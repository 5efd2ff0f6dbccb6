"""NDCG and AP from a partly judged pool: the plain value (unjudged = not relevant) and the inferred
estimators of a sampled pool, with the sampling variance.

- :func:`plain_ndcg`: NDCG@k with unjudged documents as gain 0 and the ideal list made of the judged grades,
  the convention of trec_eval and of every depth-k pool.
- :func:`inferred_ndcg`: infNDCG (Yilmaz, Kanoulas & Aslam, "A simple and efficient sampling method for
  estimating AP and NDCG", SIGIR 2008) in its Horvitz-Thompson form: DCG@k is estimated by
  ``sum over sampled documents in the top k of gain / (pi * log2(rank + 1))``, unbiased for any design with
  known inclusion probabilities ``pi``; the ideal DCG is built from the estimated number of documents of
  each grade in the pool (``sum of 1 / pi`` over the sampled documents of that grade); infNDCG is the ratio.
  Its variance is the stratified delete-one jackknife's (Wolter, *Introduction to Variance Estimation*,
  2007, ch. 4; the linearised ratio's, Sarndal, Swensson & Wretman 1992, ch. 5, without the correction): the interval
  reflects which pairs were sampled, for this set of queries, not the choice of queries.
- :func:`inferred_ap`: infAP (Yilmaz & Aslam, "Estimating average precision with incomplete and imperfect
  judgments", CIKM 2006), as trec_eval's ``infAP`` computes it: a uniform sample of the pool is judged,
  documents outside the pool are not relevant, the sum is divided by the number of judged relevant.

The DCG sums are the metrics kernels' (:func:`ndcg_labeling.metrics.batch_dcg`, linear gain over the
pre-weighted gains; the ideal's, already in rank order, over :func:`ndcg_labeling.metrics.dcg.log2_ranks`),
so there is one discount in the package.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ndcg_labeling.budget.pool import FloatArray, IntArray, Pool, ideal_labels, run_labels
from ndcg_labeling.metrics import batch_average_precision, batch_dcg, batch_ndcg
from ndcg_labeling.metrics import dcg as _dcg

INFAP_EPSILON = 1e-5  # trec_eval's, so infAP agrees with it where no relevant document precedes


def _gain(g: FloatArray, gain: str) -> FloatArray:
    if gain in ("exponential", "linear"):
        return _dcg.gains(g, gain)
    raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")


def _positions(n_rows: int, width: int, present: npt.NDArray[np.bool_]) -> FloatArray:
    # scores that keep the list's own order: rank 1 highest; NaN where the run has no document
    scores = np.broadcast_to(-np.arange(width, dtype=np.float64), (n_rows, width)).copy()
    scores[~present] = np.nan
    return scores


def _check_k(pool: Pool, k: int, func: str) -> None:
    if not 1 <= k <= pool.depth:
        raise ValueError(f"{func}: k must be between 1 and the pool depth {pool.depth}, got {k}")


def plain_ndcg(pool: Pool, grades: npt.ArrayLike, k: int = 10, *, gain: str = "exponential") -> FloatArray:
    """(systems, queries) NDCG@k of each run, unjudged pairs as gain 0, the ideal list from the judged
    grades of the pool (0 where no judged grade is positive)."""
    _check_k(pool, k, "plain_ndcg")
    g = np.asarray(grades, dtype=np.float64)
    labels = run_labels(pool, g, k)
    n_sys, n_q, _ = labels.shape
    present = pool.run_pairs[:, :, :k] >= 0
    ideal = np.tile(ideal_labels(pool, g), (n_sys, 1))
    flat = batch_ndcg(_positions(n_sys * n_q, k, present.reshape(n_sys * n_q, k)), labels.reshape(n_sys * n_q, k),
                      k=k, gain=gain, ideal_labels=ideal)
    return np.asarray(flat, dtype=np.float64).reshape(n_sys, n_q)


def plain_ap(pool: Pool, grades: npt.ArrayLike, *, cut: int | None = None, relevant: float = 1.0) -> FloatArray:
    """(systems, queries) AP of each run read to rank ``cut`` (default: the whole list), unjudged pairs as
    not relevant, divided by the judged relevant pairs of the query (trec_eval's ``map`` over these
    judgments; 0 for a query with none): the metrics kernels' :func:`batch_average_precision`."""
    g = np.asarray(grades, dtype=np.float64)
    width = pool.run_pairs.shape[2] if cut is None else cut
    labels = run_labels(pool, g, width)
    n_sys, n_q, width = labels.shape
    present = pool.run_pairs[:, :, :width] >= 0
    ideal = np.tile(ideal_labels(pool, g), (n_sys, 1))
    flat = batch_average_precision(_positions(n_sys * n_q, width, present.reshape(n_sys * n_q, width)),
                                   labels.reshape(n_sys * n_q, width), ideal_labels=ideal,
                                   relevant_threshold=relevant, empty="zero")
    return np.asarray(flat, dtype=np.float64).reshape(n_sys, n_q)


@dataclass(frozen=True)
class Inferred:
    """infNDCG@k of each run on each query and what its variance needs.

    ``ndcg`` (systems, queries): the estimates; ``variance`` (systems, queries): their sampling variance;
    ``replicates`` (systems, pairs): the scaled jackknife deviations behind it (None for the plain ratio);
    ``linear`` (systems, pairs): each judged pair's value in the linearised estimator (0 elsewhere);
    ``strata``, ``judged`` and ``groups`` (pairs,): the design (strata numbered from 0) and each pair's
    query, kept for the variance of differences. With the jackknife: ``bias`` (systems, queries), the
    estimated bias of the plain ratio that was subtracted; ``floor`` (systems, queries), the anticipated
    variance (:func:`anticipated_variance`), which the intervals take where ``unseen`` (systems, queries:
    the run's estimated DCG is 0) and it exceeds ``variance``; and ``model`` what the floor of a difference
    needs (:class:`_Model`).
    """

    ndcg: FloatArray
    variance: FloatArray
    linear: FloatArray
    strata: IntArray
    judged: npt.NDArray[np.bool_]
    groups: IntArray
    replicates: FloatArray | None = None
    bias: FloatArray | None = None
    floor: FloatArray | None = None
    model: _Model | None = None
    unseen: npt.NDArray[np.bool_] | None = None


@dataclass(frozen=True)
class _Model:
    """The pieces of the anticipated variance: ``disc`` (systems, pairs) each run's discount of each pair
    within k (0 elsewhere), ``mean`` and ``var`` (strata,) the mean and variance of the gain in each stratum
    (from its judged pairs; from its query's where it has fewer than two), ``size`` and ``n`` (strata,) its
    pairs and judged pairs, ``ideal`` (queries,) the estimated ideal DCG."""

    disc: FloatArray
    mean: FloatArray
    var: FloatArray
    size: FloatArray
    n: FloatArray
    ideal: FloatArray


def _ideal_from_counts(counts: FloatArray, values: FloatArray, k: int, gain: str) -> FloatArray:
    """(queries,) ideal DCG@k of lists holding ``counts[q, i]`` documents of grade ``values[i]`` (fractional
    counts fill a position in part); ``values`` sorted descending."""
    ends = np.cumsum(counts, axis=1)
    starts = ends - counts
    pos = np.arange(k, dtype=np.float64)
    overlap = np.clip(np.minimum(ends[:, :, None], pos + 1) - np.maximum(starts[:, :, None], pos), 0.0, 1.0)
    per_position = (overlap * _gain(values, gain)[None, :, None]).sum(axis=1)
    # already in rank order: the linear DCG is the discounted sum (batch_dcg's sort cost a third of a design)
    return np.asarray((per_position / _dcg.log2_ranks(k)).sum(axis=1), dtype=np.float64)


def inferred_ndcg(
    pool: Pool,
    grades: npt.ArrayLike,
    inclusion: npt.ArrayLike,
    strata: npt.ArrayLike,
    k: int = 10,
    *,
    gain: str = "exponential",
    correction: str = "jackknife",
) -> Inferred:
    """infNDCG@k of every run from a stratified sample of the pool.

    ``grades`` (pairs,): the grade of each judged pair, NaN elsewhere; ``inclusion`` (pairs,): each judged
    pair's inclusion probability (> 0; ignored where unjudged); ``strata`` (pairs,): its stratum (within a
    query; see :func:`ndcg_labeling.budget.strategies.stratum_ids`).

    DCG@k is the Horvitz-Thompson sum ``gain / (pi * log2(rank + 1))``, exactly unbiased. (A ratio form that
    gives a run's unjudged documents the mean gain of its judged ones in the same stratum was tried: with a
    few documents of a run per stratum it falls back on the stratum's mean too often and shrinks every run
    toward the average, RMSE 0.05 against 0.04 on the DL worlds; it is not offered.) A query whose sample
    holds no positive grade gets 0 with variance 0. Estimates are not clipped to [0, 1] (a per-query estimate
    above 1 is common at a few judged pairs per query: 6-27% of them on DL19 at 10-50% of the pool): the
    estimator is a ratio of unbiased sums, and cutting its upper tail would move the mean over the queries
    down and make the interval, built around the unclipped value, no longer describe it. Means over queries
    above 1 are shown as they are, with their interval.

    ``correction="jackknife"`` (default) subtracts the stratified delete-one jackknife estimate of the
    ratio's bias (:func:`_jackknife_bias`); ``"none"`` gives the plain ratio. The plain ratio is biased
    upward: the ideal DCG is a concave function of the estimated counts (each further document of a grade
    adds a smaller discount, none past rank ``k``), so its estimate is low on average (Jensen), and a ratio
    of estimates is biased besides. The correction removes the terms of order ``1 / n_h``; at a few judged
    pairs per query what remains is still visible (on DL19 at 5 pairs a query +0.02 to +0.05 per system, at
    13 about +0.015, at 26 under +0.005; benchmarks/budget_coverage.py): the known small-sample bias of ratio
    estimators (Cochran, *Sampling Techniques*, 3rd ed. 1977, section 6.8), for which the literature on
    infNDCG offers no exact correction (Yilmaz, Kanoulas & Aslam 2008 report it as a slight overestimate).

    ``variance`` (with ``"jackknife"``): the stratified delete-one jackknife variance of the estimate from the
    same replicates (``replicates``; Wolter 2007, ch. 4), which, unlike the Taylor linearisation, follows the
    kinks of the ideal DCG in the estimated counts; strata with a single judged pair, which have no
    replicate, add the linearised variance with the sample variance of their query's judged pairs (collapsed
    strata). Kept besides for the intervals (:func:`system_means`): ``bias``, the subtracted estimate; ``floor``,
    the anticipated variance; ``unseen``, the (systems, queries) where the run's estimated DCG is 0 while
    the query's ideal is not. With ``"none"``, the linearised variance of the plain ratio (the faster, narrower one: on DL19 at
    5-13 judged pairs a query it covered 90-91% where the jackknife covers 92-95%).
    """
    if correction not in ("jackknife", "none"):
        raise ValueError(f"inferred_ndcg: correction must be 'jackknife' or 'none', got {correction!r}")
    g, st, judged, weight, gains = _sample(pool, grades, inclusion, strata, k, gain, "inferred_ndcg")
    n_q = pool.n_queries
    dcg, u_dcg = _dcg_ht(pool, gains, weight, k)
    values, counts, ideal, ndcg = _ratio(pool, g, judged, weight, dcg, k, gain)
    ok = ideal > 0
    linear = _linearised(pool, g, judged, counts, values, ideal, ndcg, u_dcg, k, gain)
    if correction == "none":
        variance = _per_query(design_variance(linear, st, judged, pool.query), st, pool.query, n_q)
        return Inferred(ndcg=ndcg, variance=variance, linear=linear, strata=st, judged=judged, groups=pool.query)
    bias, replicates = _jackknife(pool, g, weight, st, values, k, gain)
    # strata with one judged pair have no replicate: their share of the variance is the linearised one, from
    # the sample variance of their query's judged pairs (collapsed strata); the others' is the jackknife's
    by_stratum = _single_only(design_variance(linear, st, judged, pool.query), st, judged)
    variance = _per_query(by_stratum, st, pool.query, n_q) + _sum_by_query(replicates ** 2, pool)
    model = _model(pool, gains, judged, st, ideal, k)
    floor = anticipated_variance(model, model.disc, st, pool.query)
    return Inferred(ndcg=ndcg - bias, variance=variance, linear=linear, strata=st, judged=judged,
                    groups=pool.query, replicates=replicates, bias=bias, floor=floor, model=model,
                    unseen=(dcg == 0) & ok[None, :])


def _model(pool: Pool, gains: FloatArray, judged: npt.NDArray[np.bool_], st: IntArray, ideal: FloatArray,
           k: int) -> _Model:
    n_h = int(st.max(initial=-1)) + 1
    size = np.bincount(st, minlength=n_h).astype(np.float64)
    n = np.bincount(st, weights=judged.astype(np.float64), minlength=n_h).astype(np.float64)
    w = judged.astype(np.float64)
    s1 = np.bincount(st, weights=gains * w, minlength=n_h)
    query_of = _query_of(st, pool.query, n_h)
    nq = np.bincount(pool.query, weights=w, minlength=pool.n_queries)
    q1 = np.bincount(pool.query, weights=gains * w, minlength=pool.n_queries)
    mean = np.where(n > 0, s1 / np.maximum(n, 1.0), (q1 / np.maximum(nq, 1.0))[query_of])
    var = np.where(n >= 2, _sample_variance(gains, w, st, n_h),
                   _sample_variance(gains, w, pool.query, pool.n_queries)[query_of])
    return _Model(disc=_discounts(pool, k), mean=mean, var=var, size=size, n=n, ideal=ideal)


def anticipated_variance(model: _Model, disc: FloatArray, strata: IntArray, groups: IntArray) -> FloatArray:
    """(rows, queries) the anticipated variance of the Horvitz-Thompson DCG@k of each row of ``disc`` (rows,
    pairs: a run's discount of each pair, or the difference of two runs'), over the estimated ideal DCG
    squared: the design variance ``N_h^2 (1 - n_h / N_h) S_h^2 / n_h`` with ``S_h^2`` the expected variance
    over the stratum's pairs of ``gain * d`` under the model that the stratum's gains are independent draws
    of one distribution whatever the runs did with them (mean ``mu`` and variance ``s^2`` those of its judged
    pairs): ``S_h^2 = (sum d^2 (s^2 (1 - 1/N_h) + mu^2) - mu^2 (sum d)^2 / N_h) / (N_h - 1)`` (the
    anticipated variance, Sarndal, Swensson & Wretman 1992, section 12.2; Isaki & Fuller 1982). It does not
    look at which of the run's pairs were sampled, so it does not fall to 0 when none of the run's relevant
    documents was: the case where the jackknife, computed from the sampled pairs, gives 0 (a few judged pairs
    per query, or a run whose relevant documents are rare: the low runs of TREC-COVID, whose intervals
    covered 5-60% of designs instead of 95%). The intervals use it for the queries where a run's estimated
    DCG is 0 (:func:`system_means`)."""
    m = model
    n_h = m.size.size
    big_n = np.maximum(m.size, 1.0)
    d1 = np.stack([np.bincount(strata, weights=r, minlength=n_h) for r in disc]) / big_n
    d2 = np.stack([np.bincount(strata, weights=r ** 2, minlength=n_h) for r in disc]) / big_n
    s_sq = (d2 * (m.var * (1.0 - 1.0 / big_n) + m.mean ** 2) - (d1 * m.mean) ** 2) * big_n / np.maximum(big_n - 1.0, 1.0)
    by_stratum = np.where(m.n >= 1, m.size ** 2 * (1.0 - m.n / big_n) * np.maximum(s_sq, 0.0)
                          / np.maximum(m.n, 1.0), 0.0)
    per_query = _per_query(by_stratum, strata, groups, m.ideal.size)
    ok = m.ideal > 0
    return np.where(ok[None, :], per_query / np.where(ok, m.ideal, 1.0)[None, :] ** 2, 0.0)


def _linearised(pool: Pool, g: FloatArray, judged: npt.NDArray[np.bool_], counts: FloatArray, values: FloatArray,
                ideal: FloatArray, ndcg: FloatArray, u_dcg: FloatArray, k: int, gain: str) -> FloatArray:
    """(systems, pairs) each judged pair's value in the linearised ratio (Taylor): ``(u_dcg - ndcg * z) /
    ideal``, ``z`` the derivative of the ideal DCG in the count of the pair's grade."""
    n_q = pool.n_queries
    ok = ideal > 0
    # derivative of the ideal DCG in each grade's count (piecewise linear: a one-sided step is exact)
    step = 1e-6
    # one column at least: with no positive grade judged every pair's grade_index is -1 and z is 0
    slope = np.zeros((n_q, max(values.size, 1)))
    for i in range(values.size):
        bumped = counts.copy()
        bumped[:, i] += step
        slope[:, i] = (_ideal_from_counts(bumped, values, k, gain) - ideal) / step
    grade_index = np.full(pool.n_pairs, -1)
    for i, v in enumerate(values):
        grade_index[g == v] = i
    z = np.where(grade_index >= 0, slope[pool.query, np.maximum(grade_index, 0)], 0.0)
    denom = np.where(ok, ideal, 1.0)[pool.query]
    return np.asarray(np.where(judged[None, :] & ok[pool.query][None, :],
                               (u_dcg - ndcg[:, pool.query] * z[None, :]) / denom[None, :], 0.0), dtype=np.float64)


def _single_only(by_stratum: FloatArray, st: IntArray, judged: npt.NDArray[np.bool_]) -> FloatArray:
    # keep the (rows, strata) variances of the strata with exactly one judged pair (no jackknife replicate)
    n = np.bincount(st, weights=judged.astype(np.float64), minlength=by_stratum.shape[1])
    return np.where((n == 1)[None, :], by_stratum, 0.0)


def _sum_by_query(values: FloatArray, pool: Pool) -> FloatArray:
    # (rows, queries) the sum of each row of (rows, pairs) over each query's pairs
    return np.stack([np.bincount(pool.query, weights=r, minlength=pool.n_queries) for r in values]) \
        if values.shape[0] else np.zeros((0, pool.n_queries))


def _ratio_ndcg(w: FloatArray, unit_dcg: FloatArray, unit_grade: FloatArray, values: FloatArray, k: int,
                gain: str) -> FloatArray:
    """(replicates, systems) DCG / ideal DCG of one query under each row of weights ``w`` (replicates,
    units): ``unit_dcg`` (systems, units) each unit's discounted gain per system, ``unit_grade`` (units,)."""
    dcg = w @ unit_dcg.T
    if values.size == 0:
        return np.zeros_like(dcg)
    counts = w @ (unit_grade[:, None] == values[None, :]).astype(np.float64)
    ideal = _ideal_from_counts(counts, values, k, gain)
    ok = ideal > 0
    return np.where(ok[:, None], dcg / np.where(ok, ideal, 1.0)[:, None], 0.0)


def _jackknife(pool: Pool, g: FloatArray, weight: FloatArray, st: IntArray, values: FloatArray, k: int,
               gain: str) -> tuple[FloatArray, FloatArray]:
    """``(bias, replicates)``: (systems, queries) the stratified delete-one jackknife estimate of the bias of the
    plain infNDCG ratio, and (systems, pairs) each judged pair's scaled replicate deviation
    ``sqrt(c_h) * (theta_(hi) - mean_h theta_(h.))``, ``c_h = (1 - n_h / N_h) (n_h - 1) / n_h`` (0 elsewhere),
    whose sum of squares over a query's pairs is the jackknife variance of that query's estimate (Wolter 2007,
    eq. 4.5.4) and, taken as a difference of two systems' rows, that of their difference.

    The bias: the stratified delete-one jackknife estimate of the bias of the plain infNDCG
    ratio (Quenouille's jackknife, in the form for stratified sampling without replacement: Wolter,
    *Introduction to Variance Estimation*, 2nd ed. 2007, ch. 4):
    ``sum over strata h of (1 - n_h / N_h) (n_h - 1) (mean over i in h of theta_(hi) - theta)``, where
    ``theta_(hi)`` is the ratio recomputed without judged pair ``i``, the other judged pairs of its stratum
    weighted ``N_h / (n_h - 1)``. It removes the bias terms of order ``1 / n_h``; a stratum with one judged
    pair has no replicate and adds nothing. A pair's stratum lies within one query, so only that query's
    ratio moves in its replicate."""
    judged = ~np.isnan(g)
    size = np.bincount(st).astype(np.float64)
    n = np.bincount(st, weights=judged.astype(np.float64), minlength=size.size)
    gains = np.where(judged, _gain(np.nan_to_num(g), gain), 0.0)
    disc = _discounts(pool, k)
    out = np.zeros((pool.n_systems, pool.n_queries))
    dev = np.zeros((pool.n_systems, pool.n_pairs))
    for q in range(pool.n_queries):
        units = np.nonzero((pool.query == q) & judged)[0]
        h = st[units]
        reps = np.nonzero(n[h] >= 2)[0]
        if reps.size == 0:
            continue
        unit_dcg = disc[:, units] * gains[units][None, :]
        # the plain ratio again, by the replicates' own sums (not inferred_ndcg's, which add in another order
        # and differ in the last bits: 22% of values, up to 1.3e-15, on the DL worlds): theta, base sum alike
        base = _ratio_ndcg(weight[units][None, :], unit_dcg, g[units], values, k, gain)[0]
        hr = h[reps]
        same = h[None, :] == hr[:, None]
        w = weight[units][None, :] * np.where(same, (n[h] / np.maximum(n[h] - 1.0, 1.0))[None, :], 1.0)
        w[np.arange(reps.size), reps] = 0.0
        theta = _ratio_ndcg(w, unit_dcg, g[units], values, k, gain)
        coef = (1.0 - n[hr] / size[hr]) * (n[hr] - 1.0) / n[hr]
        out[:, q] = (coef[:, None] * (theta - base[None, :])).sum(axis=0)
        _, grp = np.unique(hr, return_inverse=True)
        grp = grp.ravel()
        means = np.zeros((int(grp.max()) + 1, theta.shape[1]))
        np.add.at(means, grp, theta)
        means /= np.bincount(grp)[:, None]
        dev[:, units[reps]] = (np.sqrt((1.0 - n[hr] / size[hr]) * (n[hr] - 1.0) / n[hr])[:, None]
                               * (theta - means[grp])).T
    return out, dev


def _discounts(pool: Pool, k: int) -> FloatArray:
    # (systems, pairs) the discount at which each run ranks each pair within k, 0 elsewhere
    ranks = pool.system_ranks()
    inside = (ranks >= 1) & (ranks <= k)
    return _dcg.discount(np.where(inside, ranks, 0))


def _dcg_ht(pool: Pool, gains: FloatArray, weight: FloatArray, k: int) -> tuple[FloatArray, FloatArray]:
    """(systems, queries) Horvitz-Thompson DCG@k and (systems, pairs) each pair's per-unit value in it."""
    return _dcg_sum(pool, gains, weight, k), _discounts(pool, k) * gains[None, :]


def _dcg_sum(pool: Pool, gains: FloatArray, weight: FloatArray, k: int) -> FloatArray:
    """(systems, queries) Horvitz-Thompson DCG@k: each run's top ``k`` weighted gains, discounted."""
    n_sys, n_q = pool.n_systems, pool.n_queries
    top = pool.run_pairs[:, :, :k]
    present = top >= 0
    labels = np.where(present, (gains * weight)[np.where(present, top, 0)], 0.0).reshape(n_sys * n_q, k)
    return np.asarray(batch_dcg(_positions(n_sys * n_q, k, present.reshape(-1, k)), labels, k=k, gain="linear"),
                      dtype=np.float64).reshape(n_sys, n_q)


def design_variance(values: FloatArray, strata: IntArray, judged: npt.NDArray[np.bool_],
                    groups: IntArray | None = None) -> FloatArray:
    """(rows, strata) variance of the Horvitz-Thompson total of ``values`` (rows, pairs) under stratified
    simple random sampling: ``N_h^2 (1 - n_h / N_h) s_h^2 / n_h`` with ``s_h^2`` the sample variance of the
    judged pairs' values in stratum ``h``. A stratum with one judged pair has no variance of its own: it
    takes the sample variance of the judged pairs of its group (``groups``, the query: collapsed strata,
    Cochran 1977 section 5A.12), 0 without groups. Strata are numbered ``0 .. max``."""
    n_strata = int(strata.max(initial=-1)) + 1
    size = np.bincount(strata, minlength=n_strata).astype(np.float64)
    n = np.bincount(strata, weights=judged.astype(np.float64), minlength=n_strata)
    w = judged.astype(np.float64)
    group_of = np.zeros(n_strata, dtype=np.int64)
    if groups is not None:
        group_of[strata] = groups
    out = np.zeros((values.shape[0], n_strata))
    for r in range(values.shape[0]):
        s_sq = _sample_variance(values[r], w, strata, n_strata)
        if groups is not None:
            n_groups = int(groups.max(initial=-1)) + 1
            s_sq = np.where(n == 1, _sample_variance(values[r], w, groups, n_groups)[group_of], s_sq)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[r] = np.where(n >= 1, size ** 2 * (1 - n / size) * s_sq / np.maximum(n, 1), 0.0)
    return out


def _sample_variance(v: FloatArray, w: FloatArray, labels: IntArray, n_labels: int) -> FloatArray:
    n = np.bincount(labels, weights=w, minlength=n_labels)
    s1 = np.bincount(labels, weights=v * w, minlength=n_labels)
    s2 = np.bincount(labels, weights=v ** 2 * w, minlength=n_labels)
    var = np.where(n >= 2, (s2 - s1 ** 2 / np.maximum(n, 1)) / np.maximum(n - 1, 1), 0.0)
    return np.maximum(var, 0.0)


def _query_of(strata: IntArray, groups: IntArray, n_h: int) -> IntArray:
    """(strata,) the query of each stratum (strata lie within a query)."""
    query_of = np.zeros(n_h, dtype=np.int64)
    query_of[strata] = groups
    return query_of


def _per_query(by_stratum: FloatArray, strata: IntArray, groups: IntArray, n_q: int) -> FloatArray:
    """(rows, queries) the sums over each query's strata of ``by_stratum`` (rows, strata)."""
    query_of = _query_of(strata, groups, by_stratum.shape[1])
    out = np.zeros((by_stratum.shape[0], n_q))
    for r in range(by_stratum.shape[0]):
        out[r] = np.bincount(query_of, weights=by_stratum[r], minlength=n_q)
    return out


def system_means(est: Inferred, z: float = 1.96, *, conservative: bool = True) -> tuple[FloatArray, FloatArray]:
    """(systems,) mean infNDCG over the queries and the half-width of its ``z`` interval (queries are
    independent samples: the variance of the mean is ``sum var_q / Q^2``).

    ``conservative=True`` (default; the jackknife estimator only): in a query where the run's estimated DCG
    is 0 (none of its top k judged relevant: the jackknife's variance is 0 there, whatever the run holds
    unjudged), the variance is the anticipated one (:func:`anticipated_variance`) where that is larger; and the
    interval is on the root mean squared error, ``z * sqrt(var + b^2)``, ``b`` the mean over the queries of
    the jackknife's estimate of the plain ratio's bias, which was subtracted: what remains of the bias is of
    its order (on DL19 at 5-13 pairs a query 0.5-1.5 times it), so ``b`` stands in for it as an allowance
    (the effect of a bias on an interval's coverage: Cochran 1977, section 1.8). ``False``: ``z * sqrt(sum
    var_q) / Q``, the jackknife variance alone."""
    n_q = est.ndcg.shape[1]
    means = est.ndcg.mean(axis=1)
    if not conservative or est.floor is None or est.bias is None or est.unseen is None:
        return means, z * np.sqrt(est.variance.sum(axis=1)) / n_q
    var = np.where(est.unseen, np.maximum(est.variance, est.floor), est.variance).sum(axis=1) / n_q ** 2
    return means, z * np.sqrt(var + est.bias.mean(axis=1) ** 2)


def difference_halfwidth(est: Inferred, a: int, b: int, z: float = 1.96, *, conservative: bool = True) -> float:
    """Half-width of the ``z`` interval of mean infNDCG(a) - mean infNDCG(b): the pairs are shared, so the
    variance comes from the difference of the linearised values (or of the jackknife replicates), not from
    the two variances. ``conservative``: as in :func:`system_means`, per query the larger of that variance and
    the anticipated variance of the difference (the model's with the difference of the two runs'
    discounts), and the estimated bias of the difference added on the root-mean-square scale.

    The variance is the difference's own (the two runs' replicates subtracted pair by pair, so their
    covariance is inside it) and averages to the design variance over designs (tests/budget/
    test_budget_coverage.py). Where it still undercovers (TREC-COVID at 25-50% of the pool, about 94% over
    400 designs) it is the shape, not the size: a run's Horvitz-Thompson DCG over a few relevant documents
    among a stratum's hundreds of pairs is skewed, and its jackknife variance is small exactly in the designs
    that missed those documents (the correlation of an estimate and its estimated variance in a skewed
    population; Cochran 1977, section 2.15). The misses of the differences from one reference system then
    come together, in the designs where the reference's own estimate is low (docs/budget.md, "Reading the
    intervals")."""
    diff = (est.linear[a] - est.linear[b])[None, :]
    n_q = est.ndcg.shape[1]
    by_stratum = design_variance(diff, est.strata, est.judged, est.groups)
    if est.replicates is None:
        var = float(by_stratum.sum())
        return float(z * np.sqrt(var) / n_q)
    single = _single_only(by_stratum, est.strata, est.judged)
    per_query = (_per_query(single, est.strata, est.groups, n_q)[0]
                 + np.bincount(est.groups, weights=(est.replicates[a] - est.replicates[b]) ** 2, minlength=n_q))
    if not conservative or est.model is None or est.bias is None or est.unseen is None:
        return float(z * np.sqrt(per_query.sum()) / n_q)
    floor = anticipated_variance(est.model, (est.model.disc[a] - est.model.disc[b])[None, :], est.strata,
                                 est.groups)[0]
    unseen = est.unseen[a] | est.unseen[b]
    var = np.where(unseen, np.maximum(per_query, floor), per_query).sum() / n_q ** 2
    return float(z * np.sqrt(var + (est.bias[a] - est.bias[b]).mean() ** 2))


def inferred_ap(ranked: npt.ArrayLike, num_rel: npt.ArrayLike, *, relevant: float = 1.0) -> FloatArray:
    """(queries,) infAP of ranked lists, as trec_eval's ``infAP``.

    ``ranked`` (queries, width): the grade of each retrieved document in rank order; ``-1`` for a pooled
    document that was not sampled for judging, NaN for one outside the pool (not relevant, and ignored
    as evidence), ``-2`` pads a short list. ``num_rel`` (queries,): judged relevant documents of each query
    (grade >= ``relevant``), the divisor as in trec_eval. For a relevant document at rank ``k > 1`` with
    ``d`` pooled documents above it, of which ``r`` judged relevant and ``n`` judged not:
    ``E[prec@k] = 1/k + (k-1)/k * d/(k-1) * (r + eps) / (r + n + 2 eps)``; at rank 1 it is 1.
    A query with ``num_rel == 0`` gives 0.
    """
    arr = np.asarray(ranked, dtype=np.float64)
    nr = np.asarray(num_rel, dtype=np.float64)
    if arr.ndim != 2 or nr.shape != (arr.shape[0],):
        raise ValueError(f"inferred_ap: ranked must be (queries, width) and num_rel (queries,), got {arr.shape} "
                         f"and {nr.shape}")
    out = np.zeros(arr.shape[0])
    for q in range(arr.shape[0]):
        rel = nonrel = unjudged = 0
        total = 0.0
        row = arr[q][arr[q] != -2]
        for j, v in enumerate(row):
            if np.isnan(v):
                continue
            if v == -1:
                unjudged += 1
            elif v < relevant:
                nonrel += 1
            else:
                if j == 0:
                    total += 1.0
                else:
                    above = rel + nonrel + unjudged
                    total += 1.0 / (j + 1) + (j / (j + 1)) * (above / j) * (
                        (rel + INFAP_EPSILON) / (rel + nonrel + 2 * INFAP_EPSILON))
                rel += 1
        out[q] = total / nr[q] if nr[q] > 0 else 0.0
    return out


def inferred_point(pool: Pool, grades: npt.ArrayLike, inclusion: npt.ArrayLike, strata: npt.ArrayLike, k: int = 10,
                   *, gain: str = "exponential") -> FloatArray:
    """(systems, queries) infNDCG@k of every run as :func:`inferred_ndcg` estimates it (the Horvitz-Thompson
    ratio less the stratified jackknife's estimate of its bias; same arguments), without the variances, the
    floor and the model: the estimate alone, for a Monte-Carlo of the design
    (:func:`ndcg_labeling.budget.plan.expected_halfwidths`): on TREC-COVID's 143 runs a design takes 0.4-1.4 s
    where ``inferred_ndcg`` takes 3.2-3.5 s. Equal to ``inferred_ndcg(...).ndcg``
    (tests/budget/test_plan_extend.py checks it)."""
    g, st, judged, weight, gains = _sample(pool, grades, inclusion, strata, k, gain, "inferred_point")
    # the DCG without the per-pair values of _dcg_ht (the variances' only use of them)
    values, _, _, ndcg = _ratio(pool, g, judged, weight, _dcg_sum(pool, gains, weight, k), k, gain)
    bias, _ = _jackknife(pool, g, weight, st, values, k, gain)
    return np.asarray(ndcg - bias, dtype=np.float64)


def _sample(pool: Pool, grades: npt.ArrayLike, inclusion: npt.ArrayLike, strata: npt.ArrayLike, k: int, gain: str,
            func: str) -> tuple[FloatArray, IntArray, npt.NDArray[np.bool_], FloatArray, FloatArray]:
    """A sample's arrays, checked: grades, strata numbered 0 .. n-1 whatever the caller's numbering (stratum
    ids may be large: query row ids), which pairs are judged, their Horvitz-Thompson weights and gains."""
    _check_k(pool, k, func)
    g = np.asarray(grades, dtype=np.float64)
    pi = np.asarray(inclusion, dtype=np.float64)
    st = np.unique(np.asarray(strata, dtype=np.int64), return_inverse=True)[1].astype(np.int64).ravel()
    judged = ~np.isnan(g)
    if (judged & ~(pi > 0)).any():
        raise ValueError(f"{func}: every judged pair needs an inclusion probability > 0")
    weight = np.where(judged, 1.0 / np.where(judged, pi, 1.0), 0.0)
    return g, st, judged, weight, np.where(judged, _gain(np.nan_to_num(g), gain), 0.0)


def _ratio(pool: Pool, g: FloatArray, judged: npt.NDArray[np.bool_], weight: FloatArray, dcg: FloatArray, k: int,
           gain: str) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``(values, counts, ideal, ndcg)``: the positive grades judged (descending), the Horvitz-Thompson count
    of each per query, the ideal DCG from those counts, and the plain ratio ``dcg / ideal`` (0 where the
    ideal is 0)."""
    n_q = pool.n_queries
    values = np.unique(g[judged & (np.nan_to_num(g) > 0)])[::-1]
    counts = np.zeros((n_q, values.size))
    for i, v in enumerate(values):
        counts[:, i] = np.bincount(pool.query, weights=weight * (g == v), minlength=n_q)
    ideal = _ideal_from_counts(counts, values, k, gain)
    ok = ideal > 0
    return values, counts, ideal, np.where(ok[None, :], dcg / np.where(ok, ideal, 1.0)[None, :], 0.0)
