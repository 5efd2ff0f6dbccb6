"""The budget strategies on TREC Deep Learning 2019 / 2020 passage judgments (the qrels are the oracle), on two
fields of systems (tests/budget/dl_world.py): six real runs a year ("real": BM25, BM25+RM3, TAS-B, ada-002,
RepLLaMA, SPLADE++ ED from castorini/rank_llm) and 12 systems simulated over the judged passages ("sim"),
against full judgment of the depth-20 pool: scipy's Kendall tau of the system ordering by NDCG@10 and the
RMSE of per-system NDCG@10; and the inferred estimator over 1,000 sampling designs (Monte-Carlo) against the
full values."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import pytrec_eval
from dl_world import make_world, real_world
from scipy.stats import kendalltau

from ndcg_labeling.budget.estimators import inferred_ndcg, plain_ndcg, system_means
from ndcg_labeling.budget.pool import build_pool
from ndcg_labeling.budget.simulate import simulate
from ndcg_labeling.metrics import batch_ndcg

# The tests that read the Monte-Carlo run on one xdist worker, so it is drawn once per run (functools.cache
# keeps it per process; '--dist loadgroup' would otherwise deal them to both workers and draw it twice).
MONTE_CARLO = pytest.mark.xdist_group("budget-dl-monte-carlo")

FRACTION = 0.25


@functools.cache
def world(kind: str, year: str):  # type: ignore[no-untyped-def]
    return real_world(year) if kind == "real" else make_world(year)


def scores(year: str, strategy: str, seed: int = 0, inferred: bool = False, kind: str = "sim") -> tuple[float, float]:
    w = world(kind, year)
    full = plain_ndcg(w.pool, w.oracle).mean(axis=1)
    budget = int(round(FRACTION * w.pool.n_pairs))
    grades, inclusion, strata = simulate(w.pool, strategy, budget, w.oracle, rng=np.random.default_rng(seed))
    if inferred:
        est = system_means(inferred_ndcg(w.pool, grades, np.nan_to_num(inclusion), strata))[0]
    else:
        est = plain_ndcg(w.pool, grades).mean(axis=1)
    return float(kendalltau(full, est)[0]), float(np.sqrt(np.mean((est - full) ** 2)))


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_real_runs_read_as_trec_eval_reads_them(year):
    """The real runs in trec_eval's order, coded per query: each system's per-query NDCG@10 against the whole
    qrels equals pytrec_eval's ndcg_cut_10 of the same run file (linear gain, as trec_eval)."""
    import gzip

    from dl_world import RUNS, read_qrels

    w = world("real", year)
    qrels = read_qrels(year)
    ideal = np.full((len(w.qids), max(len(qrels[q]) for q in w.qids)), np.nan)
    for q, qid in enumerate(w.qids):
        ideal[q, : len(qrels[qid])] = sorted(qrels[qid].values(), reverse=True)
    for s, path in enumerate(sorted((RUNS / year).glob("*.trec.gz"))):
        run: dict[str, dict[str, float]] = {}
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            qid, _, doc, _, score = line.split()[:5]
            run.setdefault(qid, {})[doc] = float(score)
        peer = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
        labels = np.array([w.grades_by_code[q][w.runs[s, q, :10]] for q in range(len(w.qids))])
        ours = batch_ndcg(-np.arange(10.0)[None, :].repeat(len(w.qids), 0), labels, k=10, gain="linear",
                          ideal_labels=ideal)
        assert np.allclose(ours, [peer[qid]["ndcg_cut_10"] for qid in w.qids], rtol=0, atol=1e-12), path.name


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_best_strategy_keeps_the_ordering_at_a_quarter_of_the_pool(year):
    taus = {s: scores(year, s)[0] for s in ("depth", "mtf", "bandit")}
    taus["sample+inferred"] = scores(year, "sample", inferred=True)[0]
    assert max(taus.values()) >= 0.9, taus


@pytest.mark.parametrize("kind", ["sim", "real"])
@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_inferred_estimator_corrects_the_sample(year, kind):
    # the same sample read plainly (unjudged = 0) is far off; the inferred estimator brings it near
    plain_rmse = scores(year, "sample", kind=kind)[1]
    inferred_rmse = scores(year, "sample", inferred=True, kind=kind)[1]
    assert inferred_rmse < plain_rmse / 2


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_weighted_keeps_the_values_on_the_real_runs_and_beats_depth_pooling(year):
    """At a quarter of the depth-20 pool of the six real runs, ``weighted`` (summed discount) read plainly
    keeps every system's NDCG@10 within RMSE 0.02 of full judgment, and beats depth pooling (mean over 5
    seeds of its random last level) on both the RMSE and the ordering."""
    tau, rmse = scores(year, "weighted", kind="real")
    depth = np.mean([scores(year, "depth", seed=s, kind="real") for s in range(5)], axis=0)
    assert rmse <= 0.02, rmse
    assert rmse < depth[1] and tau >= depth[0], (tau, rmse, depth)


@pytest.mark.xfail(strict=True, reason="issue 31's bar is not met at 25% of the depth-20 pool (one draw, seed 0): "
                   "on the real runs the best, weighted, keeps RMSE <= 0.02 (0.011 / 0.019 on DL19 / DL20) but "
                   "swaps BM25 and BM25+RM3 (0.008 and 0.003 apart under full judgment): tau 0.87 in both years, "
                   "where six systems leave no swap for tau >= 0.9; depth 0.87, 0.012 / 0.87, 0.040. Simulated "
                   "field: tau >= 0.9 but no strategy reaches RMSE 0.02 (weighted 0.040 / 0.031, sample+inferred "
                   "0.035 / 0.035); docs/budget.md has the figures")
