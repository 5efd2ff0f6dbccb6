"""Spark against the embedded path: ``eval`` on a large run and ``implicit derive``'s aggregation on an
impression log, both times and peak memory, side by side, and an estimate for a 10-node cluster.

The script starts a standalone Spark cluster on this machine (one master, two workers of one core each,
bound to 127.0.0.1), runs the same jobs on it and on the embedded path (``eval``: this process's NumPy /
numba path; logs: the DuckDB engine), checks that both give the same numbers, and stops the cluster.
Peak memory is the largest summed resident set of the job's process tree (for Spark: driver JVM,
master, workers and executors together), sampled from /proc every 0.2 s.

    python benchmarks/bench_spark.py                      # 10M run lines, 100M impressions (long)
    python benchmarks/bench_spark.py --lines 1000000 --rows 2000000   # a reduced size

The 1B-line estimate uses the measured throughput per Spark task (lines per second per core, the
scoring stage alone) and assumes the same per-core speed on 10 nodes of ``--node-cores`` cores, plus the
measured fixed cost (start-up, the driver's collect). One 2-core machine cannot show Spark's benefit:
it pays a JVM, serialization to Python workers and a shuffle that the embedded path does not.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- peak memory of a process tree ----------------------------------------------------------------
def _tree(roots: list[int]) -> list[int]:
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    parent[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    out, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.add(pid)
        todo += [c for c, p in parent.items() if p == pid]
    return list(out)


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakMemory:
    """The peak summed RSS of the process trees under ``roots`` while the block runs."""

    def __init__(self, roots: list[int]) -> None:
        self.roots, self.peak, self._stop = roots, 0, threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(_rss(p) for p in _tree(self.roots)))
            self._stop.wait(0.2)

    def __enter__(self) -> PeakMemory:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# --- data -------------------------------------------------------------------------------------------
def make_trec(folder: Path, lines: int, per_query: int = 1000, judged: int = 100) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    n_q = max(lines // per_query, 1)
    run, qrels = folder / "run.txt", folder / "qrels.txt"
    with open(run, "w") as fr, open(qrels, "w") as fq:
        for start in range(0, n_q, 200):
            qs = np.arange(start, min(start + 200, n_q))
            q = np.repeat(qs, per_query)
            d = np.tile(np.arange(per_query), len(qs))
            s = rng.random(q.size)
            fr.write("".join(f"q{a} Q0 d{b} 0 {c:.6f} bench\n" for a, b, c in zip(q, d, s, strict=True)))
            qj = np.repeat(qs, judged)
            dj = rng.integers(0, per_query * 2, qj.size)
            keep = ~pd.DataFrame({"q": qj, "d": dj}).duplicated().to_numpy()
            g = rng.choice([0, 0, 1, 2, 3], qj.size)
            fq.write("".join(f"q{a} 0 d{b} {c}\n" for a, b, c in zip(qj[keep], dj[keep], g[keep], strict=True)))
    return qrels, run


def make_log(folder: Path, rows: int, n_queries: int = 2000, depth: int = 10) -> Path:
    rng = np.random.default_rng(1)
    out = folder / "log"
    out.mkdir()
    chunk = 2_000_000
    for i, start in enumerate(range(0, rows, chunk)):
        n = min(chunk, rows - start)
        req = (start + np.arange(n)) // depth
        q = rng.integers(0, n_queries, n)
        pos = (start + np.arange(n)) % depth + 1
        clicked = (rng.random(n) < 0.3 / pos).astype(np.int8)
        pd.DataFrame({"request_id": req.astype(str), "query_id": np.char.add("q", q.astype(str)),
                      "doc_id": np.char.add("d", rng.integers(0, 50, n).astype(str)), "position": pos,
                      "clicked": clicked, "ts": 1.7e9 + req.astype(np.float64)}).to_parquet(out / f"part-{i:04d}.parquet")
    return out


# --- the standalone cluster ----------------------------------------------------------------------------
class Cluster:
    """One master and two one-core workers on 127.0.0.1, started here and stopped here."""

    def __init__(self, worker_memory: str) -> None:
        import pyspark

        self.spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
        self.port, self.worker_memory, self.procs = free_port(), worker_memory, []
        self.url = f"spark://127.0.0.1:{self.port}"

    def _start(self, *args: str) -> None:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        log = open(tempfile.mktemp(prefix="bench-spark-", suffix=".log"), "w")  # noqa: SIM115
        self.procs.append(subprocess.Popen([self.spark_class, *args], env=env, stdout=log, stderr=log,
                                           start_new_session=True))

    def __enter__(self) -> Cluster:
        self._start("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                    "--webui-port", str(free_port()))
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        for _ in range(2):
            self._start("org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1", "--cores", "1",
                        "--memory", self.worker_memory, "--webui-port", str(free_port()))
        time.sleep(5)
        return self

    def __exit__(self, *exc: object) -> None:
        for p in reversed(self.procs):  # our own processes, by their group id (the JVM and its children)
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)


# --- the measured jobs ---------------------------------------------------------------------------------
def _timed(fn, roots: list[int]):  # noqa: ANN001, ANN202
    with PeakMemory(roots) as mem:
        t0 = time.perf_counter()
        value = fn()
        elapsed = time.perf_counter() - t0
    return value, elapsed, mem.peak


def bench(args: argparse.Namespace) -> dict[str, object]:
    from pyspark.sql import SparkSession

    from ndcg_labeling.engines import LogRequest, get_engine
    from ndcg_labeling.engines.spark import SparkEngine
    from ndcg_labeling.pipeline.evaluate import evaluate_files

    folder = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    t0 = time.perf_counter()
    qrels, run = make_trec(folder, args.lines)
    log = make_log(folder, args.rows)
    results: dict[str, object] = {"lines": args.lines, "rows": args.rows, "make_data_s": time.perf_counter() - t0}
    me = [os.getpid()]
    measures = ["ndcg_cut.10", "map", "P.10"]
    emb, t_emb, m_emb = _timed(lambda: evaluate_files(qrels, run, measures), me)
    agg_d, t_duck, m_duck = _timed(lambda: get_engine("duckdb").aggregate(LogRequest(sources=(str(log),))), me)
    results["embedded"] = {"eval_s": t_emb, "eval_peak_bytes": m_emb, "logs_s": t_duck, "logs_peak_bytes": m_duck}
    with Cluster(args.worker_memory) as cluster:
        t_start = time.perf_counter()
        os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this venv's
        spark = (SparkSession.builder.master(cluster.url).appName("bench-spark")
                 .config("spark.executor.memory", args.worker_memory).config("spark.driver.memory", "2g")
                 .config("spark.sql.shuffle.partitions", str(args.partitions)).config("spark.ui.enabled", "false")
                 .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        startup = time.perf_counter() - t_start
        roots = [os.getpid(), *[p.pid for p in cluster.procs]]
        got, t_sp, m_sp = _timed(lambda: evaluate_files(qrels, run, measures, engine="spark", spark=spark), roots)
        agg_s, t_sl, m_sl = _timed(lambda: SparkEngine(spark=spark).aggregate(LogRequest(sources=(str(log),))), roots)
        spark.stop()
    same_eval = got.query_ids == emb.query_ids and np.array_equal(got.table(), emb.table(), equal_nan=True)
    same_logs = (agg_s.query_ids, agg_s.doc_ids) == (agg_d.query_ids, agg_d.doc_ids) and \
        int(agg_s.cells.impressions.sum()) == int(agg_d.cells.impressions.sum())
    results["spark"] = {"startup_s": startup, "eval_s": t_sp, "eval_peak_bytes": m_sp, "logs_s": t_sl,
                        "logs_peak_bytes": m_sl, "same_eval": bool(same_eval), "same_logs": bool(same_logs)}
    cores = 2  # two workers of one core each
    per_core_eval = args.lines / (t_sp * cores)
    per_core_logs = args.rows / (t_sl * cores)
    cluster_cores = 10 * args.node_cores
    results["estimate_10_nodes_1B_lines"] = {
        "assumes": f"10 nodes x {args.node_cores} cores at this machine's measured per-core speed, fixed cost "
                   f"= the startup measured here",
        "eval_lines_per_core_s": per_core_eval, "logs_rows_per_core_s": per_core_logs,
        "eval_s": 1e9 / (per_core_eval * cluster_cores) + startup,
        "logs_s": 1e9 / (per_core_logs * cluster_cores) + startup,
        "embedded_eval_1B_s_linear": t_emb * 1e9 / args.lines, "embedded_logs_1B_s_linear": t_duck * 1e9 / args.rows}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=10_000_000, help="run lines (1,000 per query)")
    parser.add_argument("--rows", type=int, default=100_000_000, help="log impressions")
    parser.add_argument("--partitions", type=int, default=8, help="spark.sql.shuffle.partitions")
    parser.add_argument("--worker-memory", default="2g")
    parser.add_argument("--node-cores", type=int, default=16, help="cores per node of the estimated cluster")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    r = bench(args)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    emb, sp, est = r["embedded"], r["spark"], r["estimate_10_nodes_1B_lines"]
    assert isinstance(emb, dict) and isinstance(sp, dict) and isinstance(est, dict)
    mb = 1 / 2**20
    print(f"{args.lines:,} run lines, {args.rows:,} impressions; Spark: standalone, 1 master + 2 workers x 1 core")
    print(f"{'job':<28}{'embedded s':>12}{'peak MB':>10}{'spark s':>10}{'peak MB':>10}  same")
    print(f"{'eval ndcg_cut.10,map,P.10':<28}{emb['eval_s']:>12.1f}{emb['eval_peak_bytes'] * mb:>10.0f}"
          f"{sp['eval_s']:>10.1f}{sp['eval_peak_bytes'] * mb:>10.0f}  {sp['same_eval']}")
    print(f"{'logs aggregate (duckdb)':<28}{emb['logs_s']:>12.1f}{emb['logs_peak_bytes'] * mb:>10.0f}"
          f"{sp['logs_s']:>10.1f}{sp['logs_peak_bytes'] * mb:>10.0f}  {sp['same_logs']}")
    print(f"Spark session start-up: {sp['startup_s']:.1f} s")
    print(f"1B lines on 10 nodes x {args.node_cores} cores (estimate): eval {est['eval_s']:.0f} s "
          f"({est['eval_lines_per_core_s']:,.0f} lines/s/core), logs {est['logs_s']:.0f} s "
          f"({est['logs_rows_per_core_s']:,.0f} rows/s/core); embedded, linear: eval "
          f"{est['embedded_eval_1B_s_linear']:.0f} s, logs {est['embedded_logs_1B_s_linear']:.0f} s (if it fit)")


if __name__ == "__main__":
    main()
