"""Power of the paired t-test (ndcg_labeling.stats) against statsmodels' TTestPower, and a simulation.

The peer is ``statsmodels.stats.power.TTestPower`` (one-sample / paired t-test power); the
simulation draws per-query differences with a known true mean and counts how often our own paired
t-test (``paired_ttest_p``, itself checked against scipy's ``ttest_rel``) rejects.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from ndcg_labeling.stats import minimum_detectable_effect, paired_t_power, paired_ttest_p, queries_needed

CASES = [  # (mde, sd, alpha, power)
    (0.02, 0.10, 0.05, 0.8),
    (0.01, 0.15, 0.05, 0.8),
    (0.05, 0.20, 0.05, 0.9),
    (0.01, 0.15, 0.01, 0.8),
    (0.10, 0.10, 0.05, 0.8),
    (0.30, 0.10, 0.05, 0.8),
    (0.03, 0.25, 0.10, 0.95),
    (0.005, 0.08, 0.05, 0.5),
]


@pytest.mark.parametrize(("mde", "sd", "alpha", "power"), CASES)
def test_queries_needed_matches_statsmodels(mde, sd, alpha, power):
    peer = TTestPower().solve_power(effect_size=mde / sd, alpha=alpha, power=power, alternative="two-sided")
    assert abs(queries_needed(mde, sd, alpha, power) - math.ceil(peer)) <= 1


@pytest.mark.parametrize(("mde", "sd", "alpha", "power"), CASES)
def test_minimum_detectable_effect_inverts_queries_needed(mde, sd, alpha, power):
    n = queries_needed(mde, sd, alpha, power)
    reached = float(minimum_detectable_effect(n, sd, alpha, power))
    # n queries detect mde, one query fewer do not
    assert reached <= mde + 1e-12
    assert float(minimum_detectable_effect(n - 1, sd, alpha, power)) > mde or n == 2
    peer = TTestPower().solve_power(nobs=n, alpha=alpha, power=power, alternative="two-sided") * sd
    assert reached == pytest.approx(peer, rel=1e-4)  # statsmodels solves with brentq tolerance


@pytest.mark.parametrize("n", [2, 5, 40, 300, 2500])
@pytest.mark.parametrize("d", [0.0, 0.1, -0.3, 0.8, 3.0])
def test_power_matches_statsmodels(n, d):
    peer = TTestPower().power(effect_size=d, nobs=n, alpha=0.05, alternative="two-sided")
    assert float(paired_t_power(n, d)) == pytest.approx(peer, abs=1e-9)


def test_edge_cases():
    assert np.isnan(paired_t_power(1, 0.5))
    assert queries_needed(0.01, 0.0) == 2
    assert np.isnan(minimum_detectable_effect(1, 0.1))
    assert float(minimum_detectable_effect(30, 0.0)) == 0.0
    with pytest.raises(ValueError, match="queries_needed: mde must be a positive number"):
        queries_needed(0.0, 0.1)
    with pytest.raises(ValueError, match="power must be in"):
        queries_needed(0.01, 0.1, power=1.0)
    with pytest.raises(ValueError, match="more than"):
        queries_needed(1e-6, 1.0)


def test_simulated_power_at_the_planned_size():
    """Differences drawn at the planned n with true mean = MDE: the paired t-test rejects in 80% +- 4%."""
    mde, sd, trials = 0.02, 0.12, 2000
    n = queries_needed(mde, sd, 0.05, 0.8)
    rng = np.random.default_rng(16)
    diffs = rng.normal(mde, sd, size=(n, trials))
    rejected = float(np.mean(paired_ttest_p(diffs) < 0.05))
    assert 0.76 <= rejected <= 0.84, (n, rejected)
    # and with no true difference it rejects at about alpha
    null = float(np.mean(paired_ttest_p(rng.normal(0.0, sd, size=(n, trials))) < 0.05))
    assert 0.03 <= null <= 0.07


@pytest.mark.parametrize("seed", range(4))
def test_t_interval_and_one_sided_p_equal_scipy(seed):
    from scipy import stats as sps

    from ndcg_labeling.stats import paired_t_interval, paired_t_p_below

    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    d = rng.normal(-0.03, 0.05, n)
    low, high = paired_t_interval(n, d.mean(), d.std(ddof=1), 0.95)
    ci = sps.ttest_1samp(d, 0).confidence_interval(0.95)
    assert float(low) == pytest.approx(ci.low, abs=1e-10) and float(high) == pytest.approx(ci.high, abs=1e-10)
    for bound in (-0.05, -0.028, 0.0):
        ours = float(paired_t_p_below(n, d.mean(), d.std(ddof=1), bound))
        assert ours == pytest.approx(sps.ttest_1samp(d - bound, 0, alternative="less").pvalue, abs=1e-10)
