"""The web workspace under load: 20 simulated graders against ``ndcg-labeling serve`` on PostgreSQL.

    .venv/bin/python benchmarks/bench_serve.py                       # 20 graders, 100 grades each, <= 60 s
    .venv/bin/python benchmarks/bench_serve.py --graders 20 --per-grader 50 --seconds 30

A fresh schema in the PostgreSQL database of ``--pg-url`` (default: $NDCG_LABELING_TEST_PG_URL) gets a
batch of ``--queries`` queries (two systems' top 10 pooled, overlap 2), one grader per simulated
grader; then ``serve`` starts as its own process on a free port of 127.0.0.1 (loopback only), and each
simulated grader loops ``GET /api/batches/B/next`` + ``POST .../items/ID/grade`` over one keep-alive
connection (Bearer token), bounded by ``--per-grader`` grades and ``--seconds``; ``--think-ms`` adds a
person's reading time after each grade (0, the default, measures the server saturated). Afterwards the
database is checked: every grade the server acknowledged is stored exactly once with its value, no
other grade is stored, and the assignments say done for exactly those items. The schema is dropped.

Printed: requests, throughput, and p50 / p95 / p99 latency per endpoint as the client saw them (the
goal is p95 <= 50 ms), with the machine and its load average (the figures are only as quiet as the
machine was).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
GOAL_P95_MS = 50.0


def grade_for(item_id: str) -> int:
    return int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % 4


def schema_url(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"


def build(url: str, n_queries: int, n_graders: int, tmp: Path) -> dict[str, str]:
    """Queries, documents, two runs, graders and batch ``load``; returns grader -> sign-in token."""
    import pandas as pd

    from ndcg_labeling.db import migrate
    from ndcg_labeling.db.session import make_engine, session_scope
    from ndcg_labeling.labels import importing, tasks
    from ndcg_labeling.workspace import auth

    engine = make_engine(url)
    migrate.upgrade(engine)
    docs = 30
    pd.DataFrame({"query_id": [f"q{i:05d}" for i in range(n_queries)], "text": [f"query {i}" for i in range(n_queries)],
                  "query_type": [("nav", "info", "tx")[i % 3] for i in range(n_queries)]}).to_csv(tmp / "q.csv", index=False)
    pd.DataFrame({"doc_id": [f"d{i:05d}" for i in range(docs * 4)], "title": [f"Title {i}" for i in range(docs * 4)],
                  "body": [f"Body text of document {i}. " * 20 for i in range(docs * 4)],
                  "url": [f"https://example.org/{i}" for i in range(docs * 4)]}).to_csv(tmp / "d.csv", index=False)
    graders = [f"grader{g:02d}" for g in range(n_graders)]
    tokens = {}
    with session_scope(engine) as session:
        importing.import_queries(tmp / "q.csv", session=session)
        importing.import_documents(tmp / "d.csv", session=session)
        importing.add_graders(graders, session=session)
        for system, seed in (("bm25", 1), ("dense", 2)):
            rng = np.random.default_rng(seed)
            rows = [{"query_id": f"q{q:05d}", "doc_id": f"d{d:05d}", "rank": r, "score": 10.0 - r / 10}
                    for q in range(n_queries) for r, d in enumerate(rng.choice(docs * 4, size=docs, replace=False), 1)]
            pd.DataFrame(rows).to_csv(tmp / f"{system}.csv", index=False)
            importing.import_run(tmp / f"{system}.csv", system=system, session=session)
        tasks.create_batch("load", scale="0-3", depth=10, overlap=min(2, n_graders), graders=graders, session=session, seed=1)
        for g in graders:
            tokens[g] = auth.issue_token(g, session=session, expires="1d").token
    engine.dispose()
    return tokens


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    import httpx

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", "from ndcg_labeling.web.app import create_app, run_server; "
                             f"run_server(create_app({url!r}), host='127.0.0.1', port={port}, access_log=False)"],
                            cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"serve exited: {log.read_text()[-2000:]}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/static/style.css", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("serve did not start within 60 s")


async def grader_loop(base: str, token: str, per_grader: int, until: float,
                      lat: dict[str, list[float]], acked: list[tuple[str, str, int]], grader: str,
                      errors: list[str], think: float) -> None:
    import random

    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        for _ in range(per_grader):
            if time.monotonic() >= until:
                return
            t0 = time.perf_counter()
            r = await client.get("/api/batches/load/next")
            lat["next"].append(time.perf_counter() - t0)
            if r.status_code == 204:
                return
            if r.status_code != 200:
                errors.append(f"next {r.status_code} {r.text[:200]}")
                return
            item = r.json()["item_id"]
            grade = grade_for(item)
            t0 = time.perf_counter()
            r = await client.post(f"/api/batches/load/items/{item}/grade", json={"grade": grade})
            lat["grade"].append(time.perf_counter() - t0)
            if r.status_code != 200:
                errors.append(f"grade {r.status_code} {r.text[:200]}")
                return
            acked.append((grader, item, grade))
            if think:  # a person reads the next item: 0.5x to 1.5x the mean reading time
                await asyncio.sleep(random.uniform(0.5, 1.5) * think)


def check(url: str, acked: list[tuple[str, str, int]]) -> tuple[int, int, int]:
    """(stored grades, acknowledged grades, problems): each acknowledged grade stored once, nothing else."""
    from sqlalchemy import func, select

    from ndcg_labeling.db import models as m
    from ndcg_labeling.db.session import make_engine

    engine = make_engine(url)
    with engine.connect() as conn:
        stored = [tuple(r) for r in conn.execute(
            select(m.Grader.name, m.BatchItem.item_key, m.Judgment.grade)
            .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
            .join(m.BatchItem, (m.BatchItem.query_id == m.Judgment.query_id)
                  & (m.BatchItem.document_id == m.Judgment.document_id))
            .where(m.Judgment.batch == "load"))]
        dupes = conn.execute(select(func.count()).select_from(
            select(m.Judgment.grader_id).group_by(m.Judgment.grader_id, m.Judgment.query_id, m.Judgment.document_id,
                                                  m.Judgment.batch).having(func.count() > 1).subquery())).scalar_one()
        done = conn.execute(select(func.count()).select_from(m.Assignment)
                            .where(m.Assignment.status == "done")).scalar_one()
    engine.dispose()
    problems = int(dupes) + len(set(acked) ^ set(stored)) + (len(stored) != len(set(stored))) + (done != len(stored))
    return len(stored), len(acked), problems


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000, q)) if values else float("nan")


def run(args: argparse.Namespace) -> int:
    from sqlalchemy import text

    from ndcg_labeling.db.session import make_engine

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    admin = make_engine(args.pg_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = schema_url(args.pg_url, schema)
    proc = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tokens = build(url, args.queries, args.graders, Path(tmp))
            port = free_port()
            proc = start_server(url, port, Path(tmp) / "serve.log")
            load_before = os.getloadavg()
            lat: dict[str, list[float]] = {"next": [], "grade": []}
            acked: list[tuple[str, str, int]] = []
            errors: list[str] = []

            async def everyone() -> None:
                until = time.monotonic() + args.seconds
                await asyncio.gather(*(grader_loop(f"http://127.0.0.1:{port}", tok, args.per_grader, until, lat,
                                                   acked, g, errors, args.think_ms / 1000)
                                       for g, tok in tokens.items()))

            start = time.perf_counter()
            asyncio.run(everyone())
            wall = time.perf_counter() - start
            load_after = os.getloadavg()
        stored, n_acked, problems = check(url, acked)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()

    requests = len(lat["next"]) + len(lat["grade"])
    every = lat["next"] + lat["grade"]
    print(f"# bench_serve: {args.graders} graders, <= {args.per_grader} grades each, <= {args.seconds} s, "
          f"think time {args.think_ms:.0f} ms, PostgreSQL, loopback; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"# machine: {cpu_name()}, {os.cpu_count()} logical CPUs; load average before "
          f"{load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    print(f"{requests} requests in {wall:.1f} s: {requests / wall:.0f} requests/s, {n_acked / wall:.0f} grades/s")
    print("| endpoint | requests | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|---|")
    for name, values in (("GET next", lat["next"]), ("POST grade", lat["grade"]), ("all", every)):
        print(f"| {name} | {len(values)} | {pct(values, 50):.1f} | {pct(values, 95):.1f} | {pct(values, 99):.1f} |")
    p95 = pct(every, 95)
    print(f"p95 {p95:.1f} ms: {'meets' if p95 <= GOAL_P95_MS else 'misses'} the goal of {GOAL_P95_MS:.0f} ms")
    print(f"grades acknowledged {n_acked}, stored {stored}; lost or duplicated: {problems}; errors: {len(errors)}")
    for e in errors[:5]:
        print(f"  error: {e}")
    return 0 if problems == 0 and not errors else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graders", type=int, default=20)
    parser.add_argument("--per-grader", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--think-ms", type=float, default=0.0,
                        help="mean pause after each grade (0: back to back, the server's saturation)")
    parser.add_argument("--pg-url", default=os.environ.get("NDCG_LABELING_TEST_PG_URL") or DEFAULT_PG)
    return run(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
