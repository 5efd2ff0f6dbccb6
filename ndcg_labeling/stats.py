"""Resampling statistics for paired system comparisons: arrays in, arrays out.

Pure kernel (numpy, and ``scipy.special`` for the t distributions, imported when first needed): no database,
no pandas.
Used by the report, which scores queries per system and compares systems query by query.

* :func:`bootstrap_counts` / :func:`bootstrap_ci`: percentile bootstrap interval of the mean of each
  column, every column resampled with the same draws (paired);
* :func:`randomization_p`: two-sided paired randomization (sign-flip) test of a zero mean difference;
* :func:`paired_ttest_p`: the paired t-test (as ``scipy.stats.ttest_rel``);
* :func:`holm`: Holm's step-down adjustment of a family of p-values; :func:`bonferroni`: Bonferroni's,
  whose matching intervals (each at ``1 - alpha / m``) are simultaneous, so a corrected p below ``alpha``
  and an interval excluding 0 always agree (the report's comparisons with the baseline).
* :func:`paired_t_power`, :func:`queries_needed`, :func:`minimum_detectable_effect`: the power of the
  paired t-test, the queries it needs for a difference, and the difference its queries can detect;
* :func:`paired_t_interval`: the t-test's interval of the mean difference; :func:`paired_t_p_below`:
  the one-sided t-test of a mean difference below a bound (the CI gate's test of a drop beyond
  ``--max-drop``).
* :func:`ppi_mean`: prediction-powered inference (PPI++, power-tuned) of a mean from a judge's values on
  every query and people's values on an audited few (``report --estimator ppi``, docs/judges.md);
  :func:`audit_allocation`: how many queries each stratum of an audit gets (``tasks create --audit-of``);
  :func:`ppi_halfwidths`: the t half-widths PPI++ and people alone should reach at larger audits (``plan --judge``).

Every function takes a fixed ``seed`` where it draws, so the same input gives the same output.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[Any]
#: differences smaller than this count as ties (a query won, tied or lost; a zero difference)
TIE_EPS = 1e-12


# The t distributions from scipy.special, imported on first use: its import (0.1-0.2 s) stays out of the
# start of every command that never runs a t-test.
def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` of Student's t with ``df`` degrees of freedom."""
    from scipy.special import stdtr

    return float(stdtr(df, -t))


