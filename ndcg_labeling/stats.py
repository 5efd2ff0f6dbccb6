"""Resampling statistics for paired system comparisons: arrays in, arrays out.

Pure kernel (numpy, and ``scipy.special`` imported lazily): no database, no pandas. Used by the
report, which scores queries per system and compares systems query by query.

* :func:`bootstrap_counts` / :func:`bootstrap_ci`: percentile bootstrap interval of the mean of each
  column, every column resampled with the same draws (paired);
* :func:`randomization_p`: two-sided paired randomization (sign-flip) test of a zero mean difference;
* :func:`paired_ttest_p`: the paired t-test (as ``scipy.stats.ttest_rel``);
* :func:`holm`: Holm's step-down adjustment of a family of p-values.

Every function takes a fixed ``seed`` where it draws, so the same input gives the same output.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[Any]
#: differences smaller than this count as ties (a query won, tied or lost; a zero difference)
TIE_EPS = 1e-12



def bootstrap_counts(n: int, n_resamples: int, seed: int, block: int | None = None) -> Iterator[Array]:
    """Blocks of the ``(n_resamples, n)`` matrix of how often each of ``n`` items is drawn in each
    resample (a block at a time, so memory stays small), as float64. A resample's mean of a column ``v``
    is ``counts @ v / n``: one matrix product per block gives the bootstrap means of every column."""
    rng = np.random.default_rng(seed)
    step = block or max(1, 1_000_000 // max(n, 1))
    for start in range(0, n_resamples, step):
        b = min(step, n_resamples - start)
        draws = rng.integers(0, n, size=(b, n))
        flat = np.bincount((draws + (np.arange(b) * n)[:, None]).ravel(), minlength=b * n)
        # float64: the resample means are computed in the precision of the means they bracket
        yield flat.reshape(b, n).astype(np.float64)


def bootstrap_ci(values: Array, n_resamples: int, seed: int, confidence: float) -> tuple[Array, Array]:
    """Percentile bootstrap interval of the mean of each column of ``values`` (n x c; NaN = left out).

    All columns share the same resamples of the rows (queries), so intervals of paired systems and of
    their differences come from the same draws. Fixed ``seed``: the same input gives the same interval.
    Computed in float64, and every interval contains its column's mean (the finite values' sum over
    their count): where all resample means are equal (one query, identical scores) rounding could put
    them a hair beside the mean, so the bounds are widened to the mean (:func:`contain`).
    """
    n, c = values.shape
    if n == 0 or n_resamples == 0:
        return np.full(c, np.nan), np.full(c, np.nan)
    finite = np.isfinite(values)
    complete = bool(finite.all())
    filled = (values if complete else np.where(finite, values, 0.0)).astype(np.float64)
    weights = finite.astype(np.float64)
    means = np.empty((n_resamples, c))
    row = 0
    for counts in bootstrap_counts(n, n_resamples, seed):
        b = counts.shape[0]
        if complete:  # the common case: every resample has n values in every column
            means[row : row + b] = (counts @ filled) / n
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                means[row : row + b] = (counts @ filled) / (counts @ weights)
        row += b
    alpha = (1.0 - confidence) / 2
    if complete:
        low, high = np.quantile(means, [alpha, 1 - alpha], axis=0)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: its interval is NaN
            low = np.nanquantile(means, alpha, axis=0)
            high = np.nanquantile(means, 1 - alpha, axis=0)
    count = finite.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=0) / np.maximum(count, 1)
    low, high = contain(np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64), mean)
    none = count == 0
    low[none] = np.nan
    high[none] = np.nan
    return low, high


def contain(low: Array, high: Array, center: Array) -> tuple[Array, Array]:
    """``(min(low, center), max(high, center))`` where all three are finite: an interval that contains
    its point estimate whatever the rounding of the resample means (NaN bounds stay NaN)."""
    ok = np.isfinite(low) & np.isfinite(high) & np.isfinite(center)
    return np.where(ok, np.minimum(low, center), low), np.where(ok, np.maximum(high, center), high)


def randomization_p(diffs: Array, n_permutations: int, seed: int) -> Array:
    """Two-sided paired randomization test of mean ``diffs == 0`` for each column (n x c, no NaN).

    Each permutation flips the sign of every query's difference at random. Vectorised: with random
    bits ``b`` (0/1), the flipped sum is ``2 * (b @ d) - sum(d)``, one matrix product per block of
    permutations for every column (metric x system) at once.
    ``p = (1 + #{|mean*| >= |mean|}) / (1 + n_permutations)``.
    """
    n, c = diffs.shape
    if n == 0:
        return np.full(c, np.nan)
    d32 = diffs.astype(np.float32)
    total = d32.astype(np.float64).sum(axis=0)
    observed = np.abs(total)
    # The products run in float32 (half the memory traffic); their rounding error is below
    # n * eps32 * max|d|, so a flipped sum that equals the observed one exactly (discrete metrics)
    # still counts as a tie, while distinct sums of such metrics differ by far more than this.
    tol = 4.0 * n * float(np.finfo(np.float32).eps) * np.maximum(np.abs(diffs).max(axis=0), 1e-12)
    rng = np.random.default_rng(seed)
    hits = np.zeros(c)
    step = max(1, 2_000_000 // n)
    for start in range(0, n_permutations, step):
        b = min(step, n_permutations - start)
        raw = np.frombuffer(rng.bytes((b * n + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(raw)[: b * n].reshape(b, n).astype(np.float32)
        flipped = np.abs(2.0 * (bits @ d32).astype(np.float64) - total)
        hits += (flipped >= observed - tol).sum(axis=0)
    out: Array = (1 + hits) / (1 + n_permutations)
    return out


def holm(pvalues: Array) -> Array:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count in the family)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    mcount = order.size
    adjusted = np.minimum(1.0, np.maximum.accumulate((mcount - np.arange(mcount)) * p[order]))
    out[order] = adjusted
    return out


def paired_ttest_p(diffs: Array) -> Array:
    """Two-sided paired t-test p-value per column of differences (scipy's ``ttest_rel``).

    t = mean / (sd / sqrt(n)) with n - 1 degrees of freedom; p = 2 * P(T <= -|t|). Computed here
    with ``scipy.special.stdtr`` rather than through ``scipy.stats``, whose import alone takes over a
    second of a report's start-up; a test compares the values with ``scipy.stats.ttest_rel``.
    """
    from scipy.special import stdtr

    n, c = diffs.shape
    out = np.full(c, np.nan)
    if n < 2:
        return out
    zero = np.all(np.abs(diffs) <= TIE_EPS, axis=0)
    if (~zero).any():
        d = diffs[:, ~zero]
        with np.errstate(invalid="ignore", divide="ignore"):
            # Constant non-zero differences: sd 0, |t| infinite, p 0 (as scipy).
            t = d.mean(axis=0) / (d.std(axis=0, ddof=1) / np.sqrt(n))
            out[~zero] = 2.0 * stdtr(n - 1, -np.abs(t))
    out[zero] = 1.0  # identical scores on every query: no evidence of a difference
    return out
