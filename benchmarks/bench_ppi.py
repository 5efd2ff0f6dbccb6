"""PPI++ coverage and width on the real TREC DL 2019 / 2020 passage qrels and runs (issue 47).

People's labels are the NIST qrels (0-3; a retrieved passage the qrels do not hold is 0, as trec_eval counts
it); the systems are the six real runs of tests/data/trecdl/rank_llm (tests/budget/dl_world.py). Two judges
are simulated from the qrels, grading every pooled passage (the top 10 of every run and every qrels passage):

* ``lenient``: each grade drawn from the confusion ``LENIENT`` below (row: the qrels grade, column: the judge's):
  about half a grade too high on the passages of DL (mostly 0s and 1s) and noisy;
* ``biased``: the lenient judge, except on a fixed random half of the queries, where it ignores relevance and
  grades every passage 2 or 3 at random (a judge fooled on one kind of query: uninformative there);
* ``inflated``: the lenient judge, except on the same half, where it grades from the confusion ``INFLATED``:
  about 1.5 grades too high where the scale allows, still ranking by relevance (biased in the plain sense).

For each year, ``--resamples`` audits of ``--audit`` queries drawn at random without replacement: per system
NDCG@10 (exponential gain) and per pair of systems the difference, the PPI++ 95% interval
(:func:`ndcg_labeling.stats.ppi_mean`: the judge on every query, people on the audit) and the human-only
interval on the same audit, computed the same way. Printed: coverage of the all-human value (the qrels' NDCG@10
over every query of the year), the mean width relative to the human-only interval, the mean lambda.

What the interval assumes: the audited queries are a simple random sample of the year's queries; the
interval is for the mean over the population the queries come from (no finite-population correction, so it
is conservative for the mean over exactly these queries); ``t`` (what ``report --estimator ppi`` uses) is
Student's t with ``n - 2`` degrees of freedom for PPI++ (lambda is fitted on the audit) and ``n - 1`` for
people alone, with unbiased variances; ``normal`` is ppi-python's ``ppi_mean_ci`` (z quantile, ddof 0), which
undercovers at 10 queries because per-query NDCG is skewed and lambda is fitted on the same few queries.
The ``strat`` rows draw each audit as ``tasks create --audit-of`` does (:func:`audit_design`: the query type,
here the half the biased judge is fooled on, crossed with the judge's grade band; Neyman allocation) and
weight it by 1 / inclusion probability, as ``report --estimator ppi`` does with an audit batch. ``--lam 1`` (classic PPI) is
the ablation; the rows marked ``no-rectifier`` are the judge's mean with the PPI width but no audit correction,
the interval the test (tests/scoring/test_ppi_bench.py) must see fail.

The ``regr`` rows are the design-based form (``ppi_mean(..., target="queries")``: the target is the mean over
exactly the year's queries, whose judge values are all known, so the judge term ``lam^2 var(judge) / N`` of the
population form drops out; lambda is the least-squares slope on the audit, the regression estimator of survey
sampling, ``n - 2`` df); ``fpc`` applies ``1 - n / N`` to it and to people alone (the ``human t q fpc`` row: the
same correction for the comparator, so the width ratio is the same). The information bound printed last is
the width ratio an estimator would reach if it knew the best linear use of the judge's values in advance
(:func:`information_bound`).

    python benchmarks/bench_ppi.py                    # 500 audits of 10 queries per year (2-7 min)
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import cache
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ndcg_labeling.labels.tasks.audit import audit_strata  # noqa: E402
from ndcg_labeling.metrics import compute_metrics  # noqa: E402
from ndcg_labeling.stats import audit_allocation, ppi_mean  # noqa: E402
from tests.budget.dl_world import World, real_world  # noqa: E402

K = 10
#: P(judge grade | qrels grade), rows 0..3: lenient by about half a grade, noisy
LENIENT = np.array([[0.55, 0.30, 0.12, 0.03],
                    [0.10, 0.40, 0.40, 0.10],
                    [0.03, 0.12, 0.50, 0.35],
                    [0.01, 0.04, 0.25, 0.70]])
#: P(judge grade | qrels grade) of the ``inflated`` judge on its query type: about 1.5 grades too high where the
#: scale allows (mean judge grade 1.6, 2.55, 2.85, 2.95 for qrels 0-3) while still ranking by relevance
INFLATED = np.array([[0.05, 0.40, 0.45, 0.10],
                     [0.00, 0.05, 0.35, 0.60],
                     [0.00, 0.00, 0.15, 0.85],
                     [0.00, 0.00, 0.05, 0.95]])


def per_query_ndcg(runs: np.ndarray, grades_by_code: list[np.ndarray], n_judged: list[int]) -> np.ndarray:
    """(systems, queries) NDCG@10 of the runs (document codes) under the grades of each code; the ideal
    is over the query's grades of every code (the qrels passages and the retrieved ones)."""
    n_sys, n_q, _ = runs.shape
    top = runs[:, :, :K]
    labels = np.full((n_sys, n_q, K), np.nan)
    width = max(g.size for g in grades_by_code)
    ideal = np.full((n_q, width), np.nan)
    for q, g in enumerate(grades_by_code):
        ideal[q, : g.size] = g
        for s in range(n_sys):
            codes = top[s, q]
            ok = codes >= 0
            labels[s, q, ok] = g[codes[ok]]
    scores = np.broadcast_to(np.arange(K, 0, -1, dtype=np.float64), (n_q, K))
    return np.stack([np.asarray(compute_metrics([f"ndcg@{K}"], scores, labels[s], ideal_labels=ideal,
                                                empty="zero")[f"ndcg@{K}"], dtype=np.float64)
                     for s in range(n_sys)])


