"""Events into ``serve`` on PostgreSQL: ingest throughput and POST-to-visible latency.

    .venv/bin/python benchmarks/bench_online.py                     # 200,000 events, batches of 2,000
    .venv/bin/python benchmarks/bench_online.py --events 50000 --batch 1000 --clients 2

A fresh schema in the PostgreSQL database of ``--pg-url`` (default: $NDCG_LABELING_TEST_PG_URL) gets
``--queries`` labelled queries (consensus of two graders) and an ingest key; ``serve`` starts as its own
process on a free port of 127.0.0.1. ``--clients`` threads post a simulated A/B log (3 arms, lists of
10) in batches of ``--batch`` rows (JSON lines); after each acknowledged post, a lead's
``GET /api/online/arms?window=all`` must show at least the events acknowledged so far: the time from
the start of the POST to that answer is the POST-to-visible latency. Afterwards: the events stored
(count and sum of positions and of clicks) and the live event count must equal what was sent (none lost,
none counted twice). The schema is dropped.

Printed: events/s (the goal is >= 20,000/s), p50 / p95 / max POST-to-visible (goal p95 <= 1 s), the
checks, and the machine with its load average (shared machines give noisy figures).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_name  # noqa: E402
from bench_serve import DEFAULT_PG, free_port, schema_url, start_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def build(url: str, n_queries: int, tmp: Path) -> tuple[str, str, np.ndarray]:
    """Labels, a lead token, an ingest key; returns (lead token, key, truth grades)."""
    import pandas as pd

    from ndcg_labeling.db import migrate
    from ndcg_labeling.db.session import make_engine, session_scope
    from ndcg_labeling.labels import importing
    from ndcg_labeling.labels.consensus import run_consensus
    from ndcg_labeling.workspace import auth
    from ndcg_labeling.workspace.ingest_keys import add_key

    engine = make_engine(url)
    migrate.upgrade(engine)
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 4, (n_queries, 20))
    qpath, jpath = tmp / "queries.csv", tmp / "judgments.csv"
    pd.DataFrame({"query_id": [f"q{q}" for q in range(n_queries)], "text": "t",
                  "query_type": [("head", "tail")[q % 2] for q in range(n_queries)]}).to_csv(qpath, index=False)
    pd.DataFrame([{"query_id": f"q{q}", "doc_id": f"q{q}d{d}", "grader": g, "grade": int(truth[q, d])}
                  for q in range(n_queries) for d in range(20) for g in ("ann", "bob")]).to_csv(jpath, index=False)
    with session_scope(engine) as session:
        importing.import_queries(qpath, session=session)
        importing.add_graders(["ann", "bob"], session=session)
        importing.import_judgments(jpath, scale="0-3", session=session)
        run_consensus(session=session, method="median")
        importing.add_graders(["lee"], session=session, role="lead")
        lead = auth.issue_token("lee", session=session).token
        key = add_key("bench", "ingest", session=session).key
    engine.dispose()
    return lead, key, truth


def batches(n_events: int, batch: int, n_queries: int, seed: int = 2) -> list[tuple[bytes, int, int, int]]:
    """(body, rows, sum of positions, sum of clicks) per batch; a request's 10 rows in one batch."""
    rng = np.random.default_rng(seed)
    out, lines, pos_sum, clk_sum, t0 = [], [], 0, 0, 1_700_000_000.0
    for r in range(n_events // 10):
        q = int(rng.integers(n_queries))
        arm = ("control", "better", "same")[r % 3]
        docs = rng.permutation(20)[:10]
        for p, d in enumerate(docs, start=1):
            c = int(rng.random() < 0.3 / p)
            lines.append(json.dumps({"request_id": f"r{r}", "query_id": f"q{q}", "doc_id": f"q{q}d{d}", "position": p,
                                     "clicked": c, "ts": t0 + r * 0.01, "arm": arm, "converted": 0, "user_id": f"u{r % 997}"}))
            pos_sum, clk_sum = pos_sum + p, clk_sum + c
        if len(lines) >= batch:
            out.append(("\n".join(lines).encode(), len(lines), pos_sum, clk_sum))
            lines, pos_sum, clk_sum = [], 0, 0
    if lines:
        out.append(("\n".join(lines).encode(), len(lines), pos_sum, clk_sum))
    return out


def run(args: argparse.Namespace, base: str, lead: str, key: str, work: list[tuple[bytes, int, int, int]]) -> dict:
    import httpx

    acked = [0]
    lock = threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    queue = list(work)

    def client() -> None:
        with httpx.Client(base_url=base, timeout=60) as http:
            while True:
                with lock:
                    if not queue:
                        return
                    body, n, _, _ = queue.pop(0)
                start = time.perf_counter()
                res = http.post("/api/events", content=body, headers={"Authorization": f"Bearer {key}"})
                if res.status_code != 200:
                    errors.append(res.text)
                    return
                with lock:
                    acked[0] += n
                    need = acked[0]
                while True:
                    live = http.get("/api/online/arms?window=all", headers={"Authorization": f"Bearer {lead}"}).json()
                    if live["n_events"] >= need:
                        break
                latencies.append(time.perf_counter() - start)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"wall": wall, "acked": acked[0], "latencies": latencies, "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg-url", default=os.environ.get("NDCG_LABELING_TEST_PG_URL", DEFAULT_PG))
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=2_000)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    import httpx  # noqa: F401
    from sqlalchemy import text

    from ndcg_labeling.db.session import make_engine

    schema = f"bench_online_{uuid.uuid4().hex[:8]}"
    admin = make_engine(args.pg_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = schema_url(args.pg_url, schema)
    proc = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            lead, key, _ = build(url, args.queries, Path(tmp))
            work = batches(args.events, args.batch, args.queries)
            port = free_port()
            proc = start_server(url, port, Path(tmp) / "serve.log")
            result = run(args, f"http://127.0.0.1:{port}", lead, key, work)
            import httpx as hx

            live = hx.get(f"http://127.0.0.1:{port}/api/online/arms?window=all",
                          headers={"Authorization": f"Bearer {lead}"}, timeout=60).json()
        engine = make_engine(url)
        with engine.connect() as conn:
            n, pos, clk = conn.execute(text("SELECT count(*), coalesce(sum(position), 0), coalesce(sum(clicked), 0) "
                                            "FROM online_events")).one()
        engine.dispose()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()
    sent = sum(w[1] for w in work)
    lat = np.asarray(result["latencies"]) * 1000
    print(f"machine: {cpu_name()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} "
          "(shared: other sessions run on it)")
    print(f"events posted: {sent} in {len(work)} batches of {args.batch} by {args.clients} clients")
    print(f"throughput: {result['acked'] / result['wall']:,.0f} events/s acknowledged and visible "
          f"({result['wall']:.2f} s; goal >= 20,000/s)")
    if lat.size:
        print(f"POST-to-visible: p50 {np.percentile(lat, 50):.0f} ms, p95 {np.percentile(lat, 95):.0f} ms, "
              f"max {lat.max():.0f} ms (goal p95 <= 1000 ms)")
    checks = {"stored count": (int(n), sent), "sum of positions": (int(pos), sum(w[2] for w in work)),
              "sum of clicks": (int(clk), sum(w[3] for w in work)), "live event count": (live["n_events"], sent)}
    for name, (got, want) in checks.items():
        print(f"{name}: {got} (sent {want}) {'ok' if got == want else 'MISMATCH'}")
    if result["errors"]:
        print(f"errors: {result['errors'][:3]}")


if __name__ == "__main__":
    main()
