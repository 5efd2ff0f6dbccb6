"""``judge run`` against a local OpenAI-compatible server that answers every request in 200 ms.

    .venv/bin/python benchmarks/bench_judge.py [--items 1000] [--concurrency 8] [--delay 0.2] [--db URL]

Goals (issue 28): 1,000 items at concurrency 8 in <= 30 s, and the rerun (every answer cached: no
request sent) in <= 2 s, both as the command a user types (a separate process, start-up included).
Printed beside them: the floor the server's delay sets (items x delay / concurrency) and the bare
client (:func:`ndcg_labeling.judges.runner.run_jobs` with the same requests and nothing stored), so
what the database adds shows. The server is the test suite's fake (tests/judges/fake_llm_server.py),
on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "judges"))
from _machine import child_env, cpu_name  # noqa: E402
from fake_llm_server import FakeLLM, serving  # noqa: E402

from ndcg_labeling.db import migrate  # noqa: E402
from ndcg_labeling.db.session import make_engine, session_scope  # noqa: E402
from ndcg_labeling.labels import importing  # noqa: E402
from ndcg_labeling.labels import tasks as t  # noqa: E402


def build(url: str, folder: Path, items: int) -> dict[tuple[str, str], int]:
    """``items`` (query, document) pairs: 50 queries x items/50 documents, one system, one batch."""
    docs = max(1, items // 50)
    qtext = [f"question number {i}" for i in range(50)]
    pd.DataFrame({"query_id": [f"q{i:03d}" for i in range(50)], "text": qtext, "query_type": "web"}).to_csv(folder / "q.csv", index=False)
    pd.DataFrame({"doc_id": [f"d{i:04d}" for i in range(docs)], "title": [f"Page {i}" for i in range(docs)],
                  "body": [f"Text of page {i}. " * 40 for i in range(docs)]}).to_csv(folder / "d.csv", index=False)
    rng = np.random.default_rng(1)
    pd.DataFrame([{"query_id": f"q{q:03d}", "doc_id": f"d{d:04d}", "rank": r}
                  for q in range(50) for r, d in enumerate(rng.permutation(docs), start=1)]).to_csv(folder / "r.csv",
                                                                                              index=False)
    engine = make_engine(url)
    migrate.upgrade(engine)
    with session_scope(engine) as session:
        importing.import_queries(folder / "q.csv", session=session)
        importing.import_documents(folder / "d.csv", session=session)
        importing.add_graders(["ann"], session=session)
        importing.import_run(folder / "r.csv", system="sys", session=session)
        t.create_batch("bench", scale="0-3", depth=docs, overlap=1, graders=["ann"], session=session, seed=3)
    engine.dispose()
    return {(q, f"Page {d}"): (int(q.split()[-1]) * 7 + d) % 4 for q in qtext for d in range(docs)}


def timed_cli(url: str, base_url: str, concurrency: int) -> float:
    cmd = [str(ROOT / ".venv" / "bin" / "ndcg-labeling"), "judge", "run", "--batch", "bench", "--grader", "judge",
           "--model", "bench-model", "--base-url", base_url, "--concurrency", str(concurrency), "--db", url,
           "--format", "json"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env={**child_env(), "NDCG_LABELING_PROGRESS": "plain"}, capture_output=True)
    return time.perf_counter() - start


def bare_client(base_url: str, fake: FakeLLM, n: int, concurrency: int) -> float:
    from ndcg_labeling.judges.client import Endpoint
    from ndcg_labeling.judges.runner import Job, run_jobs

    pairs = list(fake.truth)[:n]
    jobs = [Job(str(i), {"model": "m", "messages": [{"role": "user", "content": f"<query>\n{q}\n</query>\nTitle: {d}\n"}]},
                None) for i, (q, d) in enumerate(pairs)]
    start = time.perf_counter()
    run_jobs(jobs, Endpoint(base_url), (0, 1, 2, 3), lambda o: None, concurrency=concurrency)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the server takes per answer")
    parser.add_argument("--db", default=None, help="database URL (default: a SQLite file in a temporary folder)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, {cpu_name()}; load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url = args.db or f"sqlite:///{folder / 'bench.db'}"
        truth = build(url, folder, args.items)
        with serving(FakeLLM(truth=truth, delay=args.delay)) as fake:
            first = timed_cli(url, fake.url, args.concurrency)
            sent = len(fake.requests)
            rerun = timed_cli(url, fake.url, args.concurrency)
            resent = len(fake.requests) - sent
            bare = bare_client(fake.url, fake, len(truth), args.concurrency)
        n = len(truth)
        floor = n * args.delay / args.concurrency
        print(f"{n} items, concurrency {args.concurrency}, server answers in {args.delay * 1e3:.0f} ms; "
              f"database {url.split(':', 1)[0]}")
        print(f"{'':34}{'seconds':>9}{'items/s':>9}  goal")
        print(f"{'judge run (command, first run)':34}{first:9.2f}{n / first:9.1f}  <= 30 s  ({sent} requests)")
        print(f"{'judge run (command, rerun)':34}{rerun:9.2f}{'':>9}  <= 2 s   ({resent} requests)")
        print(f"{'bare client, nothing stored':34}{bare:9.2f}{n / bare:9.1f}")
        print(f"{'floor: items x delay / concurrency':34}{floor:9.2f}{n / floor if floor else float('inf'):9.1f}")


if __name__ == "__main__":
    main()