def judges(grades_by_code: list[np.ndarray], seed: int) -> dict[str, list[np.ndarray]]:
    """The three simulated judges' grades of every code of every query; ``fooled``: a one-element list holding
    the queries the biased judge is fooled on and the inflated one inflates (the bench's "query type")."""
    rng = np.random.default_rng(seed)
    cum = LENIENT.cumsum(axis=1)
    lenient = [np.minimum((rng.random(g.size)[:, None] > cum[g.astype(int)]).sum(axis=1), 3).astype(np.float64)
               for g in grades_by_code]
    fooled = rng.permutation(len(grades_by_code))[: len(grades_by_code) // 2]
    biased = [j.copy() for j in lenient]
    for q in fooled:
        biased[q] = rng.integers(2, 4, biased[q].size).astype(np.float64)
    # drawn after the others, so the lenient and biased judges are those of every earlier run
    inflated = [j.copy() for j in lenient]
    up = INFLATED.cumsum(axis=1)
    for q in fooled:
        g = grades_by_code[q].astype(int)
        inflated[q] = np.minimum((rng.random(g.size)[:, None] > up[g]).sum(axis=1), 3).astype(np.float64)
    return {"lenient": lenient, "biased": biased, "inflated": inflated, "fooled": [fooled.astype(np.float64)]}


def audit_design(judge_grades: list[np.ndarray], fooled: np.ndarray, audit: int) -> tuple[np.ndarray, np.ndarray]:
    """What ``tasks create --audit-of`` draws from: each query's stratum (query type = fooled or not, crossed
    with the judge's grade band: :func:`audit_strata`) and the queries per stratum (:func:`audit_allocation`)."""
    n_q = len(judge_grades)
    types = ["fooled" if q in set(fooled.astype(int).tolist()) else "plain" for q in range(n_q)]
    mean = np.array([g.mean() / 3.0 for g in judge_grades])
    labels = audit_strata(types, mean, audit)
    names = sorted(set(labels))
    sizes = np.array([int((labels == s).sum()) for s in names])
    spreads = np.array([float(np.sqrt(np.mean(mean[labels == s] * (1 - mean[labels == s])))) for s in names])
    codes = np.array([names.index(s) for s in labels])
    return codes, audit_allocation(sizes, spreads, audit)


def targets(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Rows: each system, then each pair's difference (a - b); values (targets, queries)."""
    n = values.shape[0]
    names = [f"s{s}" for s in range(n)] + [f"s{a}-s{b}" for a, b in combinations(range(n), 2)]
    rows = [values[s] for s in range(n)] + [values[a] - values[b] for a, b in combinations(range(n), 2)]
    return names, np.stack(rows)


@cache
def year_world(year: str) -> World:
    """The year's runs and qrels (:func:`real_world`), read once per run of the bench."""
    return real_world(year)


@cache
def scored(year: str, judge: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, list[np.ndarray]]]:
    """The year's runs, the people's and the judge's per-query values of every target, the judges' grades."""
    world = year_world(year)
    human = targets(per_query_ndcg(world.runs, world.grades_by_code, []))[1]
    graded = judges(world.grades_by_code, seed + 101)
    return world.runs, human, targets(per_query_ndcg(world.runs, graded[judge], []))[1], graded


def information_bound(year: str, judge: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Per target, the width ratio an estimator would reach if it knew the best use of the judge's per-query
    values in advance (no cost for estimating it; population variances, SRS human-only comparator):

    * ``one_lam``: ``sd(human - lam* judge) / sd(human)`` with ``lam*`` the population least-squares slope
      clipped to [0, 1] (the limit of PPI++ / the regression estimator with one lambda);
    * ``by_type``: a slope and an intercept per query type (the fooled / inflated half and the rest) and the
      audit split between the types by Neyman allocation: ``sum_h W_h sd_h(residual) / sd(human)`` (the limit
      of stratified PPI with the oracle lambda per type; in-sample slopes, so optimistic);
    * ``calibrated``: ``one_lam`` with the judge's grades first mapped to the people's mean gain at each judge
      grade over the whole pool (an oracle recalibration of the judge, a non-linear use of its grades).
    """
    runs, human, vals, graded = scored(year, judge, seed)
    typed = np.isin(np.arange(human.shape[1]), graded["fooled"][0].astype(int))
    one, by_type = [], []
    for y, x in zip(human, vals, strict=True):
        sy = y.std(ddof=1)
        one.append(_one_lambda_ratio(y, x))
        total = 0.0
        for part in (typed, ~typed):
            yh, xh = y[part], x[part]
            slope = np.cov(yh, xh)[0, 1] / xh.var(ddof=1) if xh.var() > 0 else 0.0
            total += part.mean() * (yh - slope * xh).std(ddof=1)
        by_type.append(total / sy)
    calibrated = targets(per_query_ndcg(runs, recalibrated(year_world(year).grades_by_code, graded[judge]), []))[1]
    return {"one_lam": np.array(one), "by_type": np.array(by_type), "n_systems": np.array(runs.shape[0]),
            "calibrated": np.array([_one_lambda_ratio(y, x) for y, x in zip(human, calibrated, strict=True)])}


def _one_lambda_ratio(y: np.ndarray, x: np.ndarray) -> float:
    """``sd(y - lam* x) / sd(y)`` with ``lam*`` the least-squares slope of ``y`` on ``x`` clipped to [0, 1]."""
    vx = x.var(ddof=1)
    lam = float(np.clip(np.cov(y, x)[0, 1] / vx, 0, 1)) if vx > 0 else 0.0
    return float((y - lam * x).std(ddof=1) / y.std(ddof=1))


def recalibrated(people: list[np.ndarray], judge: list[np.ndarray]) -> list[np.ndarray]:
    """The judge's grades replaced by the grade whose exponential gain is the people's mean gain over every
    pooled passage the judge gave that grade (an oracle calibration: it reads all the qrels)."""
    h, j = np.concatenate(people), np.concatenate(judge).astype(int)
    mean_gain = np.array([(2.0 ** h[j == v] - 1).mean() if (j == v).any() else 0.0 for v in range(4)])
    return [np.log2(mean_gain[g.astype(int)] + 1) for g in judge]


def agreement(year: str, judge: str, seed: int = 0) -> tuple[float, float]:
    """Cohen's kappa of the judge with the qrels over every pooled passage of the year (scikit-learn's), graded
    (0-3) and binarised at grade 2: how good the simulated judge is next to published LLM judges."""
    from sklearn.metrics import cohen_kappa_score

    people = np.concatenate(year_world(year).grades_by_code).astype(int)
    graded = np.concatenate(scored(year, judge, seed)[3][judge]).astype(int)
    return float(cohen_kappa_score(people, graded)), float(cohen_kappa_score(people >= 2, graded >= 2))


def simulate(year: str, judge: str, *, resamples: int, audit: int, seed: int = 0, lam: float | None = None,
             rectify: bool = True, interval: str = "t", design: bool = False, target: str = "population",
             fpc: bool = False) -> dict[str, np.ndarray]:
    """Per target (systems then pairs): coverage of the all-human value, mean PPI width / human-only width,
    mean lambda, over ``resamples`` random audits of ``audit`` queries. ``rectify=False``: the judge's mean
    with the PPI half-width and no audit correction (what an interval that ignores the audit does).
    ``design=True``: the audits are drawn as ``tasks create --audit-of`` draws them (:func:`audit_design`) and
    weighted by 1 / inclusion probability, as ``report --estimator ppi`` weights them. ``target``, ``fpc``:
    :func:`ppi_mean`'s (``"queries"``: the design-based form for the mean over exactly the year's queries)."""
    runs, human, judge_vals, graded = scored(year, judge, seed)
    strata, counts = audit_design(graded[judge], graded["fooled"][0], audit)
    sizes = np.bincount(strata, minlength=counts.size)
    truth = human.mean(axis=1)
    n_t, n_q = human.shape
    rng = np.random.default_rng(seed)
    cover = np.zeros(n_t)
    width = np.zeros(n_t)
    lams = np.zeros(n_t)
    for _ in range(resamples):
        weights = None
        if design:
            pick = np.concatenate([rng.choice(np.flatnonzero(strata == h), k, replace=False)
                                   for h, k in enumerate(counts)])
            weights = np.concatenate([np.full(k, sizes[h] / k) for h, k in enumerate(counts)])
        else:
            pick = rng.choice(n_q, audit, replace=False)
        for t in range(n_t):
            est = ppi_mean(judge_vals[t], human[t, pick], judge_vals[t, pick], lam=lam, interval=interval,
                           weights=weights, target=target, fpc=fpc)
            low, high = est.ci_low, est.ci_high
            if not rectify:
                half = (high - low) / 2
                low, high = est.judge_mean - half, est.judge_mean + half
            cover[t] += low <= truth[t] <= high
            hw = est.human_high - est.human_low
            width[t] += (high - low) / hw if hw > 0 else 1.0
            lams[t] += est.lam
    return {"coverage": cover / resamples, "width": width / resamples, "lam": lams / resamples,
            "n_systems": np.array(runs.shape[0]), "n_queries": np.array(n_q)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--audit", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"PPI++ on TREC DL passage qrels and real runs: {args.resamples} audits of {args.audit} queries per year; "
          f"NDCG@{K}; coverage of the all-human value (target >= 0.94) and mean width / human-only width on the "
          f"same audits, same interval kind (target <= 0.75); 't': the report's interval, 'normal': ppi-python's")
    print(f"Monte Carlo: a target whose true coverage is 0.95 shows {np.sqrt(0.95 * 0.05 / args.resamples):.3f} "
          f"standard error over {args.resamples} audits, so the min over 6 systems or 15 pairs runs 0.01-0.02 below "
          f"the true coverage of the worst one")
    header = (f"{'year':5} {'judge':8} {'interval':13} {'systems: cover min/mean':>24} {'width':>6} "
              f"{'pairs: cover min/mean':>22} {'width':>6} {'mean lam':>8}")
    print(header)
    print("-" * len(header))
    rows = [("PPI++ t", None, True, "t", False, "population", False),
            ("human only t", 0.0, True, "t", False, "population", False),
            ("PPI (lam=1) t", 1.0, True, "t", False, "population", False),
            ("PPI++ normal", None, True, "normal", False, "population", False),
            ("human normal", 0.0, True, "normal", False, "population", False),
            ("no-rectifier", 1.0, False, "t", False, "population", False),
            ("PPI++ t strat", None, True, "t", True, "population", False),
            ("human t strat", 0.0, True, "t", True, "population", False),
            # the design-based form for the mean over exactly these queries (target="queries")
            ("regr t q", None, True, "t", False, "queries", False),
            ("regr t q fpc", None, True, "t", False, "queries", True),
            ("human t q fpc", 0.0, True, "t", False, "queries", True),
            ("regr q strat", None, True, "t", True, "queries", False)]
    bounds = []
    for year in ("dl19", "dl20"):
        for judge in ("lenient", "biased", "inflated"):
            b = information_bound(year, judge, args.seed)
            n_b = int(b["n_systems"])
            kappa, kappa_bin = agreement(year, judge, args.seed)
            bounds.append(f"{year:5} {judge:8} kappa with the qrels {kappa:.2f} graded, {kappa_bin:.2f} binary (>= 2); "
                          f"one lambda: systems {b['one_lam'][:n_b].mean():.3f}, pairs "
                          f"{b['one_lam'][n_b:].mean():.3f}; per query type: systems {b['by_type'][:n_b].mean():.3f}, "
                          f"pairs {b['by_type'][n_b:].mean():.3f}; recalibrated judge, one lambda: systems "
                          f"{b['calibrated'][:n_b].mean():.3f}, pairs {b['calibrated'][n_b:].mean():.3f}")
            for label, lam, rectify, interval, design, target, fpc in rows:
                start = time.perf_counter()
                r = simulate(year, judge, resamples=args.resamples, audit=args.audit, seed=args.seed, lam=lam,
                             rectify=rectify, interval=interval, design=design, target=target, fpc=fpc)
                n_s = int(r["n_systems"])
                cs, cp = r["coverage"][:n_s], r["coverage"][n_s:]
                ws, wp = r["width"][:n_s], r["width"][n_s:]
                print(f"{year:5} {judge:8} {label:13} {cs.min():>13.3f} / {cs.mean():.3f} {ws.mean():>6.3f} "
                      f"{cp.min():>11.3f} / {cp.mean():.3f} {wp.mean():>6.3f} {r['lam'].mean():>8.2f}"
                      f"   ({int(r['n_queries'])} queries, {time.perf_counter() - start:.1f} s)")
    print("\nInformation bound (oracle use of the judge's per-query values, no estimation cost; mean width ratio "
          "over targets against the human-only interval of a random audit). Published LLM judges on TREC 2024 "
          "(LLMJudge, RAG): kappa about 0.3 graded, 0.4-0.5 binary:")
    for line in bounds:
        print(line)


if __name__ == "__main__":
    main()
