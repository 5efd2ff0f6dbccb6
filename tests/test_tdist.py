"""The t distributions of ndcg_labeling.tdist against scipy.special (the functions they replace), over
degrees of freedom from 0.5 to 10 million, arguments far into both tails and non-centralities up to 70
(a report's power search starts near there: effect 1 at 5,000 queries)."""

from __future__ import annotations

import itertools
import math

import pytest
from scipy import special

from ndcg_labeling.tdist import betainc, nct_cdf, t_cdf, t_isf, t_sf

DFS = [0.5, 1.0, 1.5, 2.0, 3.0, 4.5, 10.0, 39.0, 299.0, 2499.0, 1e4, 1e5, 1e6, 1e7]
TS = [-100.0, -12.0, -8.0, -3.0, -1.96, -0.5, -1e-3, 0.0, 1e-3, 0.3, 1.0, 2.5, 5.0, 12.0, 100.0]


def _close(ours: float, peer: float, rel: float, floor: float) -> bool:
    """Within ``rel`` of the peer, or within ``floor`` absolutely (values near zero)."""
    return abs(ours - peer) <= max(rel * abs(peer), floor)


@pytest.mark.parametrize(("a", "b"), [(0.5, 0.5), (0.5, 3.0), (2.0, 7.5), (30.5, 1249.5), (5e6, 0.5), (0.5, 5e6),
                                      (1200.0, 1300.0)])
def test_betainc_matches_scipy(a, b):
    for x in (1e-12, 1e-6, 0.01, 0.2, 0.5, 0.8, 0.99, 1 - 1e-6, 1 - 1e-9):
        assert _close(betainc(a, b, x), float(special.betainc(a, b, x)), 1e-9, 1e-14), x


@pytest.mark.parametrize("df", DFS)
def test_t_cdf_matches_scipy_stdtr(df):
    for t in TS:
        peer = float(special.stdtr(df, t))
        assert _close(t_cdf(t, df), peer, 1e-9, 1e-15), t
        assert _close(t_sf(t, df), float(special.stdtr(df, -t)), 1e-9, 1e-15), t
    assert math.isnan(t_cdf(math.nan, df)) and t_cdf(math.inf, df) == 1.0 and t_cdf(-math.inf, df) == 0.0


@pytest.mark.parametrize("df", [1.0, 1.5, 2.0, 3.0, 10.0, 39.0, 299.0, 2499.0, 1e5, 1e7])
def test_t_isf_matches_scipy_stdtrit(df):
    for q in (0.5, 0.25, 0.05, 0.025, 0.005, 1e-4, 1e-6):
        peer = float(special.stdtrit(df, 1.0 - q))
        assert _close(t_isf(q, df), peer, 1e-9, 1e-12), q
    with pytest.raises(ValueError, match="q must be in"):
        t_isf(0.7, df)


@pytest.mark.parametrize("df", [0.7, 1.0, 2.0, 4.0, 39.0, 299.0, 2499.0, 1e5, 1e7])
def test_nct_cdf_matches_scipy_nctdtr(df):
    for nc, t in itertools.product([-40.0, -5.0, -2.8, -0.3, 0.0, 0.01, 0.8, 2.8, 7.0, 30.0, 70.0],
                                   [-30.0, -3.0, -1.96, -0.2, 0.0, 0.2, 1.96, 3.0, 30.0]):
        peer = float(special.nctdtr(df, nc, t))
        if math.isnan(peer):  # scipy gives NaN far in a tail; ours the value next to 0 or 1
            ours = nct_cdf(t, df, nc)
            assert ours < 1e-12 or ours > 1.0 - 1e-12, (nc, t)
            continue
        assert _close(nct_cdf(t, df, nc), peer, 1e-7, 1e-10), (nc, t)
    assert nct_cdf(math.inf, df, 1.0) == 1.0 and nct_cdf(-math.inf, df, 1.0) == 0.0


def test_nct_with_zero_noncentrality_is_the_central_t():
    for df, t in itertools.product([1.0, 7.0, 300.0], [-4.0, -0.5, 0.0, 2.0]):
        assert nct_cdf(t, df, 0.0) == pytest.approx(t_cdf(t, df), abs=1e-14)
