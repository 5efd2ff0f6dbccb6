"""Judging simulated against an oracle: a strategy picks pairs round after round, the oracle's grade comes
back for each, until the budget is spent. The oracle is a full set of grades (in the tests, the TREC qrels),
so what a strategy at a budget would have told can be set against what full judgment tells."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ndcg_labeling.budget.pool import FloatArray, IntArray, Pool
from ndcg_labeling.budget.strategies import design_edges, inclusion_probabilities, select_next, stratum_ids


def simulate(
    pool: Pool,
    strategy: str,
    budget: int,
    oracle: npt.ArrayLike,
    *,
    step: int | None = None,
    rng: np.random.Generator | None = None,
    edges: tuple[int, ...] | None = None,
    k: int = 10,
) -> tuple[FloatArray, FloatArray, IntArray]:
    """Judge ``budget`` pairs of ``pool`` with ``strategy``, grades taken from ``oracle`` (pairs,).

    ``step``: pairs per round (default: one per query, so the adaptive strategies see every grade before
    their next pick in that query); ``edges``: the sample's strata (default :func:`design_edges` of the
    budget). Returns ``(grades, inclusion, strata)``: the grades learnt (NaN where not judged), each judged
    pair's inclusion probability (the design's for ``sample``, 1 otherwise, NaN where not judged) and each
    pair's stratum.
    """
    truth = np.asarray(oracle, dtype=np.float64)
    if truth.shape != (pool.n_pairs,) or np.isnan(truth).any():
        raise ValueError(f"simulate: oracle must hold a grade for each of the {pool.n_pairs} pairs")
    rng = rng if rng is not None else np.random.default_rng(0)
    budget = min(max(budget, 0), pool.n_pairs)
    grades = np.full(pool.n_pairs, np.nan)
    edges = edges if edges is not None else design_edges(pool, budget)
    strata = stratum_ids(pool, edges)
    adaptive = strategy in ("mtf", "bandit")
    step = step if step is not None else (max(pool.n_queries, 1) if adaptive else budget)
    judged = 0
    while judged < budget:
        picks = select_next(pool, strategy, min(step, budget - judged), grades, rng=rng, edges=edges, k=k)
        if picks.size == 0:
            break
        grades[picks] = truth[picks]
        judged += picks.size
    done = ~np.isnan(grades)
    if strategy == "sample":
        inclusion = np.where(done, inclusion_probabilities(strata, done), np.nan)
    else:
        inclusion = np.where(done, 1.0, np.nan)
    return grades, inclusion, strata
