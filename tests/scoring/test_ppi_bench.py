"""benchmarks/bench_ppi.py at small size: on the real TREC DL 2019 and 2020 qrels and runs, with a lenient
noisy judge, one fooled on half the queries and one 1.5 grades too lenient on that half, the PPI++ interval of
every system's NDCG@10 and every paired difference covers the all-human value in most of 60 random audits of
10 queries. An interval that ignores the audit (the
judge's own mean, lambda 1, no rectifier) does not: the check below fails for it, as shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import load_script

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_ppi.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(BENCH)


@pytest.mark.parametrize("year,judge", [("dl19", "lenient"), ("dl19", "biased"), ("dl19", "inflated"),
                                        ("dl20", "lenient"), ("dl20", "inflated")])
def test_ppi_covers_and_the_judge_alone_does_not(bench, year, judge):
    """The fooled judge's own mean is far off, and so is the lenient one's on DL 2020 (on DL 2019 it sits
    close to people's for most targets); the inflated judge's is off by less than the PPI++ t half-width for
    most targets in both years (NDCG normalizes an inflation of every grade), so a PPI with its rectifier
    removed fails on the first two only (the lambda-1 normal interval below fails on all)."""
    ppi = bench.simulate(year, judge, resamples=60, audit=10, seed=0)
    assert ppi["coverage"].min() >= 0.85, ppi["coverage"]
    ignored = bench.simulate(year, judge, resamples=60, audit=10, seed=0, lam=1.0, rectify=False,
                             interval="normal")
    assert ignored["coverage"].min() < 0.85, ignored["coverage"]
    # the judge helps: narrower than people alone on the same audits where it is good, lambda lower where fooled
    if judge == "lenient":
        assert ppi["width"].mean() < 0.9
    elif judge == "biased":
        assert ppi["lam"].mean() < 0.5
    else:  # biased but still ranking by relevance: the audit corrects it and it still buys width
        assert ppi["width"].mean() < 0.95


def test_the_design_based_form_covers_and_drops_the_judge_term(bench):
    """target="queries" (the mean over exactly these queries; no judge term): still covers most audits, and with
    the lenient judge it is narrower than the population form on the same audits."""
    pop = bench.simulate("dl19", "lenient", resamples=60, audit=10, seed=0)
    fin = bench.simulate("dl19", "lenient", resamples=60, audit=10, seed=0, target="queries")
    assert fin["coverage"].min() >= 0.85, fin["coverage"]
    assert fin["width"].mean() < pop["width"].mean()
