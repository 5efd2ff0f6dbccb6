"""xinfAP (ndcg_labeling/budget/xinfap.py) against trec_eval and against the truth: with one stratum per query it
is trec_eval's infAP (pytrec_eval), with every pair judged it is AP (pytrec_eval's map), on a small pool it is
the value worked out by hand from the formulas, and over 500 draws of the stratified design on 12 DL19
queries its parts are unbiased where they are proved to be, with the bias of the ratio measured."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import pytrec_eval
from dl_world import make_world

from ndcg_labeling.budget.pool import build_pool
from ndcg_labeling.budget.simulate import simulate
from ndcg_labeling.budget.strategies import DEFAULT_EDGES, stratum_ids
from ndcg_labeling.budget.xinfap import XINFAP_EPSILON, inferred_ap_stratified, xinfap_parts

# The tests that read the Monte-Carlo run on one xdist worker, so it is drawn once per run (functools.cache
# keeps it per process; '--dist loadgroup' would otherwise deal them to both workers and draw it twice).
MONTE_CARLO = pytest.mark.xdist_group("xinfap-monte-carlo")

FRACTION = 0.25
DRAWS = 500


@functools.cache
def dl19():  # type: ignore[no-untyped-def]
    return make_world("dl19")


def trec_eval(measure: str, judged: np.ndarray, relevant: int) -> np.ndarray:
    """(systems, queries) pytrec_eval's ``measure`` of the DL19 field's runs (whole lists, 100 deep), the qrels
    being the pool: the oracle's grade where ``judged``, -1 (pooled, not judged) elsewhere."""
    w = dl19()
    pool = w.pool
    qrels: dict[str, dict[str, int]] = {}
    for p in range(pool.n_pairs):
        qrels.setdefault(str(pool.query[p]), {})[f"d{pool.code[p]}"] = int(w.oracle[p]) if judged[p] else -1
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=relevant)
    key = {"infAP": "infAP", "map": "map"}[measure]
    out = np.zeros((pool.n_systems, pool.n_queries))
    for s in range(pool.n_systems):
        run = {str(q): {f"d{c}": float(w.runs.shape[2] - r) for r, c in enumerate(w.runs[s, q]) if c >= 0}
               for q in range(pool.n_queries)}
        ref = evaluator.evaluate(run)
        out[s] = [ref[str(q)][key] for q in range(pool.n_queries)]
    return out


