"""Spark against the embedded path: ``eval`` on a large run, ``implicit derive``'s aggregation on an
impression log and ``online report`` on an A/B log (``--jobs``), both times and peak memory, side by
side, and an estimate for a 10-node cluster.

The script starts a standalone Spark cluster on this machine (one master, two workers of one core each,
bound to 127.0.0.1), runs the same jobs on it and on the embedded path (``eval``: this process's NumPy /
numba path; logs: the DuckDB engine), checks that both give the same numbers, and stops the cluster.
Peak memory is the largest summed resident set of the job's process tree (for Spark: driver JVM,
master, workers and executors together), sampled from /proc every 0.2 s.

    python benchmarks/bench_spark.py                      # 10M run lines, 100M impressions (long)
    python benchmarks/bench_spark.py --lines 1000000 --rows 2000000   # a reduced size
    python benchmarks/bench_spark.py --rows 5e6,2e7 --data /work/bench_spark --out r.json  # two log sizes
    python benchmarks/bench_spark.py --jobs online --online-rows 5000000   # online report only

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
    """A run of ``lines`` lines (``per_query`` per query) and its qrels, reused when already there."""
    rng = np.random.default_rng(0)
    n_q = max(lines // per_query, 1)
    run, qrels = folder / f"run-{lines}.txt", folder / f"qrels-{lines}.txt"
    if run.exists() and qrels.exists():
        return qrels, run
    with open(str(run) + ".tmp", "w") as fr, open(str(qrels) + ".tmp", "w") as fq:
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
    os.replace(str(run) + ".tmp", run)
    os.replace(str(qrels) + ".tmp", qrels)
    return qrels, run


def make_log(folder: Path, rows: int, n_queries: int = 2000, depth: int = 10) -> Path:
    """``rows`` impressions in Parquet files of 2M rows (a folder), reused when already there."""
    rng = np.random.default_rng(1)
    out = folder / f"log-{rows}"
    if (out / "DONE").exists():
        return out
    out.mkdir(exist_ok=True)
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
    (out / "DONE").write_text("")
    return out


def make_online(folder: Path, rows: int, n_queries: int = 2000, n_docs: int = 50, depth: int = 10) -> tuple[Path, str]:
    """An A/B log of ``rows`` impressions (arms control / test by request, users, conversions) in
    Parquet files of 2M rows, and a SQLite label store with one grader ``bench`` judging every pair
    (grades 0-3); both reused when already there."""
    rng = np.random.default_rng(2)
    out, db = folder / f"online-{rows}", folder / "online-labels.db"
    url = f"sqlite:///{db}"
    if not db.exists():
        from ndcg_labeling.db import migrate
        from ndcg_labeling.db.session import make_engine, session_scope
        from ndcg_labeling.labels.importing import import_judgments

        q = np.repeat(np.arange(n_queries), n_docs)
        d = np.tile(np.arange(n_docs), n_queries)
        judgments = folder / "online-judgments.csv"
        pd.DataFrame({"query_id": np.char.add("q", q.astype(str)), "doc_id": np.char.add("d", d.astype(str)),
                      "grader": "bench", "grade": rng.choice(4, q.size, p=[0.5, 0.3, 0.15, 0.05])}).to_csv(judgments, index=False)
        engine = make_engine(url)
        migrate.upgrade(engine)
        with session_scope(engine) as session:
            import_judgments(str(judgments), scale="0-3", session=session, create_graders=True)
        engine.dispose()
    if (out / "DONE").exists():
        return out, url
    out.mkdir(exist_ok=True)
    for i, start in enumerate(range(0, rows, 2_000_000)):
        n = min(2_000_000, rows - start)
        req = (start + np.arange(n)) // depth
        pos = (start + np.arange(n)) % depth + 1
        q = np.repeat(rng.integers(0, n_queries, (n + depth - 1) // depth), depth)[:n]
        pd.DataFrame({"request_id": np.char.add("r", req.astype(str)), "query_id": np.char.add("q", q.astype(str)),
                      "doc_id": np.char.add("d", ((req * 7 + pos) % n_docs).astype(str)), "position": pos,
                      "clicked": (rng.random(n) < 0.3 / pos).astype(np.int8), "ts": 1.7e9 + req.astype(np.float64),
                      "arm": np.where(req % 2 == 0, "control", "test"),
                      "converted": ((pos == 1) & (rng.random(n) < 0.05)).astype(np.int8),
                      "user_id": np.char.add("u", (req % 100_000).astype(str))}).to_parquet(out / f"part-{i:04d}.parquet")
    (out / "DONE").write_text("")
    return out, url


def online_report_json(log: Path, url: str, engine: str, spark: object = None) -> str:
    """``online report`` as JSON, the statistics without their bootstrap (``n_resamples=0``: the
    same on both engines, and not what is measured here)."""
    from ndcg_labeling.cli.common import open_session
    from ndcg_labeling.experiments.report import OnlineOptions, online_report

    options = OnlineOptions(baseline="control", labels="bench", n_resamples=0, engine=engine)
    with open_session(url, read_only=True) as session:
        return json.dumps(online_report([str(log)], options, session=session, spark=spark), default=str)


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


def executor_seconds(ui: str, app_id: str) -> float:
    """Task time summed over every stage so far (``executorRunTime``, Spark's REST API): the core-seconds
    the executors spent, without the driver's share or the time tasks waited for a core."""
    import urllib.request

    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app_id}/stages?status=complete", timeout=30) as r:
        stages = json.load(r)
    return sum(st.get("executorRunTime", 0) for st in stages) / 1000.0


