"""Import speed: 1,000,000 judgments and 1,000,000 ranking rows through the importer, beside a plain
``sqlite3.executemany`` of the same rows into the same schema, in one run. Prints a table.

    .venv/bin/python benchmarks/bench_import.py [--rows 1000000] [--pg URL]

The importer's time is the whole use case: reading the CSV with pandas, validating every row,
mapping ids (creating the queries and documents), and the bulk insert, in one transaction.
The baseline inserts already-mapped integer tuples with one executemany: the floor for SQLite.
With ``--pg`` (or NDCG_LABELING_TEST_PG_URL) the importer also runs on PostgreSQL (COPY).
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import text

from ndcg_labeling.db import migrate
from ndcg_labeling.db.session import make_engine, session_scope
from ndcg_labeling.pipeline.importing import add_graders, import_judgments, import_run


def make_files(folder: Path, n: int, seed: int = 7) -> tuple[Path, Path, list[str]]:
    rng = np.random.default_rng(seed)
    n_graders = 1_000
    per_item = 5
    n_items = n // per_item
    n_queries = max(1, n_items // 40)
    item = np.repeat(np.arange(n_items), per_item)
    query = item % n_queries
    doc = item
    grader = (item * 7 + np.tile(np.arange(per_item), n_items) * 131) % n_graders
    graders = [f"g{i:04d}" for i in range(n_graders)]
    judg = pd.DataFrame({"query_id": [f"q{q}" for q in query], "doc_id": [f"d{d}" for d in doc],
                         "grader": np.array(graders, dtype=object)[grader], "grade": rng.integers(0, 4, len(item))})
    jpath = folder / "judgments.csv"
    judg.to_csv(jpath, index=False)
    # the run: n rows, 100 per query
    per_query = 100
    rq = np.repeat(np.arange(n // per_query), per_query)
    rank = np.tile(np.arange(1, per_query + 1), n // per_query)
    run = pd.DataFrame({"query_id": [f"q{q}" for q in rq], "Q0": "Q0", "doc_id": [f"r{q}_{r}" for q, r in zip(rq, rank, strict=True)],
                        "rank": rank, "score": (1000.0 - rank), "tag": "bench"})
    rpath = folder / "run.txt"
    run.to_csv(rpath, sep=" ", header=False, index=False)
    return jpath, rpath, graders


def plain_executemany(db_path: Path, jpath: Path) -> float:
    """Insert the judgments as integer tuples with one executemany into the migrated schema."""
    engine = make_engine(f"sqlite:///{db_path}")
    migrate.upgrade(engine)
    engine.dispose()
    frame = pd.read_csv(jpath, dtype=str)
    graders = {g: i + 1 for i, g in enumerate(sorted(frame["grader"].unique()))}
    queries = {q: i + 1 for i, q in enumerate(frame["query_id"].unique())}
    docs = {d: i + 1 for i, d in enumerate(frame["doc_id"].unique())}
    con = sqlite3.connect(db_path)
    con.executemany("INSERT INTO graders (id, name, active) VALUES (?, ?, 1)", [(i, g) for g, i in graders.items()])
    con.executemany("INSERT INTO queries (id, external_id) VALUES (?, ?)", [(i, q) for q, i in queries.items()])
    con.executemany("INSERT INTO documents (id, external_id) VALUES (?, ?)", [(i, d) for d, i in docs.items()])
    con.commit()
    rows = list(zip(frame["grader"].map(graders).tolist(), frame["query_id"].map(queries).tolist(),
                    frame["doc_id"].map(docs).tolist(), frame["grade"].astype(int).tolist(),
                    ["0-3"] * len(frame), [""] * len(frame), ["judgments.csv"] * len(frame),
                    ["2026-12-02 00:00:00.000000"] * len(frame), strict=True))
    start = time.perf_counter()
    con.executemany("INSERT INTO judgments (grader_id, query_id, document_id, grade, scale, batch, source_file, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.commit()
    elapsed = time.perf_counter() - start
    con.close()
    return elapsed


def ours(url: str, jpath: Path, rpath: Path, graders: list[str]) -> tuple[float, float]:
    engine = make_engine(url)
    migrate.upgrade(engine)
    with session_scope(engine) as session:
        add_graders(graders, session=session)
    start = time.perf_counter()
    with session_scope(engine) as session:
        import_judgments(jpath, scale="0-3", session=session)
    t_judg = time.perf_counter() - start
    start = time.perf_counter()
    with session_scope(engine) as session:
        import_run(rpath, system="bench", session=session)
    t_run = time.perf_counter() - start
    engine.dispose()
    return t_judg, t_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pg", default=os.environ.get("NDCG_LABELING_TEST_PG_URL"))
    args = parser.parse_args()
    n = args.rows
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        jpath, rpath, graders = make_files(folder, n)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t_plain = plain_executemany(folder / "plain.db", jpath)
        t_judg, t_run = ours(f"sqlite:///{folder / 'ours.db'}", jpath, rpath, graders)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows = [("SQLite", "plain sqlite3.executemany (judgments, ids pre-mapped)", t_plain),
                ("SQLite", "ndcg-labeling import judgments (read+validate+map+insert)", t_judg),
                ("SQLite", "ndcg-labeling import run (TREC, read+sort+map+insert)", t_run)]
        if args.pg:
            from sqlalchemy import create_engine

            schema = f"bench_{uuid.uuid4().hex[:8]}"
            admin = create_engine(args.pg)
            with admin.begin() as conn:
                conn.execute(text(f"CREATE SCHEMA {schema}"))
            try:
                sep = "&" if "?" in args.pg else "?"
                pg_j, pg_r = ours(f"{args.pg}{sep}options=-csearch_path%3D{schema}", jpath, rpath, graders)
                rows += [("PostgreSQL", "ndcg-labeling import judgments (COPY)", pg_j),
                         ("PostgreSQL", "ndcg-labeling import run (COPY)", pg_r)]
            finally:
                with admin.begin() as conn:
                    conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    print(f"\nImport of {n:,} rows each; peak RSS of this process {peak_mb:,.0f} MB (start {rss0 / 1024:,.0f} MB)")
    print(f"{'backend':<11} {'what':<60} {'seconds':>8} {'rows/s':>12} {'vs plain':>9}")
    for backend, what, secs in rows:
        print(f"{backend:<11} {what:<60} {secs:8.2f} {n / secs:12,.0f} {secs / t_plain:8.2f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
