"""Do the 95% intervals of infNDCG@10 cover full judgment? Coverage over sampled designs, per budget.

For each budget, ``designs`` stratified samples are drawn (the ``sample`` strategy in the strata of
:func:`ndcg_labeling.budget.strategies.design_edges`, as ``tasks create`` draws them); each gives infNDCG@10
(jackknife bias-corrected) of every system with its 95% interval (:func:`system_means`: the jackknife
variance, the anticipated variance in the queries where a run's estimated DCG is 0, on the root MSE with
the estimated bias) and the interval of each system's difference from the best system under full judgment
(:func:`difference_halfwidth`). The share
of designs whose interval holds the full-judgment value (the depth-20 pool judged whole) is the coverage; it
should be near 95%. Also printed: the mean bias of the estimates and the ratio of the realised 1.96 * SD over
the designs to the mean reported half-width (1 when the intervals are as wide as the spread they describe),
and the share of estimates above 1. A budget is a fraction of the pool (``0.25``) or judged pairs per query
(``8/q``). With ``--plan``, ``plan --budget``'s half-widths over the realised 1.96 SD of each system and of its
difference from system 0, planned with no grades, a first round's and every grade (``--plan-only``: that
table alone, its spreads from the point estimates, for a large field).

    .venv/bin/python benchmarks/budget_coverage.py --world dl19 --designs 200 --budgets 4/q,8/q,12/q,0.1,0.25,0.5 --plan
    .venv/bin/python benchmarks/budget_coverage.py --world covid --systems-shown 20 --designs 100 --budgets 4/q,8/q,12/q
    .venv/bin/python benchmarks/budget_coverage.py --world covid --designs 60 --budgets 0.1,8/q --plan-only --plan-repeats 5 --plan-designs 10
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ndcg_labeling.budget.estimators import (  # noqa: E402
    difference_halfwidth,
    inferred_ndcg,
    inferred_point,
    plain_ndcg,
    system_means,
)
from ndcg_labeling.budget.plan import expected_halfwidths  # noqa: E402
from ndcg_labeling.budget.simulate import simulate  # noqa: E402
from ndcg_labeling.stats import holm  # noqa: E402

BAR = 0.93  # issue 48: every system's (and difference's) coverage at least this


def _budget(spec: str | float, pool) -> int:  # type: ignore[no-untyped-def]
    text = str(spec)
    if text.endswith("/q"):
        return int(float(text[:-2]) * pool.n_queries)
    return int(round(float(text) * pool.n_pairs))


def coverage(pool, oracle, budget, designs, shown=None, seed=0):  # type: ignore[no-untyped-def]
    """Per shown system over ``designs`` designs: ``dict`` of arrays ``cover`` and ``cover_diff`` (share of
    designs whose 95% interval covers the full value; the difference is from the best shown system, itself
    left out), ``bias`` (mean estimate - full), ``ratio`` (1.96 * SD of the estimates / mean half-width),
    ``ratio_diff`` (the same for the differences), and ``above_one`` (share of per-query estimates > 1).
    ``shown``: indices of the systems to estimate (the pool stays every system's); default all."""
    shown = np.arange(pool.n_systems) if shown is None else np.asarray(shown)
    sub = replace(pool, run_pairs=pool.run_pairs[shown])
    full = plain_ndcg(sub, oracle).mean(axis=1)
    best = int(np.argmax(full))
    rng = np.random.default_rng(seed)
    est = np.zeros((designs, shown.size))
    half = np.zeros_like(est)
    dhalf = np.zeros_like(est)
    above = 0.0
    for d in range(designs):
        grades, inclusion, strata = simulate(pool, "sample", budget, oracle, rng=rng)
        inf = inferred_ndcg(sub, grades, np.nan_to_num(inclusion), strata)
        est[d], half[d] = system_means(inf)
        dhalf[d] = [difference_halfwidth(inf, s, best) if s != best else 0.0 for s in range(shown.size)]
        above += float(np.mean(inf.ndcg > 1.0))
    diff, dfull = est - est[:, [best]], full - full[best]
    others = np.arange(shown.size) != best
    hit, hit_diff = np.abs(est - full) <= half, (np.abs(diff - dfull) <= dhalf)[:, others]  # (designs, systems)
    return {
        "spread": 1.96 * est.std(axis=0, ddof=1),
        # the differences from the first shown system, as plan --budget gives them (from system 0)
        "spread_diff0": 1.96 * (est - est[:, :1]).std(axis=0, ddof=1),
        "cover": hit.mean(axis=0),
        "cover_diff": hit_diff.mean(axis=0),
        # Monte-Carlo standard errors of the mean coverages with the design as the unit: the systems share
        # each design (and the differences share the best system's error), so they are not independent trials
        "se": np.std(hit.mean(axis=1), ddof=1) / np.sqrt(designs),
        "se_diff": np.std(hit_diff.mean(axis=1), ddof=1) / np.sqrt(designs),
        "bias": est.mean(axis=0) - full,
        # a system whose estimate is 0 +- 0 in every design (nothing of its top k ever judged relevant): NaN
        "ratio": 1.96 * est.std(axis=0, ddof=1) / np.where(half.mean(axis=0) > 0, half.mean(axis=0), np.nan),
        "ratio_diff": (1.96 * diff.std(axis=0, ddof=1) / np.maximum(dhalf.mean(axis=0), 1e-12))[others],
        "above_one": np.array(above / designs),
        "judged_per_query": np.array(budget / pool.n_queries),
    }


def realised_spread(pool, oracle, budget, designs, seed=0):  # type: ignore[no-untyped-def]
    """1.96 SD over ``designs`` designs of every system's estimate and of its difference from system 0 (the
    point estimates alone: no intervals, for a field too large to compute them all)."""
    rng = np.random.default_rng(seed)
    est = np.zeros((designs, pool.n_systems))
    for d in range(designs):
        grades, inclusion, strata = simulate(pool, "sample", budget, oracle, rng=rng)
        est[d] = inferred_point(pool, grades, np.nan_to_num(inclusion), strata).mean(axis=1)
    return 1.96 * est.std(axis=0, ddof=1), 1.96 * (est - est[:, :1]).std(axis=0, ddof=1)


def below_bar(cover, designs, bar=BAR, alpha=0.05):  # type: ignore[no-untyped-def]
    """Is any system's coverage significantly below ``bar``? Per system the exact one-sided binomial p-value
    ``P(X <= covered | designs, bar)`` (the chance of so few covering designs if the system's true coverage
    were ``bar``), Holm-adjusted over the systems (:func:`ndcg_labeling.stats.holm`). Returns ``(number with
    adjusted p < alpha, smallest adjusted p)``. The worst of many systems' observed coverages is low by
    chance alone (20 systems at a true 95% over 100 designs: the minimum is near 90%), which this reading
    separates from a system whose interval is too narrow. The systems share the designs, so their counts
    are dependent; Holm holds under any dependence."""
    from scipy.special import bdtr  # noqa: PLC0415

    covered = np.rint(np.asarray(cover, dtype=np.float64) * designs)
    adjusted = holm(bdtr(covered, designs, bar))
    return int((adjusted < alpha).sum()), float(adjusted.min())


def spread_systems(pool, oracle, n):  # type: ignore[no-untyped-def]
    """``n`` systems spread evenly over the full-judgment ordering (all when ``n`` is None or too large)."""
    if n is None or n >= pool.n_systems:
        return np.arange(pool.n_systems)
    order = np.argsort(plain_ndcg(pool, oracle).mean(axis=1))
    return np.sort(order[np.linspace(0, pool.n_systems - 1, n).round().astype(int)])


def coverage_table(pool, oracle, budgets, designs, shown=None, spreads=None, seed=0):  # type: ignore[no-untyped-def]
    """The coverage table; ``spreads``, a dict, gets each budget's realised 1.96 SD per shown system and of
    each one's difference from the first shown (for :func:`plan_table`, which then draws no designs of its
    own); ``seed``: the designs' generator's."""
    lines = [f"\n95% intervals of infNDCG@10 (`sample`), {designs} designs a budget, "
             f"{'all' if shown is None else len(shown)} systems shown:",
             "| budget | judged / query | coverage (mean ± MC SE, min system) | difference coverage (mean ± SE, min) "
             "| 1.96 SD / half-width (median, max) | same, differences | bias (mean, max abs) | per-query > 1 "
             f"| below {BAR:.0%}, Holm p < 0.05 (systems; differences; smallest p) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for spec in budgets:
        budget = _budget(spec, pool)
        t0 = time.perf_counter()
        c = coverage(pool, oracle, budget, designs, shown, seed)
        if spreads is not None:
            spreads[spec] = (c["spread"], c["spread_diff0"])
        low, p_low = below_bar(c["cover"], designs)
        low_d, p_low_d = below_bar(c["cover_diff"], designs)
        lines.append(
            f"| {spec} ({budget}) | {float(c['judged_per_query']):.1f} | {c['cover'].mean():.3f} ± {float(c['se']):.3f}, "
            f"{c['cover'].min():.3f} | {c['cover_diff'].mean():.3f} ± {float(c['se_diff']):.3f}, "
            f"{c['cover_diff'].min():.3f} | "
            f"{np.nanmedian(c['ratio']):.2f}, {np.nanmax(c['ratio']):.2f} | {np.median(c['ratio_diff']):.2f}, "
            f"{c['ratio_diff'].max():.2f} | {c['bias'].mean():+.4f}, {np.abs(c['bias']).max():.4f} | "
            f"{float(c['above_one']):.2%} | {low}; {low_d}; {p_low:.2f}, {p_low_d:.2f} | "
            f"({time.perf_counter() - t0:.0f} s)")
    return "\n".join(lines)


def plan_table(pool, oracle, budgets, designs, repeats=20, plan_designs=20, spreads=None, seed=0):  # type: ignore[no-untyped-def]
    """``plan --budget`` against the realised 1.96 SD per system over ``designs`` designs (taken from
    ``spreads`` where :func:`coverage_table` left them, all systems shown), for the systems and for their
    differences from system 0: planned without grades, with the grades of a first round (a ``sample`` of
    half the budget, graded from the oracle), and with every grade known (the plan's Monte-Carlo alone,
    ``repeats`` x ``plan_designs`` designs). ``seed``: the realised designs' (those of the coverage table)."""
    lines = [f"\n`plan --budget` half-widths / realised 1.96 SD ({designs} designs; plan {repeats} worlds x "
             f"{plan_designs} designs): min, median, max over the systems",
             "| budget | grades in hand | systems | differences from system 0 | within ±20% (systems, differences) |",
             "|---|---|---|---|---|"]
    for spec in budgets:
        budget = _budget(spec, pool)
        if spreads and spec in spreads:
            spread, spread_diff = spreads[spec]
        else:
            spread, spread_diff = realised_spread(pool, oracle, budget, designs, seed)
        first, _, _ = simulate(pool, "sample", budget // 2, oracle, rng=np.random.default_rng(99))
        for name, known in (("none", None), ("first round (half)", first), ("all", oracle)):
            planned, planned_diff = expected_halfwidths(pool, [budget], known, max_grade=int(oracle.max()),
                                                        repeats=repeats, designs=plan_designs)
            cells, within = [], []
            for p, r in ((planned[0], spread), (planned_diff[0, 1:], spread_diff[1:])):
                ratio = p / np.where(r > 0, r, np.nan)
                cells.append(f"{np.nanmin(ratio):.2f}, {np.nanmedian(ratio):.2f}, {np.nanmax(ratio):.2f}")
                within.append(f"{int(np.sum(np.abs(ratio - 1) <= 0.2))} of {ratio.size}")
            lines.append(f"| {spec} ({budget}) | {name} | {cells[0]} | {cells[1]} | {within[0]}, {within[1]} |")
    return "\n".join(lines)


def main() -> None:
    from tests.budget.dl_world import covid_world, make_world, real_world  # noqa: PLC0415

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", default="dl19", help="covid, dl19, dl20, dl19-sim, dl20-sim")
    ap.add_argument("--budgets", default="8/q,0.1,0.25,0.5")
    ap.add_argument("--designs", type=int, default=200)
    ap.add_argument("--plan", action="store_true", help="also check plan --budget against the realised spread")
    ap.add_argument("--plan-only", action="store_true", help="only the plan table (its spreads from the point "
                    "estimates alone: for a large field)")
    ap.add_argument("--plan-repeats", type=int, default=20, help="the plan's completed worlds")
    ap.add_argument("--plan-designs", type=int, default=20, help="the plan's designs in each world")
    ap.add_argument("--systems-shown", type=int, help="estimate N systems spread over the ordering (default all)")
    ap.add_argument("--seed", type=int, default=0, help="the designs' random seed (coverage table and the plan's realised spreads)")
    args = ap.parse_args()
    if args.world == "covid":
        w = covid_world()
    elif args.world.endswith("-sim"):
        w = make_world(args.world.removesuffix("-sim"))
    else:
        w = real_world(args.world)
    shown = spread_systems(w.pool, w.oracle, args.systems_shown)
    print(f"{args.world}: {w.pool.n_systems} systems, {w.pool.n_queries} queries, {w.pool.n_pairs} pairs")
    spreads: dict = {}
    if not args.plan_only:
        print(coverage_table(w.pool, w.oracle, args.budgets.split(","), args.designs, shown, spreads,
                             args.seed), flush=True)
    if args.plan or args.plan_only:
        # the plan is per system of the whole field: the coverage table's spreads serve when it showed all
        print(plan_table(w.pool, w.oracle, args.budgets.split(","), args.designs, args.plan_repeats,
                         args.plan_designs, spreads=spreads if shown.size == w.pool.n_systems else None,
                         seed=args.seed))


if __name__ == "__main__":
    main()
