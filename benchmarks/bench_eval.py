"""End-to-end `ndcg-labeling eval` (files in, per-query NDCG@10 out) against pytrec_eval.

Writes a run of N queries x 100 documents (default N = 100,000: 10M run lines) and qrels with 30
judged documents per query (20 of them retrieved) to a temporary folder, then times

* ``ndcg-labeling eval qrels run -m ndcg_cut.10 -q -o /dev/null`` as a subprocess (process start,
  imports, parsing, ranking, output: what a user waits for), and
* pytrec_eval with its own parsing: ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator`` +
  ``evaluate`` in this process (its import not counted),

* the trec_eval binary (``trec_eval -q -m ndcg_cut.10 qrels run``) when one is at hand:
  ``--trec-eval PATH``, else ``$TREC_EVAL``, else ``trec_eval`` on the PATH (its per-query lookup is
  quadratic in the number of queries: expect minutes at the default size),

and checks that they give the same mean. Each side is timed as the best of ``--repeats`` runs (2). Usage: ``python benchmarks/bench_eval.py [--queries N]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _machine import cpu_name  # benchmarks/ is on sys.path when a script runs

DOCS_PER_QUERY = 100
JUDGED_PER_QUERY = 30
RETRIEVED_JUDGED = 20


def write_files(folder: Path, n_queries: int, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    qids = np.repeat(np.char.add("q", np.arange(n_queries).astype(str)), DOCS_PER_QUERY)
    doc_num = np.tile(np.arange(DOCS_PER_QUERY), n_queries)
    docs = np.char.add("doc", doc_num.astype(str))
    scores = np.round(rng.random(n_queries * DOCS_PER_QUERY) * 100, 4)  # some ties, as real runs have
    ranks = np.tile(np.arange(1, DOCS_PER_QUERY + 1), n_queries)
    run = pd.DataFrame({"q": qids, "Q0": "Q0", "d": docs, "rank": ranks, "score": scores, "tag": "bench"})
    run_path = folder / "run.txt"
    run.to_csv(run_path, sep=" ", header=False, index=False)
    # 20 judged among the retrieved (doc0..doc19) and 10 judged but never retrieved.
    judged = np.concatenate([np.arange(RETRIEVED_JUDGED), np.arange(1000, 1000 + JUDGED_PER_QUERY - RETRIEVED_JUDGED)])
    q_q = np.repeat(np.char.add("q", np.arange(n_queries).astype(str)), JUDGED_PER_QUERY)
    q_d = np.char.add("doc", np.tile(judged, n_queries).astype(str))
    rel = rng.choice([0, 0, 0, 1, 1, 2, 3], size=n_queries * JUDGED_PER_QUERY)
    qrels_path = folder / "qrels.txt"
    pd.DataFrame({"q": q_q, "it": 0, "d": q_d, "rel": rel}).to_csv(qrels_path, sep=" ", header=False, index=False)
    return qrels_path, run_path


def time_ours(qrels: Path, run: Path, out: Path, repeats: int) -> float:
    exe = Path(sys.executable).with_name("ndcg-labeling")
    cmd = [str(exe), "eval", str(qrels), str(run), "-m", "ndcg_cut.10", "-q", "--format", "csv", "-o", str(out)]
    # Warm the numba on-disk cache once (a first-ever call compiles), then time a normal call.
    subprocess.run([str(exe), "eval", str(qrels), str(run), "-m", "ndcg_cut.10", "-o", os.devnull], check=True)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True)
        best = min(best, time.perf_counter() - start)
    return best


def time_pytrec_eval(qrels: Path, run: Path, repeats: int) -> tuple[float, float, float]:
    """Best of ``repeats`` runs: (total seconds, of which parsing, mean ndcg_cut_10)."""
    import pytrec_eval

    best = (float("inf"), 0.0, 0.0)
    for _ in range(repeats):
        start = time.perf_counter()
        with open(qrels) as fh:
            qrel = pytrec_eval.parse_qrel(fh)
        with open(run) as fh:
            parsed = pytrec_eval.parse_run(fh)
        parsed_at = time.perf_counter()
        result = pytrec_eval.RelevanceEvaluator(qrel, {"ndcg_cut.10"}).evaluate(parsed)
        end = time.perf_counter()
        mean = float(np.mean([v["ndcg_cut_10"] for v in result.values()]))
        if end - start < best[0]:
            best = (end - start, parsed_at - start, mean)
        del qrel, parsed, result
    return best


def find_trec_eval(given: str | None) -> str | None:
    return given or os.environ.get("TREC_EVAL") or shutil.which("trec_eval")


def time_trec_eval(binary: str, qrels: Path, run: Path) -> tuple[float, float]:
    """One run of the binary, its output parsed by us: (seconds, mean ndcg_cut_10)."""
    start = time.perf_counter()
    proc = subprocess.run([binary, "-q", "-m", "ndcg_cut.10", str(qrels), str(run)],
                          check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    means = [line.split()[2] for line in proc.stdout.splitlines() if line.split()[1:2] == ["all"]]
    return seconds, float(means[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000, help="number of queries (100 run lines each)")
    parser.add_argument("--skip-pytrec-eval", action="store_true")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs, for both tools")
    parser.add_argument("--trec-eval", help="path of a trec_eval binary (default: $TREC_EVAL, then the PATH)")
    args = parser.parse_args()
    n = args.queries
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        qrels, run = write_files(folder, n)
        print(f"wrote {n * DOCS_PER_QUERY:,} run lines and {n * JUDGED_PER_QUERY:,} qrels lines "
              f"({run.stat().st_size / 1e6:.0f} MB + {qrels.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        print(f"machine: {os.cpu_count()} cores {platform.machine()}, {cpu_name()}; python {platform.python_version()}")
        out = folder / "ours.csv"
        ours = time_ours(qrels, run, out, args.repeats)
        our_values = pd.read_csv(out)
        our_mean = float(our_values.loc[our_values["query_id"] == "all", "value"].iloc[0])
        print()
        print(f"| eval, {n:,} queries x {DOCS_PER_QUERY} docs, ndcg_cut.10 -q | seconds | time / ours |")
        print("| --- | ---: | ---: |")
        print(f"| ndcg-labeling eval (subprocess, whole command) | {ours:.2f} | 1.0x |")
        if not args.skip_pytrec_eval:
            total, parse, mean = time_pytrec_eval(qrels, run, args.repeats)
            print(f"| pytrec_eval parse_qrel + parse_run + evaluate | {total:.2f} | {total / ours:.1f}x |")
            print(f"|   of which parsing | {parse:.2f} | |")
        binary = find_trec_eval(args.trec_eval)
        if binary:
            te_seconds, te_mean = time_trec_eval(binary, qrels, run)
            print(f"| trec_eval binary ({binary}), one run | {te_seconds:.2f} | {te_seconds / ours:.1f}x |")
        print()
        same = True
        if not args.skip_pytrec_eval:
            ok = abs(mean - our_mean) <= 1e-9
            same &= ok
            print(f"mean ndcg_cut_10: ours {our_mean:.6f}, pytrec_eval {mean:.6f} ({'same' if ok else 'DIFFERENT'})")
        if binary:
            ok = abs(te_mean - our_mean) <= 5e-5  # trec_eval prints 4 decimals
            same &= ok
            print(f"mean ndcg_cut_10: ours {our_mean:.6f}, trec_eval {te_mean:.4f} ({'same' if ok else 'DIFFERENT'})")
        else:
            print("trec_eval binary: not found (--trec-eval PATH, $TREC_EVAL or the PATH)")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