def t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` of Student's t with ``df`` degrees of freedom."""
    from scipy.special import stdtr

    return float(stdtr(df, t))


def t_isf(q: float, df: float) -> float:
    """The ``t`` with ``P(T > t) = q`` (Student's t, ``df`` degrees of freedom)."""
    from scipy.special import stdtrit

    return -float(stdtrit(df, q))


def nct_cdf(t: float, df: float, nc: float) -> float:
    """``P(T' <= t)`` of the non-central t with ``df`` degrees of freedom and non-centrality ``nc``. Far in
    the lower tail ``nctdtr`` answers NaN (scipy 1.17); there ``1 - P(T'(-nc) <= -t)``, the same value
    by symmetry, rounds to 0 as it should."""
    from scipy.special import nctdtr

    p = float(nctdtr(df, nc, t))
    return p if math.isfinite(p) else 1.0 - float(nctdtr(df, -nc, -t))


# One BLAS limit for the whole process, shared by the threads that resample at once (the web server
# answers two reports in two threads): the first holder sets it, the last one to leave restores it.
# threadpoolctl's own context manager is process-wide with no count, so two overlapping ones could restore
# the limit while the other still runs, or leave the process at one thread for good.
_blas_lock = threading.Lock()
_blas_holders = 0
_blas_limiter: Any = None


def _free_blas_control() -> None:
    """threadpoolctl (3.7 on) lets one "controlling" thread change OpenBLAS's process-wide pool and
    silently ignores the others; the first holder may set the limit and another thread restore it, so
    each change (under ``_blas_lock``) is made with no thread in control, and leaves none. Older
    threadpoolctl has no such owner: nothing to do."""
    import threadpoolctl

    clear = getattr(getattr(threadpoolctl, "OpenBLASController", None), "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """NumPy's BLAS held to one thread (``threadpoolctl``) for the resampling products below: they are
    narrow (n x a few dozen columns) and bound by memory, so a second thread gains nothing on an idle
    host, while on a busy one its threads wait for each other (``report`` over 1.5M ranking rows,
    2 cores, load 1.7: 2.5 s with two threads, 1.7 s with one). One thread also sums in one order
    whatever the host's core count, so the intervals' last digits no longer depend on it.

    Safe under threads: holders are counted under a lock; the limit is set when the first enters and
    the original limits come back when the last leaves (never while another holder is still inside)."""
    global _blas_holders, _blas_limiter
    with _blas_lock:
        if _blas_holders == 0:
            from threadpoolctl import threadpool_limits

            _free_blas_control()
            _blas_limiter = threadpool_limits(1, user_api="blas")
            _free_blas_control()
        _blas_holders += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_holders -= 1
            if _blas_holders == 0:
                _free_blas_control()
                _blas_limiter.restore_original_limits()
                _free_blas_control()
                _blas_limiter = None


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
    with _one_blas_thread():
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
    with _one_blas_thread():
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


def bonferroni(pvalues: Array) -> tuple[Array, int]:
    """Bonferroni-adjusted p-values ``min(1, m * p)`` and the family size ``m`` (the finite p-values;
    NaN stays NaN and does not count). The interval that agrees with them is each comparison's at
    confidence ``1 - alpha / m``: it excludes 0 exactly when the adjusted p is below ``alpha``."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = int(np.isfinite(p).sum())
    out: Array = np.where(np.isfinite(p), np.minimum(1.0, p * max(m, 1)), np.nan)
    return out, m


def paired_ttest_p(diffs: Array) -> Array:
    """Two-sided paired t-test p-value per column of differences (scipy's ``ttest_rel``).

    t = mean / (sd / sqrt(n)) with n - 1 degrees of freedom; p = 2 * P(T > |t|), from
    ``scipy.special`` (not ``scipy.stats``, whose import takes over a second); a test compares the values
    with ``scipy.stats.ttest_rel``.
    """
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
            out[~zero] = [2.0 * t_sf(abs(float(v)), n - 1.0) for v in t]
    out[zero] = 1.0  # identical scores on every query: no evidence of a difference
    return out


#: the conventional planning targets: 80 % power at a two-sided 5 % level
DEFAULT_POWER = 0.8
DEFAULT_ALPHA = 0.05
#: the largest number of queries :func:`queries_needed` searches (beyond it the answer is "more than")
MAX_QUERIES = 10_000_000


def _check_power_args(name: str, alpha: float, power: float | None = None) -> None:
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"{name}: alpha must be in (0, 1), got {alpha}")
    if power is not None and not (0.0 < power < 1.0):
        raise ValueError(f"{name}: power must be in (0, 1), got {power}")


def paired_t_power(n: Array | float, effect_size: Array | float, alpha: float = DEFAULT_ALPHA) -> Array:
    """Power of the two-sided paired t-test with ``n`` pairs at standardised effect ``mean / sd``.

    ``power = P(T' > c) + P(T' < -c)`` where ``T'`` is non-central t with ``n - 1`` degrees of freedom
    and non-centrality ``effect_size * sqrt(n)``, and ``c`` the ``1 - alpha / 2`` quantile of the
    central t (as ``statsmodels.stats.power.TTestPower``). ``n`` may be fractional (the solvers search
    it continuously); ``n < 2`` gives NaN.
    """
    _check_power_args("paired_t_power", alpha)
    n_arr, d = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(effect_size, dtype=np.float64))
    crit = _critical_values(n_arr, alpha)
    out: Array = np.array([_power(nv, dv, crit.get(float(nv), np.nan)) for nv, dv in zip(n_arr.ravel(), d.ravel(),
                                                                                          strict=True)],
                          dtype=np.float64).reshape(n_arr.shape)
    return out


def _critical_values(n: Array, alpha: float) -> dict[float, float]:
    """The ``1 - alpha / 2`` quantile of the central t with ``n - 1`` degrees of freedom, per distinct ``n >= 2``."""
    return {float(v): t_isf(alpha / 2.0, float(v) - 1.0) for v in np.unique(n[np.isfinite(n) & (n >= 2)])}


def _power(n: float, effect: float, crit: float) -> float:
    """:func:`paired_t_power` of one ``n`` and effect, given the critical value ``crit``."""
    if not (n >= 2 and np.isfinite(effect) and np.isfinite(crit)):
        return float("nan")
    df, nc = n - 1.0, abs(effect) * math.sqrt(n)  # the power is symmetric in the effect
    return (1.0 - nct_cdf(crit, df, nc)) + nct_cdf(-crit, df, nc)


def queries_needed(mde: float, sd: float, alpha: float = DEFAULT_ALPHA, power: float = DEFAULT_POWER) -> int:
    """The smallest number of queries for which a two-sided paired t-test at level ``alpha`` detects a
    true mean difference of ``mde`` with probability ``power``, when the per-query differences have
    standard deviation ``sd``.

    It equals ``ceil(TTestPower().solve_power(effect_size=mde / sd, alpha=alpha, power=power,
    alternative="two-sided"))`` of statsmodels: the power grows with ``n``, so the smallest whole
    ``n`` reaching the target is the continuous solution rounded up. At least 2 (one difference has
    no variance). ``sd == 0`` (every difference the same) gives 2. Raises ``ValueError`` for a
    non-positive ``mde``, a negative ``sd``, or more than :data:`MAX_QUERIES` queries.
    """
    _check_power_args("queries_needed", alpha, power)
    if not (np.isfinite(mde) and mde > 0):
        raise ValueError(f"queries_needed: mde must be a positive number, got {mde}")
    if not (np.isfinite(sd) and sd >= 0):
        raise ValueError(f"queries_needed: sd must be a non-negative number, got {sd}")
    if sd == 0:
        return 2
    effect = mde / sd
    lo, hi = 2, 4
    while float(paired_t_power(hi, effect, alpha)) < power:
        lo, hi = hi, hi * 2
        if hi > MAX_QUERIES:
            raise ValueError(f"queries_needed: more than {MAX_QUERIES:,} queries needed for mde {mde:g} at sd {sd:g}")
    if float(paired_t_power(lo, effect, alpha)) >= power:
        return lo
    while hi - lo > 1:  # invariant: power(lo) < target <= power(hi)
        mid = (lo + hi) // 2
        if float(paired_t_power(mid, effect, alpha)) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def minimum_detectable_effect(n: Array | float, sd: Array | float, alpha: float = DEFAULT_ALPHA,
                              power: float = DEFAULT_POWER) -> Array:
    """The smallest true mean difference that a two-sided paired t-test with ``n`` queries detects with
    probability ``power`` at level ``alpha``, when per-query differences have standard deviation ``sd``:
    the inverse of :func:`queries_needed` (``sd * d`` where ``paired_t_power(n, d) == power``).

    Element-wise over arrays; NaN where ``n < 2`` or ``sd`` is not finite; 0 where ``sd == 0``.
    Solved by bisection on the standardised effect (60 halvings: far below printed precision).
    """
    _check_power_args("minimum_detectable_effect", alpha, power)
    n_arr, sd_arr = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(sd, dtype=np.float64))
    ok = (n_arr >= 2) & np.isfinite(sd_arr)
    # The standardised effect depends on n alone: one bisection per distinct n.
    counts = np.unique(n_arr[ok])
    crit = _critical_values(counts, alpha)
    effect = {}
    for count in counts.tolist():
        lo, hi = 0.0, 1.0
        for _ in range(64):  # grow the bracket until power(hi) >= target (n = 2 needs d of about 10)
            if _power(count, hi, crit[count]) >= power:
                break
            hi *= 2.0
        for _ in range(60):
            mid = (lo + hi) / 2.0
            if _power(count, mid, crit[count]) >= power:
                hi = mid
            else:
                lo = mid
        effect[count] = hi
    standard = np.array([effect.get(float(v), np.nan) for v in n_arr.ravel()], dtype=np.float64).reshape(n_arr.shape)
    out: Array = np.where(ok, standard * np.where(np.isfinite(sd_arr), sd_arr, 0.0), np.nan)
    return out


#: the fewest queries a line of the headline is tested on: with fewer, the two-sided sign-flip test
#: cannot reach p < 0.05 whatever the data (its smallest p is 2 / 2^n = 0.0625 at n = 5)
MIN_TEST_QUERIES = 6


def paired_t_interval(n: Array | float, mean: Array | float, sd: Array | float,
                      confidence: float = 0.95) -> tuple[Array, Array]:
    """The paired t-test's interval of the mean difference: ``mean -/+ t(1 - (1 - confidence)/2, n - 1)
    * sd / sqrt(n)`` (as ``scipy.stats.ttest_rel(a, b).confidence_interval(confidence)``), elementwise;
    NaN where ``n < 2`` or ``sd`` / ``mean`` is not finite; ``[mean, mean]`` where ``sd == 0``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"paired_t_interval: confidence must be in (0, 1), got {confidence}")
    n_arr, m_arr, s_arr = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (n, mean, sd)))
    ok = (n_arr >= 2) & np.isfinite(m_arr) & np.isfinite(s_arr)
    crit = {c: t_isf((1.0 - confidence) / 2.0, c - 1.0) for c in np.unique(n_arr[ok]).tolist()}
    q = np.array([crit.get(float(v), np.nan) for v in n_arr.ravel()]).reshape(n_arr.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = q * s_arr / np.sqrt(n_arr)
    low: Array = np.where(ok, m_arr - half, np.nan)
    high: Array = np.where(ok, m_arr + half, np.nan)
    return low, high


def paired_t_p_below(n: Array | float, mean: Array | float, sd: Array | float, bound: float) -> Array:
    """One-sided paired t-test p of ``true mean < bound`` against ``true mean >= bound``: ``P(T <= t)``
    with ``t = (mean - bound) / (sd / sqrt(n))`` and ``n - 1`` degrees of freedom (as
    ``scipy.stats.ttest_1samp(diffs - bound, 0, alternative="less")``), elementwise. NaN where
    ``n < 2``; with ``sd == 0``, 0 when ``mean < bound`` and 1 otherwise."""
    n_arr, m_arr, s_arr = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (n, mean, sd)))
    out = np.full(n_arr.shape, np.nan)
    for idx in np.ndindex(n_arr.shape):
        count, mu, sdev = float(n_arr[idx]), float(m_arr[idx]), float(s_arr[idx])
        if count < 2 or not (math.isfinite(mu) and math.isfinite(sdev)):
            continue
        if sdev <= TIE_EPS:
            out[idx] = 0.0 if mu < bound - TIE_EPS else 1.0
            continue
        out[idx] = t_cdf((mu - bound) / (sdev / math.sqrt(count)), count - 1.0)
    return out


@dataclass(frozen=True)
class PpiEstimate:
    """What :func:`ppi_mean` found. ``estimate`` and ``ci_low``/``ci_high``: the PPI++ point estimate and its
    normal interval; ``lam``: the weight given to the judge (0: people only, 1: classic PPI);
    ``std_error``: the estimate's standard error; ``human``, ``human_low``/``human_high`` and ``human_std_error``:
    the audit alone (the classical estimate, ``lam = 0``); ``effective_n``: ``n_audited`` times the ratio of
    the two variances (the audit size people alone would need for the same width); ``judge_bias``: the
    (weighted) mean of judge - human on the audit; ``judge_mean``: the judge's mean over every query."""

    estimate: float
    ci_low: float
    ci_high: float
    std_error: float
    lam: float
    n_audited: int
    n_total: int
    effective_n: float
    judge_bias: float
    judge_mean: float
    human: float
    human_low: float
    human_high: float
    human_std_error: float


def _ppi_check(name: str, values: Array) -> Array:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"ppi_mean: {name} must be one-dimensional, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"ppi_mean: {name} must be finite, got {arr[bad[0]]} at {int(bad[0])}")
    return arr


def _ppi_point(y: Array, yhat: Array, yhat_all: Array, w: Array, lam: float) -> float:
    return float((lam * yhat_all).mean() + (w * (y - lam * yhat)).mean())


def _ppi_lam(y: Array, yhat: Array, yhat_all: Array, w: Array) -> float:
    """PPI++'s power-tuned lambda (ppi-python's ``_calc_lam_glm`` for the mean), clipped to [0, 1]."""
    n, big_n = y.size, yhat_all.size
    theta1 = _ppi_point(y, yhat, yhat_all, w, 1.0)
    g, g_hat = w * (y - theta1), w * (yhat - theta1)
    cov = 2.0 * float(((g - g.mean()) * (g_hat - g_hat.mean())).sum()) / n
    pooled = np.concatenate([g_hat, yhat_all - theta1])
    denom = 2.0 * (1.0 + n / big_n) * float(pooled.var(ddof=1))
    return float(np.clip(cov / denom, 0.0, 1.0)) if denom > 0 else 0.0


def _regression_lam(y: Array, yhat: Array, w: Array) -> float:
    """The (weighted) least-squares slope of people's values on the judge's over the audit, clipped to [0, 1]:
    the lambda that minimizes the spread of ``human - lam * judge`` (the regression estimator's slope)."""
    xc = yhat - float((w * yhat).mean())
    yc = y - float((w * y).mean())
    sxx = float((w * xc * xc).sum())
    return float(np.clip(float((w * xc * yc).sum()) / sxx, 0.0, 1.0)) if sxx > 0 else 0.0


def ppi_mean(judge_all: Array, human_audit: Array, judge_audit: Array, *, weights: Array | None = None,
             lam: float | None = None, confidence: float = 0.95, interval: str = "normal",
             target: str = "population", fpc: bool = False) -> PpiEstimate:
    """Prediction-powered estimate of the mean of a per-query value (Angelopoulos, Bates, Fannjiang, Jordan
    and Zrnic 2023, "Prediction-powered inference"; PPI++, Angelopoulos, Duchi and Zrnic 2023,
    arXiv:2311.01453), with the power-tuned ``lam`` when ``lam`` is None.

    ``judge_all``: the judge-based value of every query (N); ``human_audit`` and ``judge_audit``: the
    people-based and judge-based values of the audited queries (n, drawn at random from the same queries);
    ``weights``: optional per audited query weights (inverse inclusion probabilities), scaled to sum to n.
    With ``w`` the scaled weights::

        theta(lam) = lam * mean(judge_all) + mean(w * (human - lam * judge))
        se(lam)^2  = var(lam * judge_all) / N + var(w * (human - lam * judge)) / n      (var: ddof 0)
        lam*       = clip(cov(g, g_hat) / ((1 + n / N) * var([g_hat; g_hat_all])), 0, 1)

    where ``g = w * (human - theta(1))``, ``g_hat = w * (judge - theta(1))``, ``g_hat_all = judge_all -
    theta(1)``, ``cov`` is ddof 0 and the pooled ``var`` ddof 1: exactly ``ppi_py.ppi_mean_ci`` and
    ``ppi_mean_pointestimate`` (``ppi-python`` 0.2), which the tests compare with. The interval is
    ``theta +- z * se`` (normal). ``lam = 1`` is classic PPI, ``lam = 0`` the audit alone (the ``human``
    fields). A paired difference of two systems is this estimator on the per-query differences.

    ``interval="t"``, the report's (``"normal"`` is ppi-python's): ddof-1 variances and Student's t with
    ``n - 2`` degrees of freedom when ``lam`` is tuned on the audit (``n - 1`` when given; people alone:
    ``n - 1``; weighted, Kish's effective size replaces ``n``). At 10 audited queries the normal interval undercovers (about 0.90 on TREC DL) and the t one
    holds 0.94 (benchmarks/bench_ppi.py). Both assume a random (or ``weights``-weighted) audit of the queries.

    ``target="queries"`` (design-based): the target is the mean over exactly the ``judge_all`` queries (a
    finite population whose judge values are all known and fixed), the audit a simple random sample of them
    drawn without replacement (or ``weights``-weighted). Then ``lam * mean(judge_all)`` is a constant and the
    estimate is the difference estimator (Cochran 1977, ch. 7; with ``lam`` tuned, the linear regression
    estimator)::

        theta(lam) = lam * mean(judge_all) + mean(w * (human - lam * judge))      (as above)
        se(lam)^2  = [1 - n / N] * var(w * (human - lam * judge)) / n    (t: ddof 2 tuned, 1 fixed)
        lam*       = clip(least-squares slope of human on judge over the audit, 0, 1)

    (``normal``: one ddof less), with no ``lam^2 var(judge_all) / N`` term (that term is the judge's sampling
    error about a larger population, which this target does not have). ``fpc=True`` applies the
    finite-population correction ``1 - n / N`` (the exact design variance for a fixed ``lam`` and a simple
    random audit, which tests/test_stats_ppi.py checks by enumerating every audit of a small population; with
    stratified ``weights`` it is the overall sampling fraction, an approximation); the default leaves it out,
    which is conservative by ``sqrt(1 - n / N)`` and matters at ten audited queries: per-query NDCG residuals
    are skewed and the exact-variance t interval covers only 0.89-0.94 of the worst target
    (benchmarks/bench_ppi.py). The human-only fields get the same
    correction, so the width ratio does not depend on ``fpc``. Unweighted, with ``lam`` tuned in (0, 1),
    the estimate is the least-squares line at ``mean(judge_all)`` and ``se`` its residual standard error
    over ``sqrt(n)`` (times the correction), with ``n - 2`` degrees of freedom.

    Edge cases: a judge constant over every query carries no information and gets ``lam = 0`` (ppi-python
    divides by zero there); ``effective_n`` is ``n`` when both variances are zero and infinite when only
    the PPI one is. Raises ValueError for fewer than two audited queries, mismatched lengths, non-finite
    values, weights that are not positive, ``lam`` outside [0, 1], an unknown ``target`` or ``fpc`` without
    ``target="queries"``.
    """
    yhat_all, y, yhat, w = _ppi_inputs(judge_all, human_audit, judge_audit, weights, confidence, target, fpc,
                                       interval)
    n, big_n = y.size, yhat_all.size
    finite = target == "queries"
    if lam is None:
        lam = _regression_lam(y, yhat, w) if finite else _ppi_lam(y, yhat, yhat_all, w)
        tuned = True
    elif not 0.0 <= lam <= 1.0:
        raise ValueError(f"ppi_mean: lam must be in [0, 1], got {lam}")
    else:
        tuned = False
    theta = _ppi_point(y, yhat, yhat_all, w, lam)
    z, z_human, se, human_se = _ppi_errors(y, yhat, yhat_all, w, lam, tuned=tuned, finite=finite, fpc=fpc,
                                           interval=interval, confidence=confidence)
    human = float((w * y).mean())
    if se > 0:
        effective = n * human_se**2 / se**2
    else:
        effective = float(n) if human_se == 0 else math.inf
    return PpiEstimate(estimate=theta, ci_low=theta - z * se, ci_high=theta + z * se, std_error=se, lam=float(lam),
                       n_audited=n, n_total=big_n, effective_n=effective,
                       judge_bias=float((w * (yhat - y)).mean()), judge_mean=float(yhat_all.mean()),
                       human=human, human_low=human - z_human * human_se, human_high=human + z_human * human_se,
                       human_std_error=human_se)


def _ppi_inputs(judge_all: Array, human_audit: Array, judge_audit: Array, weights: Array | None,
                confidence: float, target: str, fpc: bool, interval: str) -> tuple[Array, Array, Array, Array]:
    """:func:`ppi_mean`'s inputs checked (its ValueErrors), the weights scaled to sum to n."""
    yhat_all = _ppi_check("judge_all", judge_all)
    y = _ppi_check("human_audit", human_audit)
    yhat = _ppi_check("judge_audit", judge_audit)
    n = y.size
    if yhat.size != n:
        raise ValueError(f"ppi_mean: human_audit and judge_audit must have the same length, got {n} and {yhat.size}")
    if n < 2:
        raise ValueError(f"ppi_mean: needs at least 2 audited queries, got {n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"ppi_mean: confidence must be in (0, 1), got {confidence}")
    if weights is None:
        w = np.ones(n)
    else:
        w = _ppi_check("weights", weights)
        if w.size != n or (w <= 0).any():
            raise ValueError(f"ppi_mean: weights must be {n} positive numbers, one per audited query")
        w = w / w.sum() * n
    if target not in ("population", "queries"):
        raise ValueError(f"ppi_mean: target must be 'population' or 'queries', got {target!r}")
    if fpc and target != "queries":
        raise ValueError("ppi_mean: fpc applies to target='queries' (a finite population) only")
    if interval not in ("normal", "t"):
        raise ValueError(f"ppi_mean: interval must be 'normal' or 't', got {interval!r}")
    return yhat_all, y, yhat, w


def _ppi_errors(y: Array, yhat: Array, yhat_all: Array, w: Array, lam: float, *,
                tuned: bool, finite: bool, fpc: bool, interval: str,
                confidence: float) -> tuple[float, float, float, float]:
    """:func:`ppi_mean`'s quantiles and standard errors: (z, z_human, se, human_se)."""
    from scipy.special import ndtri, stdtrit

    n, big_n = y.size, yhat_all.size
    tail = 1.0 - (1.0 - confidence) / 2.0
    ddof = 1 if interval == "t" else 0
    if interval == "t":  # weighted: Kish's effective size (sum w)^2 / sum w^2 in place of n
        n_eff = float(w.sum()) ** 2 / float((w**2).sum())
        z = float(stdtrit(max(n_eff - (2 if tuned and lam > 0 else 1), 1.0), tail))
        z_human = float(stdtrit(max(n_eff - 1, 1.0), tail))
    else:
        z = z_human = float(ndtri(tail))
    if finite:  # the judge term is a constant; residual ddof: one more when lambda is fitted (regression)
        shrink = math.sqrt(max(1.0 - n / big_n, 0.0)) if fpc else 1.0
        r_ddof = ddof + (1 if tuned and lam > 0 and n > 2 else 0)
        se = shrink * float((w * (y - lam * yhat)).std(ddof=r_ddof)) / math.sqrt(n)
        human_se = shrink * float((w * y).std(ddof=ddof)) / math.sqrt(n)
    else:
        se = math.sqrt(float((lam * yhat_all).std(ddof=ddof)) ** 2 / big_n
                       + float((w * (y - lam * yhat)).std(ddof=ddof)) ** 2 / n)
        human_se = float((w * y).std(ddof=ddof)) / math.sqrt(n)
    return z, z_human, se, human_se


def audit_allocation(sizes: Array, spreads: Array, budget: int, *, minimum: int = 2) -> NDArray[np.int64]:
    """Queries to audit per stratum: the integer allocation of ``budget`` that minimizes the variance of a
    stratified mean, ``sum_h N_h^2 S_h^2 (1 / n_h - 1 / N_h)`` (Neyman allocation, ``n_h`` about
    proportional to ``N_h S_h``; stratified PPI, Fisch et al. 2024, with ``S_h`` the spread of what the
    judge leaves unexplained), with at least ``minimum`` per stratum (two: a stratum's variance needs two)
    and at most ``N_h``.

    ``sizes``: the queries ``N_h`` of each stratum; ``spreads``: ``S_h`` (non-negative; a stratum of zero
    spread gets ``minimum``). Greedy: each further query goes where it removes the most variance, which is
    optimal for this separable convex objective. Raises ValueError for a budget below ``minimum`` per
    stratum or above the number of queries, or mismatched or negative inputs.
    """
    n_h = np.asarray(sizes, dtype=np.int64)
    s_h = np.asarray(spreads, dtype=np.float64)
    if n_h.ndim != 1 or s_h.shape != n_h.shape or (n_h < 1).any() or (s_h < 0).any() or not np.isfinite(s_h).all():
        raise ValueError("audit_allocation: sizes must be positive and spreads non-negative, one of each per stratum")
    floor = np.minimum(n_h, minimum)
    if budget < int(floor.sum()):
        raise ValueError(f"audit_allocation: budget {budget} is below {minimum} queries for each of the "
                         f"{n_h.size} strata ({int(floor.sum())})")
    if budget > int(n_h.sum()):
        raise ValueError(f"audit_allocation: budget {budget} is more than the {int(n_h.sum())} queries")
    alloc = floor.copy()
    weight = (n_h.astype(np.float64) * s_h) ** 2
    for _ in range(budget - int(alloc.sum())):
        gain = np.where(alloc < n_h, weight / (alloc * (alloc + 1.0)), -1.0)
        if not (gain > 0).any():  # every spread zero (or strata full): spread what is left by size
            gain = np.where(alloc < n_h, n_h / (alloc + 1.0), -1.0)
        alloc[int(np.argmax(gain))] += 1
    return alloc


def ppi_halfwidths(judge_all: Array, human_audit: Array, judge_audit: Array, sizes: Array,
                   confidence: float = 0.95) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The 95% half-widths that :func:`ppi_mean` (``interval="t"``) and people alone should give at audits of
    ``sizes`` queries, predicted from the audit so far (``human_audit``/``judge_audit``, at least 3 queries):
    with ``lam`` the power-tuned weight of the audit so far, ``s_r`` and ``s_y`` the (ddof 1) sds of
    ``human - lam * judge`` and of ``human`` on it::

        ppi(n)   = t(n - 2) * sqrt(lam^2 var(judge_all) / N + s_r^2 / n)
        human(n) = t(n - 1) * s_y / sqrt(n)

    (a random audit; the variances are assumed to stay what the audit so far measured). Sizes below 3 give
    NaN. Raises ValueError for an audit of fewer than 3 queries (see ``ppi_mean`` for the other checks).
    """
    y, yhat = np.asarray(human_audit, dtype=np.float64), np.asarray(judge_audit, dtype=np.float64)
    if y.size < 3:
        raise ValueError(f"ppi_halfwidths: needs at least 3 audited queries, got {y.size}")
    est = ppi_mean(judge_all, y, yhat, confidence=confidence, interval="t")
    yhat_all = np.asarray(judge_all, dtype=np.float64)
    s_r, s_y = float((y - est.lam * yhat).std(ddof=1)), float(y.std(ddof=1))
    judge_term = est.lam**2 * float(yhat_all.var(ddof=1)) / yhat_all.size
    from scipy.special import stdtrit

    tail = 1.0 - (1.0 - confidence) / 2.0
    n = np.asarray(sizes, dtype=np.float64)
    ok = n >= 3
    safe = np.where(ok, n, 3.0)
    ppi = stdtrit(safe - 2.0, tail) * np.sqrt(judge_term + s_r**2 / safe)
    human = stdtrit(safe - 1.0, tail) * s_y / np.sqrt(safe)
    return np.where(ok, ppi, np.nan), np.where(ok, human, np.nan)
