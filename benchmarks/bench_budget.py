"""Label less: how well each pooling strategy keeps the system decisions of full judgment, per budget.

    .venv/bin/python benchmarks/bench_budget.py                       # DL19 + DL20, real and simulated, 10%..100%
    .venv/bin/python benchmarks/bench_budget.py --repeats 10 --years dl19 --fields real
    .venv/bin/python benchmarks/bench_budget.py --runs DIR --qrels FILE   # your own run files instead

The oracle is the TREC Deep Learning passage qrels (tests/data/trecdl). The fields of systems: ``real``, six
real runs a year (tests/data/trecdl/rank_llm: BM25, BM25+RM3, TAS-B, ada-002, RepLLaMA, SPLADE++ ED, from
castorini/rank_llm), and ``sim``, the simulated field of tests/budget/dl_world.py (12 systems); or with
``--runs`` every TREC run file in DIR (plain or .gz; unjudged passages count as grade 0 in the oracle). The
pool is the depth-20 pool. For each budget (a fraction of the depth-20 pool's
pairs) and strategy the judging is simulated (adaptive strategies one pair per query per round) and each
system's NDCG@10 (mean over queries) is compared with full judgment of the pool: Kendall's tau of the
system ordering (scipy) and the RMSE of the per-system values. ``plain`` is NDCG with unjudged = 0; for the
``sample`` strategy the inferred columns are infNDCG (Horvitz-Thompson, jackknife bias-corrected), with the
mean half-width of its 95% sampling interval and the share of systems whose interval covers the full value.
Figures are means over ``--repeats`` seeds (the random strategies vary with the seed).
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ndcg_labeling.budget.estimators import inferred_ndcg, plain_ndcg, system_means  # noqa: E402
from ndcg_labeling.budget.pool import build_pool  # noqa: E402
from ndcg_labeling.budget.simulate import simulate  # noqa: E402
from ndcg_labeling.budget.strategies import STRATEGIES  # noqa: E402
from tests.budget.dl_world import make_world, real_world  # noqa: E402

DEPTH = 20


def world_from_files(runs_dir: Path, qrels_path: Path):  # type: ignore[no-untyped-def]
    """(pool, oracle) from TREC run files and a qrels file: documents coded per query, each list in
    trec_eval's order (score descending, ties by document id descending)."""
    qrels: dict[str, dict[str, float]] = {}
    for line in qrels_path.read_text().splitlines():
        qid, _, doc, grade = line.split()[:4]
        qrels.setdefault(qid, {})[doc] = float(grade)
    files = sorted(p for p in runs_dir.iterdir() if p.is_file())
    lists: list[dict[str, list[tuple[float, str]]]] = []
    for f in files:
        per: dict[str, list[tuple[float, str]]] = {}
        data = f.read_bytes()
        for line in (gzip.decompress(data) if f.name.endswith(".gz") else data).decode().splitlines():
            qid, _, doc, _, score = line.split()[:5]
            if qid in qrels:
                per.setdefault(qid, []).append((float(score), doc))
        lists.append(per)
    qids = sorted(qrels)
    codes: list[dict[str, int]] = [{} for _ in qids]
    runs = np.full((len(files), len(qids), DEPTH), -1, dtype=np.int64)
    for s, per in enumerate(lists):
        for q, qid in enumerate(qids):
            for r, (_, doc) in enumerate(sorted(per.get(qid, []), reverse=True)[:DEPTH]):
                runs[s, q, r] = codes[q].setdefault(doc, len(codes[q]))
    pool = build_pool(runs, DEPTH)
    names = [{c: d for d, c in codes[q].items()} for q in range(len(qids))]
    oracle = np.array([qrels[qids[q]].get(names[q][c], 0.0) for q, c in zip(pool.query, pool.code, strict=True)])
    return pool, oracle


def measure(pool, oracle, fractions, repeats):  # type: ignore[no-untyped-def]
    full = plain_ndcg(pool, oracle).mean(axis=1)
    rows = []
    for frac in fractions:
        budget = int(round(frac * pool.n_pairs))
        for strategy in STRATEGIES:
            got = []
            for seed in range(repeats if strategy in ("depth", "sample") else 1):
                t0 = time.perf_counter()
                grades, inclusion, strata = simulate(pool, strategy, budget, oracle, rng=np.random.default_rng(seed))
                plain = plain_ndcg(pool, grades).mean(axis=1)
                rec = [kendalltau(full, plain)[0], float(np.sqrt(np.mean((plain - full) ** 2)))]
                if strategy == "sample":
                    est = inferred_ndcg(pool, grades, np.nan_to_num(inclusion), strata)
                    mean, half = system_means(est)
                    rec += [kendalltau(full, mean)[0], float(np.sqrt(np.mean((mean - full) ** 2))),
                            float(half.mean()), float(np.mean(np.abs(mean - full) <= half))]
                rec.append(time.perf_counter() - t0)
                got.append(rec)
            avg = np.nanmean(np.array(got, dtype=np.float64), axis=0)
            rows.append((frac, budget, strategy, avg))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--years", default="dl19,dl20")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--fields", default="real,sim", help="real, sim or both (comma-separated)")
    ap.add_argument("--runs", type=Path)
    ap.add_argument("--qrels", type=Path)
    args = ap.parse_args()
    fractions = sorted([round(0.1 * i, 1) for i in range(1, 11)] + [0.25])  # 0.25: the bar of issue 31
    if args.runs:
        worlds = [(args.runs.name, *world_from_files(args.runs, args.qrels))]
    else:
        worlds = []
        for field in args.fields.split(","):
            for year in args.years.split(","):
                w = real_world(year) if field == "real" else make_world(year)
                worlds.append((f"{year} {field}", w.pool, w.oracle))
    for name, pool, oracle in worlds:
        print(f"\n## {name}: {pool.n_systems} systems, {pool.n_queries} queries, depth-{pool.depth} pool of "
              f"{pool.n_pairs} pairs; NDCG@10, {args.repeats} repeats for the random strategies")
        print("| budget | pairs | strategy | tau (plain) | RMSE (plain) | tau (inferred) | RMSE (inferred) "
              "| 95% half-width | coverage | s/run |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for frac, budget, strategy, avg in measure(pool, oracle, fractions, args.repeats):
            inf = (f"{avg[2]:.3f} | {avg[3]:.4f} | {avg[4]:.4f} | {avg[5]:.2f}" if strategy == "sample"
                   else "- | - | - | -")
            print(f"| {frac:.0%} | {budget} | {strategy} | {avg[0]:.3f} | {avg[1]:.4f} | {inf} | {avg[-1]:.2f} |")


if __name__ == "__main__":
    main()
