"""Sampling intervals of xinfAP (:func:`ndcg_labeling.budget.xinfap.inferred_ap_stratified`): the stratified
delete-one jackknife (Quenouille; Wolter, *Introduction to Variance Estimation*, ch. 4), query by query.

The strata of a ``sample`` batch lie within queries and each query's sample is drawn independently, so the
variance of the mean over the queries is the sum of the per-query variances over ``queries**2``, and a
query's variance is the jackknife's: for each stratum ``h`` with ``n_h >= 2`` judged pairs, xinfAP of the
query is recomputed without each judged pair in turn (the stratum's inclusion probability becoming
``(n_h - 1) / N_h``), and ``v = sum_h (1 - n_h / N_h) (n_h - 1) / n_h * sum_j (theta_(hj) - mean_h)**2`` (with
the finite-population correction of sampling without replacement: a stratum judged whole adds nothing). The same replicates
give the covariance between systems, so the difference of two systems, estimated from the same pairs, gets
its own (paired) interval. A stratum with a single judged pair cannot be left out: it adds nothing to the
variance, and :func:`xinfap_means` counts such strata so that a report can say its intervals are short.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from ndcg_labeling.budget.pool import FloatArray, Pool
from ndcg_labeling.budget.strategies import inclusion_probabilities
from ndcg_labeling.budget.xinfap import inferred_ap_stratified


@dataclass(frozen=True)
class XinfapEstimate:
    """``means`` (systems,): xinfAP averaged over the queries; ``cov`` (systems, systems): the jackknife
    covariance of those means; ``single`` strata had one judged pair (no variance from them); ``per_query``
    (systems, queries)."""

    means: FloatArray
    cov: FloatArray
    single: int
    per_query: FloatArray

    def half_widths(self, z: float = 1.96) -> FloatArray:
        return np.asarray(z * np.sqrt(np.maximum(np.diag(self.cov), 0.0)), dtype=np.float64)

    def difference_half_width(self, a: int, b: int, z: float = 1.96) -> float:
        v = self.cov[a, a] + self.cov[b, b] - 2.0 * self.cov[a, b]
        return float(z * np.sqrt(max(float(v), 0.0)))


def _query_pool(pool: Pool, q: int, start: int, stop: int, cut: int) -> Pool:
    rp = pool.run_pairs[:, q : q + 1, :cut]
    local = np.where(rp >= 0, rp - start, -1)
    return replace(pool, query=np.zeros(stop - start, dtype=np.int64), code=pool.code[start:stop],
                   min_rank=pool.min_rank[start:stop], run_pairs=local)


def xinfap_means(pool: Pool, grades: npt.ArrayLike, strata: npt.ArrayLike, *, cut: int | None = None,
                 relevant: float = 1.0) -> XinfapEstimate:
    """xinfAP of every run (its lists read to rank ``cut``, default the whole list), from the judged pairs
    of a stratified sample (``grades`` NaN where not judged; inclusion probabilities judged / pooled in each
    stratum), averaged over the queries, with the jackknife covariance of the means."""
    g = np.asarray(grades, dtype=np.float64)
    st = np.asarray(strata, dtype=np.int64)
    judged = ~np.isnan(g)
    width = pool.run_pairs.shape[2] if cut is None else cut
    full = inferred_ap_stratified(replace(pool, run_pairs=pool.run_pairs[:, :, :width]), g,
                                  inclusion_probabilities(st, judged), st, relevant=relevant)
    n_sys, n_q = full.shape
    cov = np.zeros((n_sys, n_sys))
    single = 0
    bounds = np.searchsorted(pool.query, np.arange(n_q + 1))  # pairs are ordered by query
    for q in range(n_q):
        start, stop = int(bounds[q]), int(bounds[q + 1])
        gq, sq = g[start:stop], st[start:stop]
        sub = _query_pool(pool, q, start, stop, width)
        for h in np.unique(sq):
            members = np.nonzero((sq == h) & ~np.isnan(gq))[0]
            if members.size < 2:
                single += int(members.size == 1)
                continue
            reps = np.empty((members.size, n_sys))
            for i, j in enumerate(members):
                left = gq.copy()
                left[j] = np.nan
                reps[i] = inferred_ap_stratified(sub, left, inclusion_probabilities(sq, ~np.isnan(left)), sq,
                                                 relevant=relevant)[:, 0]
            dev = reps - reps.mean(axis=0)
            fpc = 1.0 - members.size / int((sq == h).sum())  # sampled without replacement: none left, no error
            cov += fpc * (members.size - 1) / members.size * (dev.T @ dev)
    return XinfapEstimate(means=full.mean(axis=1), cov=cov / max(n_q, 1) ** 2, single=single, per_query=full)

