"""benchmarks/bench_budget.py at a small size on the TREC-COVID slice: each printed figure recomputed
independently (scipy's Kendall tau and paired t-test, Holm by hand, tau_AP from its definition), the 100% row
is full judgment, and the bar line reads the 25% rows."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau, ttest_rel

from ndcg_labeling.budget.estimators import plain_ndcg
from ndcg_labeling.budget.simulate import simulate
from tests.budget.dl_world import covid_world
from tests.conftest import load_script

ROOT = Path(__file__).resolve().parents[2]


def _bench():  # type: ignore[no-untyped-def]
    return load_script(ROOT / "benchmarks" / "bench_budget.py")


def test_figures_of_a_small_covid_field() -> None:
    bench = _bench()
    w = covid_world(n_systems=14, n_topics=8)
    rows, n_sig = bench.measure(w.pool, w.oracle, [0.25, 1.0], ("depth", "weighted"), 1)
    per_query = plain_ndcg(w.pool, w.oracle)
    full = per_query.mean(axis=1)
    # the significant pairs, by scipy and Holm's step-down by hand
    pairs = list(combinations(range(14), 2))
    p = np.array([ttest_rel(per_query[a], per_query[b]).pvalue for a, b in pairs])
    order = np.argsort(p)
    adjusted = np.maximum.accumulate(np.minimum(1.0, (p.size - np.arange(p.size)) * p[order]))
    significant = [pairs[i] for i, adj in zip(order, adjusted, strict=True) if adj < 0.05]
    assert n_sig == len(significant) > 0
    by_key = {(r[0], r[2]): r for r in rows}
    assert set(by_key) == {(0.25, "depth"), (0.25, "weighted"), (1.0, "any")}
    _, budget, _, avg, worst = by_key[(1.0, "any")]
    assert budget == w.pool.n_pairs and worst == 0
    np.testing.assert_allclose(avg[:4], [1.0, 1.0, 0.0, 0.0])
    _, budget, _, avg, worst = by_key[(0.25, "weighted")]
    grades, _, _ = simulate(w.pool, "weighted", budget, w.oracle, rng=np.random.default_rng(0))
    est = plain_ndcg(w.pool, grades).mean(axis=1)
    out = sum(np.sign(est[a] - est[b]) != np.sign(full[a] - full[b]) for a, b in significant)
    ranked = full[np.argsort(-est, kind="stable")]
    c = [np.sum(ranked[:i] >= ranked[i]) / i for i in range(1, ranked.size)]
    assert avg[0] == pytest.approx(kendalltau(full, est)[0])
    assert avg[1] == pytest.approx(2 * np.mean(c) - 1)
    assert avg[2] == pytest.approx(np.sqrt(np.mean((est - full) ** 2)))
    assert avg[3] == worst == out
    line = bench.bar(rows, n_sig)
    assert line.startswith("bar at 25%: best `") and ("met" in line)


def test_issue_48_bar_on_trec_covid_round_1() -> None:
    """The whole field (143 runs, 30 topics), 25% of the depth-20 pool: `weighted` (the fast one of the two
    that meet it; `mtf` does too, bench_budget.py) puts none of the 3,380 significantly different pairs out
    of order, with tau >= 0.9 and RMSE <= 0.02, below depth pooling's RMSE."""
    bench = _bench()
    w = covid_world()
    rows, n_sig = bench.measure(w.pool, w.oracle, [0.25], ("depth", "weighted"), 1)
    assert n_sig == 3380
    by = {r[2]: r for r in rows}
    tau, _, rmse, out, _ = by["weighted"][3]
    assert out == 0 and tau >= 0.9 and rmse <= 0.02 and rmse < by["depth"][3][2]
    assert "met" in bench.bar(rows, n_sig) and "NOT" not in bench.bar(rows, n_sig)
