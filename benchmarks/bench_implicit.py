"""Labels from behavior at scale: ``implicit derive``'s engine (DuckDB, out of core) and kernels (COEC, PBM)
over N impressions in Parquet, with peak RSS, beside pandas ``groupby`` on 10M rows (same result).

    .venv/bin/python benchmarks/bench_implicit.py                # 100M impressions (the issue's size)
    .venv/bin/python benchmarks/bench_implicit.py --rows 10000000 --models coec,pbm,dbn

The log is written first (Parquet files of 5M rows, integer ids: 20,000 queries x 10 documents =
200,000 pairs, PBM clicks, 30 days of timestamps) into ``--folder`` (default: a temporary folder).
Every measured run is a fresh process (``/usr/bin/time``-like: wall seconds and its own peak RSS):

* ours: ``DuckDBEngine().aggregate`` (validate every row, then aggregate the window with a 14-day
  half-life) and the model's fit, over all N rows: typed Parquet goes through the compiled scan
  (``engines/parquet_scan.py``); ``--sql-models`` also times DuckDB's SQL passes alone (what the scan
  replaces: the plain library way) for those models, in the same run;
* the whole command ``implicit derive`` (``--cli``): reading, the fit and storing the judgments and the
  graded pairs into a new SQLite file, as a user runs it;
* pandas: ``read_parquet`` of the first 10M rows, ``groupby([query, doc, position])``, COEC from it;
  ours over the same 10M rows, and the largest difference of the two COEC scores (must be ~1e-12).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import child_env, cpu_name  # noqa: E402

CHUNK = 5_000_000
N_QUERIES, N_DOCS = 20_000, 10
EXAMINATION = np.array([1.0, 0.85, 0.7, 0.58, 0.48, 0.4, 0.33, 0.28, 0.24, 0.2])


def write_log(folder: Path, rows: int, seed: int = 1, n_queries: int = N_QUERIES,
              string_ids: bool = False, single_file: bool = False) -> list[Path]:
    """``string_ids``: query and document ids as text (``q-0012345``, a 40-hex-digit document id drawn
    per pair, as a web collection's URL hashes), so the engine joins and groups strings as on real logs.
    ``single_file``: the same rows in one Parquet file (``single.parquet``, row groups of 1M rows)
    instead of files of 5M rows."""
    import hashlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    attractiveness = rng.choice([0.05, 0.25, 0.55, 0.85], size=n_queries * N_DOCS, p=[0.4, 0.25, 0.2, 0.15])
    qnames = dnames = None
    if string_ids:
        qnames = pa.array([f"q-{q:07d}" for q in range(n_queries)])
        dnames = pa.array([hashlib.sha1(f"doc {p} {seed}".encode()).hexdigest() for p in range(n_queries * N_DOCS)])
    files: list[Path] = []
    writer = None
    for start in range(0, rows, CHUNK):
        n_req = min(CHUNK, rows - start) // N_DOCS
        query = rng.integers(0, n_queries, n_req)
        doc = np.argsort(rng.random((n_req, N_DOCS)), axis=1)
        pair = query[:, None] * N_DOCS + doc
        clicked = (rng.random(pair.shape) < EXAMINATION) & (rng.random(pair.shape) < attractiveness[pair])
        ts = 1_760_000_000 + rng.integers(0, 30 * 86_400, n_req)
        path = folder / (f"part-{start // CHUNK:05d}.parquet" if not single_file else "single.parquet")
        qcol = np.repeat(query, N_DOCS)
        table = pa.table({
            "request_id": np.repeat(np.arange(start // N_DOCS, start // N_DOCS + n_req, dtype=np.int64), N_DOCS),
            "query_id": qnames.take(qcol) if qnames is not None else qcol,
            "doc_id": dnames.take(pair.ravel()) if dnames is not None else pair.ravel(),
            "position": np.tile(np.arange(1, N_DOCS + 1, dtype=np.int8), n_req),
            "clicked": clicked.ravel().astype(np.int8), "ts": np.repeat(ts, N_DOCS)})
        if single_file:
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=1 << 20)
            files[:] = [path]
        else:
            pq.write_table(table, path)
            files.append(path)
    if writer is not None:
        writer.close()
    return files


OURS = r"""
import json, resource, sys, time
from ndcg_labeling.engines import LogRequest
from ndcg_labeling.engines.duckdb import DuckDBEngine
from ndcg_labeling.behavior.click_models import coec, pbm
from ndcg_labeling.behavior.dbn import dbn
files, model, path = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
agg = DuckDBEngine(compiled_scan=True if path == "scan" else False).aggregate(LogRequest(sources=tuple(files), half_life_s=None if model == "coec-check" else 14 * 86400.0,
                                        sessions=model == "dbn"))
t1 = time.perf_counter()
fit = {"coec": coec, "coec-check": coec, "pbm": pbm}.get(model)
fit = fit(agg.cells) if fit else dbn(agg.sessions, agg.cells.n_pairs)
t2 = time.perf_counter()
out = {"aggregate_s": t1 - t0, "fit_s": t2 - t1, "rows": agg.n_impressions, "pairs": agg.cells.n_pairs,
       "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "iterations": fit.parameters.get("iterations")}
if model == "coec-check":
    out["scores"] = dict(zip([f"{q}/{d}" for q, d in zip(agg.query_ids, agg.doc_ids)], fit.score.tolist()))
print(json.dumps(out))
"""

CLI = r"""
import json, resource, sys, time
from ndcg_labeling.cli import app
t0 = time.perf_counter()
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"s": time.perf_counter() - t0, "code": code, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

PANDAS = r"""
import json, resource, sys, time
import numpy as np, pandas as pd
files = json.loads(sys.argv[1])
t0 = time.perf_counter()
df = pd.concat([pd.read_parquet(f, columns=["query_id", "doc_id", "position", "clicked"]) for f in files])
cells = df.groupby(["query_id", "doc_id", "position"], sort=False)["clicked"].agg(["size", "sum"]).reset_index()
ctr = cells.groupby("position")["sum"].sum() / cells.groupby("position")["size"].sum()
cells["expected"] = cells["size"] * cells["position"].map(ctr)
pairs = cells.groupby(["query_id", "doc_id"])[["sum", "expected"]].sum()
score = pairs["sum"] / pairs["expected"]
t1 = time.perf_counter()
print(json.dumps({"s": t1 - t0, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "scores": {f"{q}/{d}": float(v) for (q, d), v in score.items()}}))
"""


def run(code: str, *args: str) -> tuple[dict, float]:
    """The child's JSON line and wall seconds; its CPU seconds (user + system: what the load on a shared
    machine does not inflate) go into the dict as ``cpu_s``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=child_env(),
                          timeout=3600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    out = json.loads(done.stdout)
    out["cpu_s"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return out, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000_000, help="impressions in the Parquet log")
    ap.add_argument("--pandas-rows", type=int, default=10_000_000, help="rows of the pandas comparison")
    ap.add_argument("--models", default="coec,pbm", help="comma-separated: coec, pbm, dbn")
    ap.add_argument("--sql-models", default="coec", help="models also run through DuckDB's SQL alone ('' for none)")
    ap.add_argument("--cli", default="pbm", help="models also run as the whole command `implicit derive` into a "
                    "new SQLite file (reading, fit, storing the judgments) ('' for none)")
    ap.add_argument("--folder", type=Path, default=None, help="write (or reuse) the log here")
    ap.add_argument("--queries", type=int, default=N_QUERIES, help="distinct queries (x 10 documents = pairs)")
    ap.add_argument("--string-ids", action="store_true",
                    help="ids as text: q-NNNNNNN and a 40-hex-digit document id per pair (realistic joins)")
    ap.add_argument("--single-file", action="store_true",
                    help="the log as one Parquet file (row groups of 1M rows) instead of files of 5M rows")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-implicit-") as tmp:
        folder = args.folder or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        if args.single_file:
            import pyarrow.parquet as pq

            files = [f for f in [folder / "single.parquet"] if f.exists() and pq.read_metadata(f).num_rows == args.rows]
            if not files:
                files = write_log(folder, args.rows, n_queries=args.queries, string_ids=args.string_ids, single_file=True)
        else:
            files = sorted(folder.glob("part-*.parquet"))
            if sum(1 for _ in files) * CHUNK < args.rows:
                files = write_log(folder, args.rows, n_queries=args.queries, string_ids=args.string_ids)
            files = files[: -(-args.rows // CHUNK)]
        print(f"machine: {cpu_name()}, {__import__('os').cpu_count()} CPUs; log: {args.rows:,} impressions in "
              f"{len(files)} Parquet files ({sum(f.stat().st_size for f in files) / 1e6:.0f} MB), "
              f"written in {time.perf_counter() - t:.1f} s")
        print(f"load average at the start: {' '.join(f'{x:.1f}' for x in __import__('os').getloadavg())}")
        print(f"{'what':<44} {'rows':>12} {'wall s':>8} {'cpu s':>7} {'engine s':>9} {'fit s':>7} {'peak RSS MB':>12}")
        runs = [(m, "scan") for m in args.models.split(",")] + [(m, "sql") for m in args.sql_models.split(",") if m]
        for model, path in runs:
            res, wall = run(OURS, json.dumps([str(f) for f in files]), model, path)
            what = f"{'ours' if path == 'scan' else 'DuckDB SQL only'}: --model {model} (half-life 14d)"
            print(f"{what:<44} {res['rows']:>12,} "
                  f"{wall:>8.1f} {res['cpu_s']:>7.1f} {res['aggregate_s']:>9.1f} {res['fit_s']:>7.2f} {res['rss_mb']:>12.0f}")
        for model in [m for m in args.cli.split(",") if m]:
            db = f"sqlite:///{tmp}/cli-{model}.db"
            subprocess.run([sys.executable, "-m", "ndcg_labeling", "db", "upgrade", "--db", db], check=True,
                           capture_output=True, env=child_env())
            res, wall = run(CLI, "implicit", "derive", *map(str, files), "--model", model, "--grader", f"clicks-{model}",
                            "--half-life", "14d", "--db", db, "--format", "json", "-o", f"{tmp}/cli-{model}.json")
            if res["code"] not in (0, None):
                raise SystemExit(f"implicit derive failed: exit {res['code']}")
            what = f"ours: implicit derive --model {model}, SQLite"
            print(f"{what:<44} {args.rows:>12,} {wall:>8.1f} {res['cpu_s']:>7.1f} {'':>9} {'':>7} {res['rss_mb']:>12.0f}")
        if not args.pandas_rows:
            return
        small = [str(f) for f in files[: max(1, args.pandas_rows // CHUNK)]]
        ours, wall_o = run(OURS, json.dumps(small), "coec-check", "scan")
        theirs, wall_p = run(PANDAS, json.dumps(small))
        common = ours["scores"].keys() & theirs["scores"].keys()
        diff = max(abs(ours["scores"][k] - theirs["scores"][k]) for k in common)
        same = len(common) == len(ours["scores"]) == len(theirs["scores"])
        print(f"{'ours: COEC, no decay':<44} {ours['rows']:>12,} {wall_o:>8.1f} {ours['cpu_s']:>7.1f} {ours['aggregate_s']:>9.1f} "
              f"{ours['fit_s']:>7.2f} {ours['rss_mb']:>12.0f}")
        print(f"{'pandas: read_parquet + groupby, COEC':<44} {ours['rows']:>12,} {wall_p:>8.1f} {theirs['cpu_s']:>7.1f} "
              f"{theirs['s']:>9.1f} "
              f"{'':>7} {theirs['rss_mb']:>12.0f}")
        print(f"same result: {same and diff < 1e-9} ({len(common):,} pairs, largest COEC difference {diff:.1e})")


if __name__ == "__main__":
    main()
