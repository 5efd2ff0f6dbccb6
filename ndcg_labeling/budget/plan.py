"""How wide the inferred intervals will be for a number of judgments, before judging: ``plan --budget``.

The plan forecasts the spread of the estimate itself: 1.96 times the standard deviation of each system's
mean infNDCG@k (and of its difference from system 0) over the samples a budget could draw, the width an
interval must have to cover the full-judgment value 95% of the time. It is a Monte-Carlo of the design in
completed worlds. Each repeat completes the grades of the pool (pairs already graded keep their grade; the
others draw one from the graded pairs of the same cell, :func:`_complete`, and from a consensus prior,
:func:`_prior`, when nothing is graded yet), then draws ``designs`` stratified samples of each budget from
it (in the strata :func:`~ndcg_labeling.budget.strategies.design_edges` gives that budget, as ``tasks
create`` would; in a batch's own strata, fixed by its first round, when planning how far to extend it) and
computes the estimates :func:`ndcg_labeling.budget.estimators.inferred_ndcg` gives each sample (its
point estimate alone, :func:`~ndcg_labeling.budget.estimators.inferred_point`). The
variance of the estimates over the designs of one world is the design variance there; the plan pools it
over the worlds (the mean of the within-world variances: how far the values of one world lie apart is not
sampling error). The half-width ``report --estimator inferred`` prints is wider where the estimator is
biased or the sample sees little of a run (its floor and bias allowance, :func:`~ndcg_labeling.budget.
estimators.system_means`): the plan is the spread those intervals are there to cover.

With no grades the prior is a guess (the share of relevant documents of a collection cannot be known
before judging): the widths are for planning an order of magnitude (docs/budget.md, "Planning a budget").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ndcg_labeling.budget.estimators import inferred_point
from ndcg_labeling.budget.pool import FloatArray, IntArray, Pool
from ndcg_labeling.budget.strategies import (
    DEFAULT_EDGES,
    design_edges,
    inclusion_probabilities,
    select_next,
    stratum_ids,
    summed_weights,
)


def _complete(pool: Pool, known: FloatArray, rng: np.random.Generator, max_grade: int) -> FloatArray:
    """The pool's grades: the known ones kept, each other pair's drawn from the known grades of its cell (its
    best-rank band and the quartile of its summed discount over the runs: how many runs put it how high), then
    of its band, then of all, and with no grades at all from the consensus prior (:func:`_prior`)."""
    band = np.searchsorted(np.asarray(DEFAULT_EDGES), pool.min_rank, side="right") - 1
    weight = summed_weights(pool)
    quartile = np.searchsorted(np.quantile(weight, [0.25, 0.5, 0.75]), weight, side="right")
    out = known.copy()
    have = ~np.isnan(known)
    if not have.any():
        todo = ~have
        out[todo] = _prior(weight, rng, max_grade)[todo]
        return out
    for b in np.unique(band):
        for c in range(4):
            todo = (band == b) & (quartile == c) & ~have
            if not todo.any():
                continue
            source = known[(band == b) & (quartile == c) & have]
            if source.size < 2:
                source = known[(band == b) & have]
            if source.size == 0:
                source = known[have]
            out[todo] = rng.choice(source, size=int(todo.sum()))
    return out


def _prior(weight: FloatArray, rng: np.random.Generator, max_grade: int) -> FloatArray:
    """Grades with no judgment in hand: a pair is relevant with probability its summed discount's share of the
    pool's largest (documents that many runs put near the top are the likely relevant ones, the premise of
    the ``weighted`` strategy and of consensus pooling), and a relevant pair's grade is uniform on
    ``1 .. max_grade``. A guess to plan with, not an estimate."""
    p = weight / max(float(weight.max(initial=0.0)), 1e-300)
    relevant = rng.random(weight.size) < p
    return np.where(relevant, rng.integers(1, max_grade + 1, weight.size), 0).astype(np.float64)


def expected_halfwidths(
    pool: Pool,
    budgets: npt.ArrayLike,
    known: npt.ArrayLike | None = None,
    *,
    k: int = 10,
    max_grade: int = 3,
    repeats: int = 20,
    designs: int = 10,
    seed: int = 0,
    edges: tuple[int, ...] | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Expected 95% half-widths for each budget (pairs judged in all): 1.96 standard deviations of the
    estimates over the designs of that budget.

    Returns ``(per_system, per_difference)``, shapes ``(budgets, systems)``: for each system's mean infNDCG@k
    and for its difference from system 0 (0 for system 0 itself). ``known`` (pairs,): grades already in hand
    (NaN elsewhere). ``repeats`` completed worlds, ``designs`` samples drawn in each (at least 2): the
    variance is pooled over ``repeats * (designs - 1)`` degrees of freedom (200 draws by default: the
    standard deviation's own Monte-Carlo error is about 5%). ``edges``: the sample's strata for every
    budget; None (default) draws each budget in :func:`design_edges` of that budget, the design of a new
    batch of that size. A batch grown by ``tasks extend`` keeps the strata of its first round (coarse when
    that round was small: one stratum per query when it gave the median query fewer than four pairs), and
    its widths follow them. ``progress``, when given, is called with the number of samples drawn so far.
    Raises ``ValueError`` for a budget outside ``1 .. pairs`` or ``designs < 2``.
    """
    b = np.asarray(budgets, dtype=np.int64).ravel()
    if b.size == 0 or (b < 1).any() or (b > pool.n_pairs).any():
        raise ValueError(f"expected_halfwidths: budgets must be between 1 and the {pool.n_pairs} pooled pairs, "
                         f"got {b.tolist()}")
    if designs < 2 or repeats < 1:
        raise ValueError(f"expected_halfwidths: needs repeats >= 1 and designs >= 2, got {repeats} and {designs}")
    grades_known = np.full(pool.n_pairs, np.nan) if known is None else np.asarray(known, dtype=np.float64)
    rng = np.random.default_rng(seed)
    var = np.zeros((b.size, pool.n_systems))
    var_diff = np.zeros((b.size, pool.n_systems))
    # each budget's strata (the same in every world and sample)
    plans = [(e, stratum_ids(pool, e)) for e in (edges if edges is not None else design_edges(pool, budget)
                                                 for budget in b.tolist())]
    drawn = 0
    for _ in range(repeats):
        world = _complete(pool, grades_known, rng, max_grade)
        for i, (budget, (design, strata)) in enumerate(zip(b.tolist(), plans, strict=True)):
            means = np.array([_design_means(pool, world, budget, design, strata, rng, k) for _ in range(designs)])
            drawn += designs
            if progress is not None:
                progress(drawn)
            var[i] += means.var(axis=0, ddof=1)
            var_diff[i] += (means - means[:, :1]).var(axis=0, ddof=1)
    return 1.96 * np.sqrt(var / repeats), 1.96 * np.sqrt(var_diff / repeats)


def _design_means(pool: Pool, world: FloatArray, budget: int, edges: tuple[int, ...], strata: IntArray,
                  rng: np.random.Generator, k: int) -> FloatArray:
    """(systems,) the mean infNDCG@k over the queries of one stratified sample of ``budget`` pairs drawn in
    ``edges`` (the pairs' ``strata``) and graded from ``world``: the estimate the report would print for that
    sample (:func:`~ndcg_labeling.budget.estimators.inferred_point`: without the intervals)."""
    picks = select_next(pool, "sample", budget, np.full(pool.n_pairs, np.nan), rng=rng, k=k, edges=edges)
    judged = np.zeros(pool.n_pairs, dtype=bool)
    judged[picks] = True
    est = inferred_point(pool, np.where(judged, world, np.nan), inclusion_probabilities(strata, judged), strata, k)
    return np.asarray(est.mean(axis=1), dtype=np.float64)