@pytest.mark.parametrize("kind", ["sim", "real"])
@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_issue_bar_tau_09_rmse_002_and_beats_depth(year, kind):
    depth_tau, depth_rmse = scores(year, "depth", kind=kind)
    best = [scores(year, s, kind=kind) for s in ("mtf", "bandit", "weighted")]
    best.append(scores(year, "sample", inferred=True, kind=kind))
    assert any(t >= 0.9 and r <= 0.02 and r < depth_rmse and t >= depth_tau for t, r in best)


@functools.cache
def monte_carlo() -> dict[str, np.ndarray]:
    """1,000 draws of the stratified design at a quarter of the pool on the first 12 DL19 queries."""
    w = make_world("dl19")
    pool = build_pool(w.runs[:, :12, :20], 20)
    oracle = np.array([w.grades_by_code[q][c] for q, c in zip(pool.query, pool.code, strict=True)])
    full = plain_ndcg(pool, oracle).mean(axis=1)
    budget = int(round(FRACTION * pool.n_pairs))
    dcgs, ndcgs, ratios, rels, covered = [], [], [], [], []
    for seed in range(1000):
        grades, inclusion, strata = simulate(pool, "sample", budget, oracle, rng=np.random.default_rng(seed))
        pi = np.nan_to_num(inclusion)
        mean, half = system_means(inferred_ndcg(pool, grades, pi, strata))
        ratios.append(inferred_ndcg(pool, grades, pi, strata, correction="none").ndcg.mean(axis=1))
        ndcgs.append(mean)
        covered.append(np.abs(mean - full) <= half)
        dcgs.append(dcg_of(pool, grades, pi))
        rels.append(float(np.where(grades > 0, 1.0 / np.where(pi > 0, pi, 1.0), 0.0).sum()))
    return {"full_ndcg": full, "full_dcg": dcg_of(pool, oracle), "full_rel": np.array(float((oracle > 0).sum())),
            "dcg": np.array(dcgs), "ndcg": np.array(ndcgs), "ratio": np.array(ratios), "rel": np.array(rels),
            "covered": np.array(covered)}


@MONTE_CARLO
def test_inferred_dcg_and_counts_are_unbiased_over_1000_designs():
    """The Horvitz-Thompson DCG@10 of each system (mean over the queries) within 3.3 standard errors of the
    full value (2 SE Bonferroni-corrected for 12 systems), their sum and the estimated number of relevant
    pairs within 2 SE; the 95% intervals of infNDCG@10 cover the full value in >= 85% of the draws."""
    mc = monte_carlo()
    n = mc["dcg"].shape[0]
    se = mc["dcg"].std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(mc["dcg"].mean(axis=0) - mc["full_dcg"]) <= 3.3 * se)
    total = mc["dcg"].sum(axis=1)
    assert abs(total.mean() - mc["full_dcg"].sum()) <= 2 * total.std(ddof=1) / np.sqrt(n)
    assert abs(mc["rel"].mean() - float(mc["full_rel"])) <= 2 * mc["rel"].std(ddof=1) / np.sqrt(n)
    assert mc["covered"].mean() >= 0.85


@MONTE_CARLO
def test_jackknife_shrinks_the_bias_of_the_ratio_for_every_system():
    """The plain ratio is biased upward (the ideal DCG is concave in the estimated counts); the jackknife
    correction (the default) leaves every system nearer the full value on average over the 1,000 designs.
    Measured: plain ratio +0.021 to +0.056, corrected +0.010 to +0.032."""
    mc = monte_carlo()
    plain = mc["ratio"].mean(axis=0) - mc["full_ndcg"]
    corrected = mc["ndcg"].mean(axis=0) - mc["full_ndcg"]
    assert np.all(np.abs(corrected) < np.abs(plain)), (plain, corrected)


@MONTE_CARLO
@pytest.mark.xfail(strict=True, reason="infNDCG@10 keeps an upward bias after the jackknife correction: +0.010 to "
                   "+0.032 per system at a quarter of the pool on 12 DL19 queries of the simulated field (sd "
                   "0.06-0.09; 5-12 SE; the plain ratio: +0.021 to +0.056), +0.004 to +0.012 on the real DL19 / "
                   "DL20 runs (300 designs); docs/budget.md")
def test_infndcg_is_unbiased_over_1000_designs():
    mc = monte_carlo()
    se = mc["ndcg"].std(axis=0, ddof=1) / np.sqrt(mc["ndcg"].shape[0])
    assert np.all(np.abs(mc["ndcg"].mean(axis=0) - mc["full_ndcg"]) <= 2 * se)


def dcg_of(pool, grades, pi=None):  # type: ignore[no-untyped-def]
    """(systems,) mean over queries of the Horvitz-Thompson DCG@10."""
    from ndcg_labeling.budget.estimators import _dcg_ht, _gain

    g = np.asarray(grades, dtype=float)
    judged = ~np.isnan(g)
    p = np.ones(pool.n_pairs) if pi is None else pi
    weight = np.where(judged, 1.0 / np.where(judged, p, 1.0), 0.0)
    dcg, _ = _dcg_ht(pool, np.where(judged, _gain(np.nan_to_num(g), "exponential"), 0.0), weight, 10)
    return dcg.mean(axis=1)
