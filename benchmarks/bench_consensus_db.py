"""Agreement and consensus from the database at scale: 1,000,000 grades (200,000 items x 5 grades,
1,000 graders) in a SQLite file, then the time and peak memory of each use case.

    .venv/bin/python benchmarks/bench_consensus_db.py              # full size
    .venv/bin/python benchmarks/bench_consensus_db.py --grades 50000

The database is built with ``repository.bulk_insert`` (the importer's own bulk path) in a temporary
folder. Each measured use case runs in a fresh Python process, so its peak memory is its own: the
figure "added MiB" is the peak resident memory at the end minus the peak after the imports (what the
use case added; see :func:`peak_mib`); "process MiB" is the whole process's peak, imports included. Targets: under 5 s and under 1 GiB for ``agreement`` and median ``consensus``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRADES_PER_ITEM = 5
N_GRADERS = 1000
DOCS_PER_QUERY = 20
TARGET_SECONDS = 5.0
TARGET_MIB = 1024.0

TARGETS = ("agreement", "consensus-median", "agreement-by-grader", "export-qrels")
REQUIRED = ("agreement", "consensus-median")


def build(url: str, n_grades: int, seed: int = 7) -> float:
    """Create and fill the database; returns the seconds it took."""
    import numpy as np

    from ndcg_labeling.db import migrate
    from ndcg_labeling.db import models as m
    from ndcg_labeling.db import repository as repo
    from ndcg_labeling.db.session import make_engine, session_scope

    start = time.perf_counter()
    n_items = max(n_grades // GRADES_PER_ITEM, 1)
    n_queries = max(n_items // DOCS_PER_QUERY, 1)
    rng = np.random.default_rng(seed)
    engine = make_engine(url)
    migrate.upgrade(engine)
    with session_scope(engine) as session:
        repo.bulk_insert(m.Query, ["id", "external_id", "query_type"],
                         ((q + 1, f"q{q:06d}", ("nav", "info", "tx")[q % 3]) for q in range(n_queries)), session=session)
        repo.bulk_insert(m.Document, ["id", "external_id"], ((d + 1, f"d{d:07d}") for d in range(n_items)),
                         session=session)
        repo.bulk_insert(m.Grader, ["id", "name", "active"], ((g + 1, f"grader{g:04d}", True) for g in range(N_GRADERS)),
                         session=session)
        truth = rng.integers(0, 4, size=n_items)
        # five distinct graders per item: first + k * step (mod 1000) for k < 5, step < 200, never wraps onto itself
        first = rng.integers(0, N_GRADERS, size=n_items)
        step = rng.integers(1, N_GRADERS // GRADES_PER_ITEM, size=n_items)
        item = np.repeat(np.arange(n_items), GRADES_PER_ITEM)
        k = np.tile(np.arange(GRADES_PER_ITEM), n_items)
        grader = (first[item] + k * step[item]) % N_GRADERS
        noise = rng.choice([-1, 0, 0, 0, 1], size=item.size)
        grade = np.clip(truth[item] + noise, 0, 3)
        query = item // DOCS_PER_QUERY
        now = repo.db_datetime(session, m.utcnow())
        n = item.size
        rows = zip((grader + 1).tolist(), (query + 1).tolist(), (item + 1).tolist(), grade.tolist(), ["0-3"] * n,
                   [""] * n, [now] * n, strict=True)
        repo.bulk_insert(m.Judgment, ["grader_id", "query_id", "document_id", "grade", "scale", "batch",
                                      "created_at"], rows, session=session)
    engine.dispose()
    return time.perf_counter() - start


def peak_mib() -> float:
    """This process's peak resident memory in MiB: ``VmHWM`` from /proc (Linux), else ``ru_maxrss``.

    ``VmHWM`` belongs to the process's own address space; ``ru_maxrss`` of a child started from a big
    parent starts at the parent's size (Linux carries it over exec), which would hide the use case's own
    growth.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def measure(url: str, target: str) -> dict[str, float]:
    """Run one use case (in this process) and return seconds and the resident memory it added."""
    import numpy  # noqa: F401  - imports are part of the baseline, not of the use case
    import pandas  # noqa: F401

    from ndcg_labeling.db.session import make_engine, session_scope
    from ndcg_labeling.labels.agreement import agreement_report
    from ndcg_labeling.labels.consensus import export_qrels, run_consensus

    engine = make_engine(url)
    with engine.connect():
        pass
    base = peak_mib()
    start = time.perf_counter()
    with session_scope(engine) as session:
        if target == "agreement":
            agreement_report(session=session)
        elif target == "agreement-by-grader":
            agreement_report(session=session, by="grader")
        elif target == "consensus-median":
            run_consensus(session=session, method="median")
        elif target == "export-qrels":
            export_qrels(session=session)
        else:
            raise SystemExit(f"unknown target {target!r}")
    seconds = time.perf_counter() - start
    peak = peak_mib()
    engine.dispose()
    return {"seconds": seconds, "mib": peak - base, "process_mib": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grades", type=int, default=1_000_000, help="number of grades (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per use case, each in a fresh process; the best and the median are shown (default 3)")
    parser.add_argument("--measure", choices=TARGETS, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.db, args.measure)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        n_items = max(args.grades // GRADES_PER_ITEM, 1)
        print(f"building {n_items * GRADES_PER_ITEM:,} grades ({n_items:,} items x {GRADES_PER_ITEM}, "
              f"{N_GRADERS:,} graders) in SQLite ...", flush=True)
        built = build(url, args.grades)
        print(f"built in {built:.1f} s ({(Path(tmp) / 'bench.db').stat().st_size / 2**20:.0f} MiB file)\n")
        print(f"{'use case':<22} {'best s':>7} {'median s':>8} {'added MiB':>9} {'process MiB':>11}  target")
        failed = False
        for target in TARGETS:  # consensus runs before export, which reads its labels
            runs = []
            for _ in range(max(args.repeat, 1)):
                out = subprocess.run([sys.executable, __file__, "--measure", target, "--db", url],
                                     check=True, capture_output=True, text=True).stdout
                runs.append(json.loads(out.strip().splitlines()[-1]))
            best = min(r["seconds"] for r in runs)
            median = statistics.median(r["seconds"] for r in runs)
            added = max(r["mib"] for r in runs)
            process = max(r["process_mib"] for r in runs)
            if target in REQUIRED:
                good = best < TARGET_SECONDS and added < TARGET_MIB
                failed |= not good
                verdict = f"< {TARGET_SECONDS:.0f} s, < 1 GiB: {'ok' if good else 'MISSED'}"
            else:
                verdict = "(extra)"
            print(f"{target:<22} {best:>7.2f} {median:>8.2f} {added:>9.0f} {process:>11.0f}  {verdict}", flush=True)
        print(f"\n{args.repeat} runs per use case; machine load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} CPUs at the end")
        if failed:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