def _say(results: dict[str, object], out: Path | None, text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)
    if out is not None:
        out.write_text(json.dumps(results, indent=2))


def _embedded(args: argparse.Namespace, data: dict[str, object], results: dict[str, object], out: Path | None) -> None:
    from ndcg_labeling.engines import LogRequest, get_engine
    from ndcg_labeling.scoring.evaluate import evaluate_files

    me = [os.getpid()]
    if "eval" in args.jobs:
        qrels, run = data["trec"]  # type: ignore[misc]
        emb, t, m = _timed(lambda: evaluate_files(qrels, run, MEASURES), me)
        data["eval_embedded"] = emb
        results["embedded_eval"] = {"lines": args.lines, "s": t, "peak_bytes": m}
        _say(results, out, f"embedded eval {args.lines:,} lines: {t:.1f} s, {m / 2**20:.0f} MB")
    if "online" in args.jobs:
        log, url = data["online"]  # type: ignore[misc]
        rep, t, m = _timed(lambda: online_report_json(log, url, "duckdb"), me)
        data["online_embedded"] = rep
        results["embedded_online"] = {"rows": args.online_rows, "s": t, "peak_bytes": m}
        _say(results, out, f"embedded online report {args.online_rows:,} impressions: {t:.1f} s, {m / 2**20:.0f} MB")
    for rows, log in data["logs"]:  # type: ignore[attr-defined]
        agg, t, m = _timed(lambda log=log: get_engine("duckdb").aggregate(LogRequest(sources=(str(log),))), me)
        data[f"logs_embedded_{rows}"] = agg
        results[f"embedded_logs_{rows}"] = {"rows": rows, "s": t, "peak_bytes": m}
        _say(results, out, f"embedded logs {rows:,} impressions: {t:.1f} s, {m / 2**20:.0f} MB")


