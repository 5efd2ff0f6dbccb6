"""The PPI++ kernel (:func:`ndcg_labeling.stats.ppi_mean`) against the ``ppi-python`` package, its authors'
reference implementation (``ppi_mean_pointestimate`` / ``ppi_mean_ci``), on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeling.stats import ppi_mean

ppi_py = pytest.importorskip("ppi_py")


def _inputs(seed: int, n: int, big_n: int, bias: float, weighted: bool):
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 3, big_n)  # a per-query NDCG-like value
    judge = np.clip(truth + bias + rng.normal(0, 0.15, big_n), 0, 1)
    audit = rng.choice(big_n, n, replace=False)
    w = rng.uniform(0.5, 3.0, n) if weighted else None
    return judge, truth[audit], judge[audit], w


@pytest.mark.parametrize("lam", [None, 1.0, 0.0, 0.4])
@pytest.mark.parametrize("seed,n,big_n,bias,weighted", [
    (0, 10, 43, 0.1, False), (1, 25, 54, -0.2, False), (2, 10, 200, 0.0, True), (3, 3, 20, 0.5, True),
    (4, 40, 40, 0.05, False),  # every query audited (the judge still covers all N)
])
def test_ppi_mean_equals_ppi_python(lam, seed, n, big_n, bias, weighted):
    judge_all, y, yhat, w = _inputs(seed, n, big_n, bias, weighted)
    got = ppi_mean(judge_all, y, yhat, weights=w, lam=lam)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, judge_all, lam=lam, w=w)
    low, high = ppi_py.ppi_mean_ci(y, yhat, judge_all, alpha=0.05, lam=lam, w=w)
    assert got.estimate == pytest.approx(float(np.squeeze(point)), abs=1e-9)
    assert got.ci_low == pytest.approx(float(np.squeeze(low)), abs=1e-9)
    assert got.ci_high == pytest.approx(float(np.squeeze(high)), abs=1e-9)
    # the audit alone is the classical interval (lam = 0)
    low0, high0 = ppi_py.ppi_mean_ci(y, yhat, judge_all, alpha=0.05, lam=0.0, w=w)
    assert got.human_low == pytest.approx(float(np.squeeze(low0)), abs=1e-9)
    assert got.human_high == pytest.approx(float(np.squeeze(high0)), abs=1e-9)


def test_power_tuned_lambda_is_ppi_pythons():
    """The tuned lambda itself: the interval at our lambda, passed to ppi-python as a fixed lam, is ours."""
    judge_all, y, yhat, _ = _inputs(7, 12, 80, 0.3, False)
    got = ppi_mean(judge_all, y, yhat)
    assert 0.0 < got.lam < 1.0
    low, high = ppi_py.ppi_mean_ci(y, yhat, judge_all, alpha=0.05, lam=got.lam)
    assert (got.ci_low, got.ci_high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)


def test_bias_effective_n_and_a_useless_judge():
    judge_all, y, yhat, _ = _inputs(5, 15, 100, 0.25, False)
    got = ppi_mean(judge_all, y, yhat)
    assert got.judge_bias == pytest.approx(float(np.mean(yhat - y)))
    assert got.effective_n == pytest.approx(15 * got.human_std_error**2 / got.std_error**2)
    assert got.effective_n > 15  # a correlated judge buys audit size
    # a constant judge: no information, people alone (ppi-python would divide by zero here)
    flat = ppi_mean(np.full(100, 0.7), y, np.full(15, 0.7))
    assert flat.lam == 0.0 and flat.estimate == pytest.approx(float(y.mean()))


@pytest.mark.parametrize("args,match", [
    (([0.1, 0.2], [0.3], [0.2]), "at least 2"),
    (([0.1, 0.2], [0.3, 0.1], [0.2]), "same length"),
    (([0.1, np.nan], [0.3, 0.1], [0.2, 0.1]), "finite"),
])
def test_ppi_mean_refuses_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        ppi_mean(*args)


@pytest.mark.parametrize("seed,n,big_n,weighted", [(0, 10, 43, False), (2, 12, 200, True)])
def test_t_interval_is_students(seed, n, big_n, weighted):
    """interval="t": people alone is scipy's Student t interval on the audit (n - 1 df); a fixed lambda uses
    n - 1 df and unbiased variances; a tuned one n - 2 df (ppi-python's point estimate is unchanged); weighted,
    Kish's effective size (sum w)^2 / sum w^2 stands for n."""
    scipy_stats = pytest.importorskip("scipy.stats")
    judge_all, y, yhat, w = _inputs(seed, n, big_n, 0.2, weighted)
    wn = np.ones(n) if w is None else w / w.sum() * n
    df = wn.sum() ** 2 / (wn**2).sum()
    got = ppi_mean(judge_all, y, yhat, weights=w, interval="t")
    low, high = scipy_stats.t.interval(0.95, df - 1, loc=np.mean(wn * y), scale=scipy_stats.sem(wn * y))
    assert (got.human_low, got.human_high) == pytest.approx((low, high), abs=1e-12)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, judge_all, lam=None, w=w)
    assert got.estimate == pytest.approx(float(np.squeeze(point)), abs=1e-9)
    se = np.sqrt((got.lam * judge_all).var(ddof=1) / big_n + (wn * (y - got.lam * yhat)).var(ddof=1) / n)
    q = scipy_stats.t.ppf(0.975, df - 2)
    assert (got.ci_low, got.ci_high) == pytest.approx((got.estimate - q * se, got.estimate + q * se), abs=1e-12)
    fixed = ppi_mean(judge_all, y, yhat, weights=w, lam=1.0, interval="t")
    se1 = np.sqrt(judge_all.var(ddof=1) / big_n + (wn * (y - yhat)).var(ddof=1) / n)
    assert fixed.ci_high - fixed.estimate == pytest.approx(scipy_stats.t.ppf(0.975, df - 1) * se1, abs=1e-12)
    # the normal (ppi-python) interval is the narrower one at a small audit
    normal = ppi_mean(judge_all, y, yhat, weights=w)
    assert got.ci_high - got.ci_low > normal.ci_high - normal.ci_low


