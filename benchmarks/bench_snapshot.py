"""``snapshot take`` of 1,000 queries against a local Elasticsearch-shaped engine answering in 50 ms.

    python benchmarks/bench_snapshot.py [--queries 1000] [--concurrency 8] [--delay 0.05] [--depth 10] [--db URL]

Goal (issue 49): 1,000 queries at concurrency 8 in <= 10 s, as the command a user types (a separate
process, start-up and the all-or-nothing store included). Printed beside it: the floor the engine's delay
sets (queries x delay / concurrency) and the CPU time the command used (what it costs on an idle host). The engine is the test suite's fake (tests/snapshots/fake_engines.py)
on 127.0.0.1, answering ``depth`` hits per query in the real ``hits.hits[]`` shape.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "snapshots"))
from _machine import child_env, cpu_name  # noqa: E402
from fake_engines import TEMPLATES, FakeEngine, serving  # noqa: E402


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ndcg_labeling", *args], check=True, capture_output=True, text=True,
                          env=child_env(), cwd=ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the engine takes per answer")
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--db", default=None, help="database URL (default: a SQLite file in a temporary folder)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, {cpu_name()}; load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url = args.db or f"sqlite:///{folder / 'bench.db'}"
        queries = folder / "q.csv"
        queries.write_text("query_id,text,query_type\n" + "".join(f"q{i:05d},question number {i},web\n"
                                                                   for i in range(args.queries)))
        (folder / "t.json").write_text(TEMPLATES["elasticsearch"])
        cli("db", "upgrade", "--db", url)
        cli("import", "queries", str(queries), "--db", url)
        hits = [(f"d{j:04d}", float(100 - j)) for j in range(args.depth)]
        with serving(FakeEngine("elasticsearch", search=lambda q, k: hits[:k], delay=args.delay)) as engine:
            cli("snapshot", "config", "add", "bench", "--kind", "elasticsearch", "--url", engine.url, "--index", "docs",
                "--template", str(folder / "t.json"), "--concurrency", str(args.concurrency), "--db", url)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = cli("snapshot", "take", "bench", "--depth", str(args.depth), "--format", "json", "--db", url)
            took = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        summary = json.loads(done.stdout)
        floor = args.queries * args.delay / args.concurrency
        print(f"{summary['queries']} queries, {summary['hits']} results stored, concurrency {args.concurrency}, engine "
              f"answers in {args.delay * 1e3:.0f} ms; database {url.split(':', 1)[0]}; {len(engine.requests)} requests")
        print(f"{'':40}{'seconds':>9}{'queries/s':>11}  goal")
        print(f"{'snapshot take (command, start-up incl.)':40}{took:9.2f}{args.queries / took:11.1f}  <= 10 s")
        print(f"{'floor: queries x delay / concurrency':40}{floor:9.2f}{args.queries / floor:11.1f}")
        print(f"{'CPU the command used (user + system)':40}{cpu:9.2f}  (on a busy host the wall time is mostly "
              f"waiting for a core; load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
