"""Report speed: 5,000 queries x 100 ranked documents x 3 systems (1.5 M ranking rows) and 150,000
consensus labels, scored by ``ndcg-labeling report --format csv`` (a subprocess: start-up, loading,
scoring, bootstrap and paired tests, CSV; its peak resident memory too), beside pytrec_eval scoring the same runs from memory
(``ndcg_cut`` only, no database, no intervals). Prints a table.

    .venv/bin/python benchmarks/bench_report.py [--queries 5000] [--pg URL]

The database is built with :func:`ndcg_labeling.db.repository.bulk_insert`. With ``--pg`` (or
NDCG_LABELING_TEST_PG_URL) the report also runs on PostgreSQL, in a schema of its own.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import timed  # noqa: E402

from ndcg_labeling.db import migrate
from ndcg_labeling.db import models as m
from ndcg_labeling.db.repository import bulk_insert, db_datetime
from ndcg_labeling.db.session import make_engine, session_scope

SYSTEMS = ("bm25", "dense", "hybrid")
LIST_LENGTH = 100
LABELS_PER_QUERY = 30


def make_data(n_queries: int, seed: int = 7) -> dict:
    """Per query a pool of 150 documents; each system ranks 100 of them; 30 are labelled (0-3)."""
    rng = np.random.default_rng(seed)
    pool = 150
    lists = {s: np.stack([rng.permutation(pool)[:LIST_LENGTH] for _ in range(n_queries)]) for s in SYSTEMS}
    labelled = np.stack([rng.permutation(pool)[:LABELS_PER_QUERY] for _ in range(n_queries)])
    grades = rng.integers(0, 4, size=labelled.shape)
    return {"n_queries": n_queries, "pool": pool, "lists": lists, "labelled": labelled, "grades": grades}


def build(url: str, data: dict) -> None:
    engine = make_engine(url)
    migrate.upgrade(engine)
    nq, pool = data["n_queries"], data["pool"]
    with session_scope(engine) as session:
        types = ("navigational", "informational", "transactional", "long-tail")
        bulk_insert(m.Query, ["id", "external_id", "query_type"],
                    ((q + 1, f"q{q}", types[q % 4]) for q in range(nq)), session=session)
        bulk_insert(m.Document, ["id", "external_id"],
                    ((q * pool + d + 1, f"q{q}-d{d}") for q in range(nq) for d in range(pool)), session=session)
        bulk_insert(m.System, ["id", "name"], ((i + 1, s) for i, s in enumerate(SYSTEMS)), session=session)
        for i, s in enumerate(SYSTEMS):
            lists = data["lists"][s]
            q = np.repeat(np.arange(nq), LIST_LENGTH)
            d = lists.ravel()
            rank = np.tile(np.arange(1, LIST_LENGTH + 1), nq)
            rows = zip([i + 1] * len(q), (q + 1).tolist(), (q * pool + d + 1).tolist(), rank.tolist(),
                       (1000.0 - rank).tolist(), strict=True)
            bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank", "score"], rows,
                        session=session)
        q = np.repeat(np.arange(nq), LABELS_PER_QUERY)
        d = data["labelled"].ravel()
        now = db_datetime(session, m.utcnow())
        rows = zip((q + 1).tolist(), (q * pool + d + 1).tolist(), data["grades"].ravel().astype(float).tolist(),
                   ["median"] * len(q), ["0-3"] * len(q), [""] * len(q), [3] * len(q), [False] * len(q), [now] * len(q),
                   strict=True)
        bulk_insert(m.ConsensusLabel, ["query_id", "document_id", "value", "method", "scale", "batch", "n_graders",
                                       "needs_adjudication", "created_at"], rows, session=session)
    engine.dispose()


def time_report(url: str) -> tuple[float, int, float]:
    """Wall seconds, CSV rows and peak resident MB of ``ndcg-labeling report --format csv`` as a
    fresh process."""
    exe = Path(sys.executable).with_name("ndcg-labeling")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.csv"
        wall, mb, rc = timed([str(exe), "report", "--format", "csv", "--db", url], out)
        if rc != 0:
            raise SystemExit(f"ndcg-labeling report failed (exit {rc}) on {url}")
        return wall, out.read_text().count("\n") - 1, mb


def best_report(url: str, repeat: int) -> tuple[float, int, float]:
    """One warm-up run (it writes the bytecode cache, as an installed package has it), then the
    fastest of ``repeat`` runs."""
    time_report(url)
    return min((time_report(url) for _ in range(max(repeat, 1))), key=lambda r: r[0])


def time_pytrec_eval(data: dict) -> float:
    import pytrec_eval

    nq, pool = data["n_queries"], data["pool"]
    qrels = {f"q{q}": {f"q{q}-d{d}": int(g) for d, g in zip(data["labelled"][q], data["grades"][q], strict=True)}
             for q in range(nq)}
    runs = {s: {f"q{q}": {f"q{q}-d{d}": float(LIST_LENGTH - r) for r, d in enumerate(data["lists"][s][q])}
                for q in range(nq)} for s in SYSTEMS}
    del pool
    start = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"})
    for s in SYSTEMS:
        evaluator.evaluate(runs[s])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--pg", default=os.environ.get("NDCG_LABELING_TEST_PG_URL"))
    parser.add_argument("--repeat", type=int, default=3,
                        help="report runs per backend after one warm-up (Python's bytecode cache); the best is shown")
    args = parser.parse_args()
    data = make_data(args.queries)
    n_rank = args.queries * LIST_LENGTH * len(SYSTEMS)
    n_labels = args.queries * LABELS_PER_QUERY
    print(f"machine: {os.cpu_count()} CPUs; load average before: {os.getloadavg()}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        t0 = time.perf_counter()
        build(url, data)
        build_s = time.perf_counter() - t0
        secs, rows, mb = best_report(url, args.repeat)
        results.append(("ndcg-labeling report --format csv", "SQLite", build_s, secs, rows, mb))
    if args.pg:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = make_engine(args.pg)
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        sep = "&" if "?" in args.pg else "?"
        url = f"{args.pg}{sep}options=-csearch_path%3D{schema}"
        try:
            t0 = time.perf_counter()
            build(url, data)
            build_s = time.perf_counter() - t0
            secs, rows, mb = best_report(url, args.repeat)
            results.append(("ndcg-labeling report --format csv", "PostgreSQL", build_s, secs, rows, mb))
        finally:
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    peer = time_pytrec_eval(data)
    print(f"{args.queries:,} queries x {LIST_LENGTH} ranked x {len(SYSTEMS)} systems = {n_rank:,} ranking rows; "
          f"{n_labels:,} consensus labels")
    print(f"{'what':<42} {'backend':<11} {'build s':>8} {'score s':>8} {'csv rows':>9} {'peak MB':>8}")
    for what, backend, build_s, secs, rows, mb in results:
        print(f"{what:<42} {backend:<11} {build_s:>8.2f} {secs:>8.2f} {rows:>9,} {mb:>8.0f}")
    print(f"{'pytrec_eval ndcg_cut (in memory, no CIs)':<42} {'-':<11} {'-':>8} {peer:>8.2f} {'-':>9} {'-':>8}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