def test_weighted_ppi_is_the_hand_computed_stratified_estimate():
    """Six queries in two strata, A = 0..3 (2 audited: inclusion 1/2) and B = 4, 5 (both: inclusion 1).
    By hand, lambda = 1: mean(judge) + 4/6 mean_A(human - judge) + 2/6 mean_B(human - judge)
    = 3.4/6 + 4/6 * (-0.15) + 2/6 * (-0.05) = 0.45; people alone: 4/6 * 0.4 + 2/6 * 0.8 = 8/15."""
    judge_all = np.array([0.5, 0.6, 0.2, 0.4, 0.9, 0.8])
    audit = np.array([0, 1, 4, 5])
    human = np.array([0.3, 0.5, 0.7, 0.9])
    weights = 1.0 / np.array([0.5, 0.5, 1.0, 1.0])
    got = ppi_mean(judge_all, human, judge_all[audit], weights=weights, lam=1.0, interval="t")
    assert got.estimate == pytest.approx(0.45, abs=1e-12)
    assert got.human == pytest.approx(8 / 15, abs=1e-12)


def test_weighted_ppi_is_unbiased_under_a_stratified_audit():
    """A population whose judge is biased differently in two strata, audited unequally: 4 of 8 and 3 of 24.
    Weighted by 1 / inclusion with a fixed lambda, the mean estimate over 4000 audits is the population mean
    (within 4 Monte-Carlo standard errors: Horvitz-Thompson is exactly unbiased); with lambda tuned on the same
    7 queries it is off by a small share of its spread (PPI++ is unbiased only as the audit grows); counted
    equally, it is far off."""
    rng = np.random.default_rng(11)
    sizes, takes = (8, 24), (4, 3)
    truth = np.concatenate([rng.beta(5, 2, sizes[0]), rng.beta(2, 5, sizes[1])])
    judge = truth + np.concatenate([np.full(sizes[0], 0.3), np.full(sizes[1], -0.1)]) + rng.normal(0, 0.05, truth.size)
    strata = [np.arange(sizes[0]), sizes[0] + np.arange(sizes[1])]
    est = {"weighted": [], "tuned": [], "equal": []}
    for _ in range(4000):
        pick = np.concatenate([rng.choice(s, k, replace=False) for s, k in zip(strata, takes, strict=True)])
        w = np.concatenate([np.full(k, len(s) / k) for s, k in zip(strata, takes, strict=True)])
        est["weighted"].append(ppi_mean(judge, truth[pick], judge[pick], weights=w, lam=1.0).estimate)
        est["tuned"].append(ppi_mean(judge, truth[pick], judge[pick], weights=w).estimate)
        est["equal"].append(ppi_mean(judge, truth[pick], judge[pick], lam=1.0).estimate)
    target = truth.mean()
    fixed, tuned = np.array(est["weighted"]), np.array(est["tuned"])
    assert abs(fixed.mean() - target) < 4 * fixed.std() / np.sqrt(fixed.size)
    assert abs(tuned.mean() - target) < 0.2 * tuned.std()
    equal = np.array(est["equal"])
    assert abs(equal.mean() - target) > 10 * equal.std() / np.sqrt(equal.size)


