"""Arm statistics with requests as the unit, clustered by user or session when given.

* :func:`cluster_sums`: per cluster the sum of a per-request value and the count of requests with one;
* :func:`cluster_se`: the cluster-robust standard error of a mean (the sandwich estimator of an
  intercept-only regression: ``G/(G-1) * sum_c (S_c - mean N_c)^2 / N^2``, statsmodels' ``cluster``
  covariance; with one request per cluster the ordinary ``s^2/n`` up to the factor ``n/(n-1)``);
* :func:`cluster_bootstrap_ci`: percentile interval of the mean, clusters resampled with replacement;
* :func:`difference`: arm minus baseline (independent samples): normal interval and two-sided p;
* :func:`kendall_tau_b` and :func:`kendall_ci`: agreement of two series (cells resampled).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling.stats import bootstrap_counts

F = NDArray[np.float64]
I = NDArray[np.int64]  # noqa: E741
Z95 = 1.959963984540054


def cluster_sums(values: F, cluster: I) -> tuple[F, F]:
    """``(S_c, N_c)`` over the clusters having at least one finite value (``cluster``: codes 0..G-1)."""
    ok = np.isfinite(values)
    if not ok.any():
        return np.zeros(0), np.zeros(0)
    size = int(cluster.max()) + 1
    s: F = np.bincount(cluster[ok], weights=values[ok], minlength=size).astype(np.float64)
    n: F = np.bincount(cluster[ok], minlength=size).astype(np.float64)
    keep = n > 0
    return s[keep], n[keep]


def cluster_se(s: F, n: F, mean: float) -> float:
    """Cluster-robust standard error of ``mean`` (NaN with fewer than 2 clusters)."""
    g = s.size
    if g < 2:
        return math.nan
    total = float(n.sum())
    return math.sqrt(g / (g - 1) * float(np.sum((s - mean * n) ** 2)) / (total * total))


def cluster_bootstrap_ci(s: F, n: F, n_resamples: int, seed: int, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``sum(S)/sum(N)``, clusters drawn with replacement."""
    g = s.size
    if g == 0 or n_resamples == 0:
        return math.nan, math.nan
    means = np.concatenate([(c @ s) / (c @ n) for c in bootstrap_counts(g, n_resamples, seed)])
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    mean = float(s.sum() / n.sum())
    return min(float(lo), mean), max(float(hi), mean)


def normal_p(z: float) -> float:
    """Two-sided p of a standard normal statistic."""
    return math.erfc(abs(z) / math.sqrt(2.0)) if math.isfinite(z) else math.nan


def difference(mean: float, se: float, base_mean: float, base_se: float) -> tuple[float, float, float, float]:
    """``(diff, low, high, p)`` of ``mean - base_mean`` for independent samples (z test)."""
    diff = mean - base_mean
    se_d = math.sqrt(se * se + base_se * base_se)
    if not math.isfinite(se_d):
        return diff, math.nan, math.nan, math.nan
    if se_d == 0:
        return diff, diff, diff, (1.0 if diff == 0 else 0.0)
    return diff, diff - Z95 * se_d, diff + Z95 * se_d, normal_p(diff / se_d)


def kendall_tau_b(x: F, y: F) -> float:
    """Kendall's tau-b of two series (NaN with fewer than 2 points or a constant series)."""
    n = x.size
    if n < 2:
        return math.nan
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    iu = np.triu_indices(n, 1)
    sx, sy = dx[iu], dy[iu]
    s = float(np.sum(sx * sy))
    tx, ty = float(np.sum(sx != 0)), float(np.sum(sy != 0))
    if tx == 0 or ty == 0:
        return math.nan
    return s / math.sqrt(tx * ty)


def kendall_ci(x: F, y: F, n_resamples: int, seed: int, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of tau-b, points (cells) resampled (NaN with fewer than 3)."""
    if x.size < 3:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(n_resamples):
        idx = rng.integers(0, x.size, x.size)
        taus.append(kendall_tau_b(x[idx], y[idx]))
    arr = np.asarray(taus)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(arr, [tail, 100 - tail])
    return float(lo), float(hi)
