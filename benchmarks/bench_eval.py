"""`ndcg-labeling eval` against pytrec_eval and the trec_eval binary on realistic TREC files.

Files: document ids drawn from 8.8 million distinct MS MARCO-like strings
(``msmarco_passage_07_7123456``), scores with 3 decimals (many ties, broken by document id), queries
written one after the other; qrels with 40 judged documents per query (labels 0-3, a few -1), about
half of them retrieved. Cases: 10,000 queries x 1,000 documents and 100,000 x 100 (10 million lines
each), 2,000 x 1,000 (``2m``: 2 million lines, issue 32's goal of at most 0.5x pytrec_eval's time),
and 500 x 100 (50,000 lines, a real-size TREC track).

Every tool runs as its own process, timed from start to exit (reading and parsing included) with its
peak resident memory (``ru_maxrss`` of the child): ``ndcg-labeling eval``, a Python script reading the
files into dicts for pytrec_eval (as its README shows) and evaluating, and trec_eval 10 when a binary
is found (``--trec-eval PATH``, ``$TREC_EVAL`` or ``trec_eval`` on PATH). The output of ours and
trec_eval's is compared line by line, so a fast wrong answer cannot pass.

    python benchmarks/bench_eval.py [--cases small,2m,10k,100k] [--dir /tmp/bench-eval] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import child_env, cpu_name, timed  # noqa: E402

CASES = {"small": (500, 100), "2m": (2_000, 1_000), "10k": (10_000, 1_000), "100k": (100_000, 100)}
N_DOCS = 8_800_000
JUDGED_PER_QUERY = 40
MEASURES = ["-m", "map", "-m", "ndcg", "-m", "ndcg_cut.10", "-m", "P.10", "-m", "recall.100", "-m", "recip_rank"]

PYTREC = textwrap.dedent("""
    import sys, pytrec_eval
    qrels, run = {}, {}
    with open(sys.argv[1]) as f:
        for line in f:
            q, _, d, r = line.split()
            qrels.setdefault(q, {})[d] = int(r)
    with open(sys.argv[2]) as f:
        for line in f:
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    measures = set(sys.argv[3].split(";"))
    out = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    print(len(out))
""")
PYTREC_MEASURES = "map;ndcg;ndcg_cut.10;P.10;recall.100;recip_rank"

# ``eval``'s work without the process around it: reading, joining, measures and rendering, best of 5
# in one process (the CLI's start-up - interpreter, NumPy, typer - is the rest of the whole-process time).
IN_PROCESS = textwrap.dedent("""
    import sys, time
    from ndcg_labeling.scoring.evaluate import evaluate_files
    from ndcg_labeling.reports.trec_eval import render
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        render(evaluate_files(sys.argv[1], sys.argv[2], sys.argv[3].split(";")), "trec", per_query=False)
        best = min(best, time.perf_counter() - t)
    print(best)