def test_predicted_halfwidths_at_the_audit_so_far_are_the_intervals_it_gives():
    """At the audit's own size the predicted half-widths are the intervals that audit gives: scipy's Student t
    interval for people alone, ppi_mean(interval="t") for PPI++; larger audits predict narrower ones."""
    scipy_stats = pytest.importorskip("scipy.stats")
    from ndcg_labeling.stats import ppi_halfwidths

    judge_all, y, yhat, _ = _inputs(9, 10, 60, 0.15, False)
    ppi, human = ppi_halfwidths(judge_all, y, yhat, np.array([2, 10, 20, 40]))
    est = ppi_mean(judge_all, y, yhat, interval="t")
    low, high = scipy_stats.t.interval(0.95, 9, loc=y.mean(), scale=scipy_stats.sem(y))
    assert np.isnan(ppi[0]) and np.isnan(human[0])
    assert human[1] == pytest.approx((high - low) / 2, abs=1e-12)
    assert ppi[1] == pytest.approx((est.ci_high - est.ci_low) / 2, abs=1e-12)
    assert ppi[1] > ppi[2] > ppi[3] and human[1] > human[2] > human[3]


def _population(seed: int, big_n: int):
    rng = np.random.default_rng(seed)
    human = rng.beta(2, 3, big_n)
    judge = np.clip(0.8 * human + 0.2 + rng.normal(0, 0.12, big_n), 0, 1)
    return human, judge


@pytest.mark.parametrize("lam", [0.6, 1.0, 0.0])
def test_finite_population_form_is_the_exact_design_variance(lam):
    """target="queries" with a fixed lambda and fpc=True, against the design itself: over every one of the
    C(9, 4) = 126 audits of a 9-query population (simple random sampling without replacement, enumerated), the
    estimate's mean is the population mean (exactly unbiased) and the mean of se^2 is the estimate's variance
    across the audits (the variance estimator is exactly unbiased); the same for people alone."""
    from itertools import combinations

    human, judge = _population(3, 9)
    est, var_hat, hum, hum_var = [], [], [], []
    for pick in combinations(range(9), 4):
        idx = list(pick)
        got = ppi_mean(judge, human[idx], judge[idx], lam=lam, interval="t", target="queries", fpc=True)
        est.append(got.estimate)
        var_hat.append(got.std_error**2)
        hum.append(got.human)
        hum_var.append(got.human_std_error**2)
    assert len(est) == 126
    assert np.mean(est) == pytest.approx(human.mean(), abs=1e-12)
    assert np.mean(var_hat) == pytest.approx(np.var(est), abs=1e-12)
    assert np.mean(hum) == pytest.approx(human.mean(), abs=1e-12)
    assert np.mean(hum_var) == pytest.approx(np.var(hum), abs=1e-12)


def test_finite_population_form_with_a_tuned_lambda_is_the_least_squares_line():
    """target="queries", lambda tuned: the regression estimator, i.e. statsmodels' OLS of people's values on
    the judge's over the audit, its fitted line at the judge's mean over every query, its residual variance
    (n - 2 ddof) over n for se^2 (times 1 - n / N with fpc) and Student's t with the OLS residual df."""
    sm = pytest.importorskip("statsmodels.api")
    scipy_stats = pytest.importorskip("scipy.stats")
    human, judge = _population(4, 60)
    audit = np.random.default_rng(5).choice(60, 12, replace=False)
    fit = sm.OLS(human[audit], sm.add_constant(judge[audit])).fit()
    assert 0.0 < fit.params[1] < 1.0
    line = float(fit.predict(np.array([[1.0, judge.mean()]]))[0])
    for fpc in (False, True):
        got = ppi_mean(judge, human[audit], judge[audit], interval="t", target="queries", fpc=fpc)
        assert got.lam == pytest.approx(fit.params[1], abs=1e-12)
        assert got.estimate == pytest.approx(line, abs=1e-12)
        se = np.sqrt(fit.mse_resid / 12 * ((1 - 12 / 60) if fpc else 1.0))
        assert got.std_error == pytest.approx(se, abs=1e-12)
        q = scipy_stats.t.ppf(0.975, fit.df_resid)
        assert (got.ci_low, got.ci_high) == pytest.approx((line - q * se, line + q * se), abs=1e-12)
    # no judge term: narrower than the superpopulation form at the same lambda
    sup = ppi_mean(judge, human[audit], judge[audit], lam=got.lam, interval="t")
    fin = ppi_mean(judge, human[audit], judge[audit], lam=got.lam, interval="t", target="queries")
    assert fin.std_error < sup.std_error


@pytest.mark.parametrize("kwargs,match", [({"target": "sample"}, "target"), ({"fpc": True}, "fpc")])
def test_ppi_mean_refuses_a_bad_target(kwargs, match):
    human, judge = _population(1, 20)
    with pytest.raises(ValueError, match=match):
        ppi_mean(judge, human[:5], judge[:5], **kwargs)