def _on_spark(args: argparse.Namespace, data: dict[str, object], results: dict[str, object], out: Path | None) -> None:
    from pyspark.sql import SparkSession

    from ndcg_labeling.engines import LogRequest
    from ndcg_labeling.engines.spark import SparkEngine
    from ndcg_labeling.scoring.evaluate import evaluate_files

    with Cluster(args.worker_memory) as cluster:
        t_start = time.perf_counter()
        os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this venv's
        ui_port = free_port()
        spark = (SparkSession.builder.master(cluster.url).appName("bench-spark")
                 .config("spark.executor.memory", args.worker_memory).config("spark.driver.memory", "2g")
                 .config("spark.sql.shuffle.partitions", str(args.partitions)).config("spark.ui.port", str(ui_port))
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        ui, app_id = f"http://127.0.0.1:{ui_port}", spark.sparkContext.applicationId
        results["spark_startup_s"] = time.perf_counter() - t_start
        roots = [os.getpid(), *[p.pid for p in cluster.procs]]
        if "eval" in args.jobs:
            qrels, run = data["trec"]  # type: ignore[misc]
            before = executor_seconds(ui, app_id)
            got, t, m = _timed(lambda: evaluate_files(qrels, run, MEASURES, engine="spark", spark=spark), roots)
            task_s = executor_seconds(ui, app_id) - before
            emb = data["eval_embedded"]
            same = got.query_ids == emb.query_ids and np.array_equal(got.table(), emb.table(), equal_nan=True)  # type: ignore[attr-defined]
            results["spark_eval"] = {"lines": args.lines, "s": t, "peak_bytes": m, "task_s": task_s, "same": bool(same)}
            _say(results, out, f"spark eval {args.lines:,} lines: {t:.1f} s ({task_s:.0f} task-s), "
                 f"{m / 2**20:.0f} MB, same={same}")
        if "online" in args.jobs:
            log, url = data["online"]  # type: ignore[misc]
            before = executor_seconds(ui, app_id)
            rep, t, m = _timed(lambda: online_report_json(log, url, "spark", spark), roots)
            task_s = executor_seconds(ui, app_id) - before
            same = rep == data["online_embedded"]
            results["spark_online"] = {"rows": args.online_rows, "s": t, "peak_bytes": m, "task_s": task_s, "same": same}
            _say(results, out, f"spark online report {args.online_rows:,} impressions: {t:.1f} s ({task_s:.0f} task-s), "
                 f"{m / 2**20:.0f} MB, same={same}")
        for rows, log in data["logs"]:  # type: ignore[attr-defined]
            before = executor_seconds(ui, app_id)
            agg, t, m = _timed(lambda log=log: SparkEngine(spark=spark).aggregate(LogRequest(sources=(str(log),))), roots)
            task_s = executor_seconds(ui, app_id) - before
            ref = data[f"logs_embedded_{rows}"]
            same = ((agg.query_ids, agg.doc_ids) == (ref.query_ids, ref.doc_ids)  # type: ignore[attr-defined]
                    and np.array_equal(agg.cells.impressions, ref.cells.impressions)  # type: ignore[attr-defined]
                    and np.array_equal(agg.cells.clicks, ref.cells.clicks))  # type: ignore[attr-defined]
            results[f"spark_logs_{rows}"] = {"rows": rows, "s": t, "peak_bytes": m, "task_s": task_s, "same": bool(same)}
            _say(results, out, f"spark logs {rows:,} impressions: {t:.1f} s ({task_s:.0f} task-s), "
                 f"{m / 2**20:.0f} MB, same={same}")
        spark.stop()


MEASURES = ["ndcg_cut.10", "map", "P.10"]


def estimate(results: dict[str, object], node_cores: int) -> dict[str, object]:
    """1B lines on 10 nodes: the measured task time per line spread over ``10 * node_cores`` cores, plus
    the part of the measured wall time that no task accounts for (driver work, scheduling: kept as it
    is, although the driver's collect grows with the number of queries / cells)."""
    cores, out = 10 * node_cores, {}
    for job in ("eval", "online", *sorted((k.removeprefix("spark_") for k in results if k.startswith("spark_logs_")),
                                key=lambda k: int(k.rsplit("_", 1)[1]))):
        sp = results.get(f"spark_{job}")
        if not isinstance(sp, dict):
            continue
        n = sp.get("lines", sp.get("rows"))
        per_core = n / sp["task_s"]
        overhead = max(sp["s"] - sp["task_s"] / 2, 0.0)  # the wall time beyond the 2 cores' task time
        emb = results.get(f"embedded_{job}")
        out[job] = {"per_core_per_s": per_core, "overhead_s": overhead,
                    "est_10_nodes_1B_s": 1e9 / (per_core * cores) + overhead + float(results["spark_startup_s"]),  # type: ignore[arg-type]
                    "embedded_1B_s_linear": emb["s"] * 1e9 / n if isinstance(emb, dict) else None,
                    "crossover_cores": (sp["task_s"] / emb["s"]) if isinstance(emb, dict) else None}
    return out


def bench(args: argparse.Namespace) -> dict[str, object]:
    folder = Path(args.data)
    folder.mkdir(parents=True, exist_ok=True)
    out = Path(args.out) if args.out else None
    results: dict[str, object] = {"lines": args.lines, "rows": args.rows, "jobs": args.jobs,
                                  "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    t0 = time.perf_counter()
    data: dict[str, object] = {"logs": [(r, make_log(folder, r)) for r in args.rows] if "logs" in args.jobs else []}
    if "eval" in args.jobs:
        data["trec"] = make_trec(folder, args.lines)
    if "online" in args.jobs:
        data["online"] = make_online(folder, args.online_rows)
    results["make_data_s"] = time.perf_counter() - t0
    _say(results, out, f"data ready in {results['make_data_s']:.0f} s under {folder}")
    _embedded(args, data, results, out)
    _on_spark(args, data, results, out)
    results["estimate_10_nodes_1B"] = estimate(results, args.node_cores)
    _say(results, out, "done")
    return results


def _sizes(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=10_000_000, help="run lines (1,000 per query)")
    parser.add_argument("--rows", type=_sizes, default=[100_000_000], help="log impressions (comma-separated sizes)")
    parser.add_argument("--jobs", default="eval,logs", help="eval, logs, online (comma-separated)")
    parser.add_argument("--online-rows", type=int, default=5_000_000, help="impressions of the online report's A/B log")
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "bench_spark"),
                        help="where the generated data is kept (reused when there)")
    parser.add_argument("--out", default=None, help="write the results as JSON here, after each step")
    parser.add_argument("--partitions", type=int, default=8, help="spark.sql.shuffle.partitions")
    parser.add_argument("--worker-memory", default="2g")
    parser.add_argument("--node-cores", type=int, default=16, help="cores per node of the estimated cluster")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    r = bench(args)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    mb = 1 / 2**20
    print(f"Spark: standalone, 1 master + 2 workers x 1 core; session start-up {r['spark_startup_s']:.1f} s")
    print(f"{'job':<36}{'embedded s':>12}{'peak MB':>10}{'spark s':>10}{'task s':>9}{'peak MB':>10}  same")
    jobs = [("eval", f"eval {args.lines:,} lines")] if "eval" in args.jobs else []
    jobs += [("online", f"online report {args.online_rows:,} impr.")] if "online" in args.jobs else []
    jobs += [(f"logs_{n}", f"logs {n:,} impressions") for n in args.rows if "logs" in args.jobs]
    for key, name in jobs:
        e, s = r[f"embedded_{key}"], r[f"spark_{key}"]
        assert isinstance(e, dict) and isinstance(s, dict)
        print(f"{name:<36}{e['s']:>12.1f}{e['peak_bytes'] * mb:>10.0f}{s['s']:>10.1f}{s['task_s']:>9.0f}"
              f"{s['peak_bytes'] * mb:>10.0f}  {s['same']}")
    est = r["estimate_10_nodes_1B"]
    assert isinstance(est, dict)
    for job, e in est.items():
        print(f"1B on 10 nodes x {args.node_cores} cores, {job}: ~{e['est_10_nodes_1B_s']:.0f} s "
              f"({e['per_core_per_s']:,.0f} /s per core in tasks, {e['overhead_s']:.0f} s beyond the tasks); "
              f"embedded, linear: ~{e['embedded_1B_s_linear']:.0f} s; Spark matches the embedded path from "
              f"~{e['crossover_cores']:.0f} cores")


if __name__ == "__main__":
    main()