""")


def _doc(d: int) -> str:
    return f"msmarco_passage_{d % 100:02d}_{d}"


def make_files(folder: Path, n_queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """Write ``qrels`` and ``run`` for a case (kept between runs: generating 10M lines takes a minute)."""
    qrels, run = folder / f"qrels.{n_queries}x{depth}", folder / f"run.{n_queries}x{depth}"
    if qrels.exists() and run.exists():
        return qrels, run
    rng = np.random.default_rng(seed)
    stride = N_DOCS // depth
    part_run, part_qrels = Path(f"{run}.part"), Path(f"{qrels}.part")  # complete files only
    with open(part_run, "w") as fr, open(part_qrels, "w") as fq:
        for first in range(0, n_queries, 1000):
            qs = np.arange(first, min(first + 1000, n_queries))
            # distinct documents per query: one draw in each of `depth` slices of the id space
            docs = rng.integers(0, stride, (len(qs), depth)) + np.arange(depth) * stride
            scores = np.sort(rng.integers(0, 20_000, (len(qs), depth)), axis=1)[:, ::-1] / 1000
            lines, judged = [], []
            for i, q in enumerate(qs):
                qid = str(100_000 + q)
                lines.extend(f"{qid} Q0 {_doc(d)} {r} {s:.3f} run\n"
                             for r, (d, s) in enumerate(zip(docs[i].tolist(), scores[i].tolist(), strict=True), start=1))
                half = JUDGED_PER_QUERY // 2
                picked = rng.choice(depth, min(half, depth), replace=False)
                extra = rng.integers(0, N_DOCS, JUDGED_PER_QUERY - len(picked))
                extra = np.unique(extra[~np.isin(extra, docs[i])])
                labels = rng.choice([-1, 0, 0, 0, 1, 1, 2, 3], len(picked) + len(extra))
                judged.extend(f"{qid} 0 {_doc(d)} {lab}\n" for d, lab in
                              zip([*docs[i][picked].tolist(), *extra.tolist()], labels.tolist(), strict=True))
            fr.write("".join(lines))
            fq.write("".join(judged))
    part_run.rename(run)
    part_qrels.rename(qrels)
    return qrels, run


def find_trec_eval(given: str | None) -> str | None:
    for candidate in (given, os.environ.get("TREC_EVAL"), shutil.which("trec_eval")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="small,10k,100k")
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "bench-eval"))
    parser.add_argument("--repeat", type=int, default=2, help="runs per tool; the best is shown")
    parser.add_argument("--trec-eval", default=None)
    parser.add_argument("--all-trec", action="store_true", help="also time ours with -m all_trec (memory goal)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a tool is stopped")
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    trec_eval = find_trec_eval(args.trec_eval)
    ours = [sys.executable, "-m", "ndcg_labeling", "eval"]
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs; date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"load average before: {os.getloadavg()}")
    print(f"measures: {' '.join(MEASURES)}; trec_eval binary: {trec_eval or 'not found'}")
    print("python bytecode cache: on in the timed processes (benchmarks/_machine.child_env)")
    print(f"{'case':<16}{'lines':>12}{'tool':>22}{'seconds':>10}{'peak MB':>10}{'vs ours':>9}")
    for name in args.cases.split(","):
        n_queries, depth = CASES[name]
        qrels, run = make_files(folder, n_queries, depth)
        lines = n_queries * depth
        tools = {"ndcg-labeling eval": [*ours, *MEASURES, str(qrels), str(run)]}
        if args.all_trec:
            tools["ndcg-labeling -m all_trec"] = [*ours, "-m", "all_trec", str(qrels), str(run)]
        tools["pytrec_eval (process)"] = [sys.executable, "-c", PYTREC, str(qrels), str(run), PYTREC_MEASURES]
        if trec_eval:
            tools["trec_eval 10"] = [trec_eval, *MEASURES, str(qrels), str(run)]
        results = {}
        for tool, cmd in tools.items():
            out = folder / f"out.{name}.{tool.replace(' ', '_')}"
            best = min((timed(cmd, out, args.timeout) for _ in range(args.repeat)), key=lambda r: r[0])
            if best[2] not in (0, -1):
                raise SystemExit(f"{tool} failed on {name} (exit {best[2]})")
            results[tool] = best
        base = results["ndcg-labeling eval"][0]
        for tool, (wall, mb, rc) in results.items():
            late = f"  (stopped after {args.timeout:.0f} s)" if rc == -1 else ""
            print(f"{name:<16}{lines:>12,}{tool:>22}{wall:>10.2f}{mb:>10.0f}{wall / base:>8.2f}x{late}")
        if name == "small":
            inside = subprocess.run([sys.executable, "-c", IN_PROCESS, str(qrels), str(run), PYTREC_MEASURES], env=child_env(),
                                    capture_output=True, text=True, check=True)
            print(f"{name:<16}{lines:>12,}{'ours in-process':>22}{float(inside.stdout):>10.3f}{'':>10}"
                  f"{float(inside.stdout) / base:>8.2f}x  (read, join, measures, render; best of 5)")
        if trec_eval and results["trec_eval 10"][2] == 0:
            same = ((folder / f"out.{name}.ndcg-labeling_eval").read_text()
                    == (folder / f"out.{name}.trec_eval_10").read_text())
            print(f"{name:<16}{'':>12}{'same output as trec_eval':>22}{'yes' if same else 'NO':>10}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