@pytest.mark.parametrize("relevant", [1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_stratum_per_query_is_trec_evals_infap(seed, relevant):
    """A uniform 30% sample of each query's depth-20 pool of the 12 DL19 runs (runs 100 deep, so documents
    outside the pool come between pooled ones): xinfAP with one stratum per query and inclusion judged / pool
    size is trec_eval's infAP to rounding, for both numberings of the strata (ids unique over the queries, or
    0 everywhere: strata are read within a query)."""
    w = dl19()
    pool = w.pool
    rng = np.random.default_rng(seed)
    judged = np.zeros(pool.n_pairs, dtype=bool)
    for q in range(pool.n_queries):
        sel = np.nonzero(pool.query == q)[0]
        judged[rng.choice(sel, size=max(1, int(0.3 * sel.size)), replace=False)] = True
    grades = np.where(judged, w.oracle, np.nan)
    inclusion = (np.bincount(pool.query, weights=judged) / pool.query_sizes())[pool.query]
    ours = inferred_ap_stratified(pool, grades, inclusion, stratum_ids(pool, (1,)), relevant=relevant)
    peer = trec_eval("infAP", judged, relevant)
    assert (peer > 0).mean() > 0.5  # the comparison is not between zeros
    assert np.allclose(ours, peer, rtol=0, atol=1e-12), np.abs(ours - peer).max()
    zeros = inferred_ap_stratified(pool, grades, inclusion, np.zeros(pool.n_pairs, dtype=np.int64),
                                   relevant=relevant)
    assert np.array_equal(zeros, ours)
    # sample_eval.pl's prior (1/3 where nothing above is judged) is another number on the same sample
    assert not np.allclose(inferred_ap_stratified(pool, grades, inclusion, stratum_ids(pool, (1,)),
                                                  relevant=relevant, unseen=1 / 3), peer, rtol=0, atol=1e-3)


@pytest.mark.parametrize("relevant", [1, 2])
def test_every_pair_judged_is_ap(relevant):
    """Inclusion 1 everywhere, the design's eight strata: xinfAP is AP over the pool (pytrec_eval's map on the
    pool's grades) within eps = 1e-5, the smoothing's share (each precision is off by less than
    ``eps * strata / rank``, below eps); with ``precision="ht"``, which has no smoothing, to rounding."""
    w = dl19()
    pool = w.pool
    strata = stratum_ids(pool, DEFAULT_EDGES)
    assert np.unique(strata).size > 4 * pool.n_queries
    peer = trec_eval("map", np.ones(pool.n_pairs, dtype=bool), relevant)
    ratio = inferred_ap_stratified(pool, w.oracle, np.ones(pool.n_pairs), strata, relevant=relevant)
    ht = inferred_ap_stratified(pool, w.oracle, np.ones(pool.n_pairs), strata, relevant=relevant, precision="ht")
    assert np.abs(ratio - peer).max() <= XINFAP_EPSILON
    assert np.allclose(ht, peer, rtol=0, atol=1e-12)
    _, num_rel = xinfap_parts(pool, w.oracle, np.ones(pool.n_pairs), strata, relevant=relevant)
    assert np.array_equal(num_rel, np.bincount(pool.query, weights=w.oracle >= relevant))


def small_pool():  # type: ignore[no-untyped-def]
    """Two runs of one query pooled to depth 3: documents 1 and 4 at best rank 1 (stratum A, both judged,
    pi = 1), 2, 3, 5 and 6 below (stratum B, 3 and 5 judged, pi = 1/2); 7 is outside the pool."""
    runs = np.array([[[1, 2, 3, 7, 5, 4]], [[4, 5, 6, 1, 2, 3]]])
    pool = build_pool(runs, 3)
    grade = {1: 1.0, 4: 0.0, 3: 1.0, 5: 2.0, 2: np.nan, 6: np.nan}
    grades = np.array([grade[int(c)] for c in pool.code])
    strata = stratum_ids(pool, (1, 2))
    inclusion = np.where(pool.min_rank == 1, 1.0, 0.5)
    return pool, grades, inclusion, strata


@pytest.mark.parametrize(("precision", "unseen", "want"), [
    ("ratio", 0.5, [64 / 75, 41 / 60]), ("ratio", 1 / 3, [187 / 225, 41 / 60]), ("ht", 0.5, [13 / 15, 41 / 60])])
def test_small_pool_worked_by_hand(precision, unseen, want):
    """R = 1 + 2 + 2 = 5 (documents 1, 3, 5 at weights 1, 2, 2).
    Run 0 (1, 2, 3, 7, 5, 4): document 1 at rank 1, precision 1; document 3 at rank 3, above it 1 (A, judged,
    relevant) and 2 (B, not judged): ratio ``(1 + 1 + u) / 3``, ht ``(1 + 1 + 0) / 3``; document 5 at rank 5,
    above it A = {1} (1 of 1 relevant) and B = {2, 3} (1 of 1 judged relevant): ratio ``(1 + 1 + 2 * 1) / 5``,
    ht ``(1 + 1 + 3) / 5`` (3 weighs (N - 1) / (n - 1) = 3 in 5's own stratum). xinfAP = (1 + 2 prec_3 +
    2 prec_5) / 5: 64/75 at u = 1/2, 187/225 at u = 1/3, ht 13/15.
    Run 1 (4, 5, 6, 1, 2, 3): 5 at rank 2 (1/2), 1 at rank 4 ((1 + 0 + 2 * 1) / 4: B above holds 5 and 6, one
    judged, relevant; ht weighs 5 by 2), 3 at rank 6 ((1 + 2 * 1/2 + 3 * 1) / 6; ht 1 + 1 + 3): 41/60 in all
    three."""
    pool, grades, inclusion, strata = small_pool()
    ours = inferred_ap_stratified(pool, grades, inclusion, strata, precision=precision, unseen=unseen)
    assert ours.shape == (2, 1)
    assert np.allclose(ours[:, 0], want, rtol=1e-4, atol=0), ours[:, 0]
    total, num_rel = xinfap_parts(pool, grades, inclusion, strata, precision=precision, unseen=unseen)
    assert np.array_equal(num_rel, [5.0])
    assert np.allclose(total[:, 0], np.array(want) * 5, rtol=1e-4, atol=0)


def test_no_relevant_pair_gives_zero_and_bad_input_is_refused():
    pool, grades, inclusion, strata = small_pool()
    assert np.array_equal(inferred_ap_stratified(pool, grades, inclusion, strata, relevant=5), np.zeros((2, 1)))
    with pytest.raises(ValueError, match=r"inferred_ap_stratified: every judged pair needs an inclusion "
                       r"probability in \(0, 1\], got 0.0 at pair 0"):
        inferred_ap_stratified(pool, grades, np.zeros(pool.n_pairs), strata)
    with pytest.raises(ValueError, match=r"xinfap_parts: grades, inclusion and strata must have shape \(6,\)"):
        xinfap_parts(pool, grades[:5], inclusion, strata)
    with pytest.raises(ValueError, match="inferred_ap_stratified: precision must be 'ratio' or 'ht', got 'hh'"):
        inferred_ap_stratified(pool, grades, inclusion, strata, precision="hh")
    with pytest.raises(ValueError, match=r"inferred_ap_stratified: unseen must be in \(0, 1\], got 0"):
        inferred_ap_stratified(pool, grades, inclusion, strata, unseen=0)
    with pytest.raises(ValueError, match="inferred_ap_stratified: strata must be integers, got float64"):
        inferred_ap_stratified(pool, grades, inclusion, strata.astype(float))


@functools.cache
def monte_carlo() -> dict[str, np.ndarray]:
    """500 draws of the stratified design (``sample``, the design's eight strata) at a quarter of the pool on
    the first 12 DL19 queries of the simulated field (891 pairs, 223 judged), relevant = grade >= 2 (TREC DL's
    binary level: 359 relevant pairs), as tests/budget/test_budget_dl.py's NDCG Monte-Carlo."""
    w = dl19()
    pool = build_pool(w.runs[:, :12, :20], 20)
    oracle = np.array([w.grades_by_code[q][c] for q, c in zip(pool.query, pool.code, strict=True)])
    one, flat = np.ones(pool.n_pairs), np.zeros(pool.n_pairs, dtype=np.int64)
    full_sum, full_rel = xinfap_parts(pool, oracle, one, flat, relevant=2, precision="ht")
    budget = int(round(FRACTION * pool.n_pairs))
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("rel", "sum_ratio", "sum_ht", "ap_ratio", "ap_ht")}
    for seed in range(DRAWS):
        grades, inclusion, strata = simulate(pool, "sample", budget, oracle, rng=np.random.default_rng(seed))
        for precision in ("ratio", "ht"):
            total, num_rel = xinfap_parts(pool, grades, np.nan_to_num(inclusion), strata, relevant=2,
                                          precision=precision)
            out[f"sum_{precision}"].append(total.sum(axis=1))
            ok = num_rel > 0
            out[f"ap_{precision}"].append(np.where(ok, total / np.where(ok, num_rel, 1.0), 0.0).mean(axis=1))
        out["rel"].append(num_rel)
    res = {k: np.array(v) for k, v in out.items()}
    res.update(full_sum=full_sum.sum(axis=1), full_rel=full_rel, full_ap=(full_sum / full_rel).mean(axis=1))
    return res


def z_scores(draws: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(mean over the draws - truth) in standard errors of the mean, per column."""
    return np.asarray((draws.mean(axis=0) - truth) / (draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])))


@MONTE_CARLO
def test_num_rel_and_the_ht_precision_sum_are_unbiased():
    """Provably unbiased (module docstring): the estimated number of relevant pairs of each query, and with
    ``precision="ht"`` the sum of the precisions at the relevant pairs of each system (over the 12 queries):
    each within 3 standard errors of the full value over the 500 draws (3: twelve at once, Bonferroni), their
    totals within 2. Measured: num_rel |z| <= 1.1, total z 0.5; ht sum |z| <= 2.4 (relative bias -2.2% to
    +2.1%, sd 11-26%), total z 1.2."""
    mc = monte_carlo()
    assert np.all(np.abs(z_scores(mc["rel"], mc["full_rel"])) <= 3)
    assert abs(float(z_scores(mc["rel"].sum(axis=1), mc["full_rel"].sum()))) <= 2
    assert np.all(np.abs(z_scores(mc["sum_ht"], mc["full_sum"])) <= 3)
    assert abs(float(z_scores(mc["sum_ht"].sum(axis=1), mc["full_sum"].sum()))) <= 2


@MONTE_CARLO
def test_measured_bias_of_xinfap_and_the_trade_with_ht():
    """The ratio of the two estimates is biased, and xinfAP's prior (1/2 where nothing above is judged, below
    the precision of the good runs' heads) biases its numerator: -10.0% to +8.1% by system (|z| up to 19),
    the total z -17. Mean xinfAP - full AP by system (full AP 0.10 to 0.51; sd over the draws 0.025 to
    0.049): +0.022 +0.029 +0.029 +0.027 +0.022 +0.023 +0.009 +0.002 +0.000 +0.000 -0.002 -0.017, within 0.035
    for every system; the ht variant's ratio -0.001 to +0.016 (|bias| <= 0.02 asserted), its numerator
    unbiased. xinfAP is the default for its smaller error: RMSE 0.045 over systems and draws, ht's 0.055."""
    mc = monte_carlo()
    assert np.all(np.abs(mc["ap_ratio"].mean(axis=0) - mc["full_ap"]) <= 0.035)
    assert np.all(np.abs(mc["ap_ht"].mean(axis=0) - mc["full_ap"]) <= 0.02)
    assert abs(float(z_scores(mc["sum_ratio"].sum(axis=1), mc["full_sum"].sum()))) > 5
    rmse = {p: float(np.sqrt(np.mean((mc[f"ap_{p}"] - mc["full_ap"]) ** 2))) for p in ("ratio", "ht")}
    assert rmse["ratio"] < rmse["ht"], rmse


@MONTE_CARLO
@pytest.mark.xfail(strict=True, reason="xinfAP is biased: mean over 500 designs - full AP from -0.017 to +0.029 "
                   "per system (up to 21 SE) at a quarter of the pool on 12 DL19 queries, relevant >= 2; the ht "
                   "variant -0.001 to +0.016 (up to 9 SE): the bias of a ratio of estimates")
@pytest.mark.parametrize("precision", ["ratio", "ht"])
def test_xinfap_is_unbiased_over_500_designs(precision):
    mc = monte_carlo()
    assert np.all(np.abs(z_scores(mc[f"ap_{precision}"], mc["full_ap"])) <= 3)


def test_plain_ap_is_trec_eval_map_over_the_same_judgments():
    """``plain_ap`` (the report's plain column for --metric map) equals pytrec_eval's ``map`` of each run's
    pooled list, at two relevance levels, for a partly judged pool (unjudged pairs not relevant)."""
    import pytrec_eval
    from dl_world import real_world

    from ndcg_labeling.budget.estimators import plain_ap

    w = real_world("dl19")
    pool = w.pool
    rng = np.random.default_rng(5)
    grades = np.where(rng.random(pool.n_pairs) < 0.6, w.oracle, np.nan)
    for level in (1, 2):
        ours = plain_ap(pool, grades, cut=20, relevant=level)
        qrels = {str(q): {str(int(p)): int(grades[p]) for p in np.nonzero(pool.query == q)[0]
                          if not np.isnan(grades[p])} for q in range(pool.n_queries)}
        for s in range(pool.n_systems):
            run = {str(q): {str(int(p)): float(20 - r) for r, p in enumerate(pool.run_pairs[s, q, :20]) if p >= 0}
                   for q in range(pool.n_queries)}
            peer = pytrec_eval.RelevanceEvaluator(qrels, {"map"}, relevance_level=level).evaluate(run)
            want = [peer[str(q)]["map"] if str(q) in peer else 0.0 for q in range(pool.n_queries)]
            assert np.allclose(ours[s], want, atol=1e-12), (s, level)


def test_xinfap_jackknife_intervals_cover_the_full_value():
    """The jackknife intervals of xinfAP (mean over the queries) on the real DL19 runs at a quarter of the
    pool: their half-width is within 0.7-1.5x of 1.96 standard deviations of the estimates over the designs
    (measured over 40: 0.88-1.09x), and they cover the full AP (grade >= 2) for >= 80% of the systems
    (measured 87%: the ratio's bias, -0.017 to +0.017 per system, keeps it below the nominal 95%)."""
    from dl_world import real_world

    from ndcg_labeling.budget.estimators import plain_ap
    from ndcg_labeling.budget.simulate import simulate
    from ndcg_labeling.budget.xinfap_intervals import xinfap_means

    w = real_world("dl19")
    pool = w.pool
    full = plain_ap(pool, w.oracle, relevant=2).mean(axis=1)
    means, halves = [], []
    for seed in range(20):
        grades, _, strata = simulate(pool, "sample", int(0.25 * pool.n_pairs), w.oracle,
                                     rng=np.random.default_rng(seed))
        est = xinfap_means(pool, grades, strata, relevant=2)
        means.append(est.means)
        halves.append(est.half_widths())
    means, halves = np.array(means), np.array(halves)
    assert (np.abs(means - full) <= halves).mean() >= 0.8
    ratio = halves.mean(axis=0) / (1.96 * means.std(axis=0, ddof=1))
    assert np.all((ratio > 0.7) & (ratio < 1.5)), ratio
