"""Start-up time of the light commands against ``python -c "import pandas"`` (issue 17).

Each command runs in a fresh process, best of N (``--repeat``), on a small SQLite database (the demo
set, made once in a temporary folder) and, for the commands that need no data, on an empty one.
The runs are interleaved (each round runs every command once, ``import pandas`` included), so a
change in the machine's load during the benchmark moves all rows alike and the ratios hold.
The goal: every command that touches no large data starts in no more time than importing pandas
takes on the same machine. Also prints which heavy modules (pandas, numba, matplotlib, scipy, and
numpy, alembic, the SQLAlchemy ORM) each command loaded, so a slow row says why.
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

from _machine import child_env, cpu_name  # benchmarks/ is on sys.path when a script runs

HEAVY = ("pandas", "numba", "matplotlib", "scipy", "numpy", "alembic", "sqlalchemy.orm")
PROBE = """
import json, sys
out, argv = sys.argv[1], sys.argv[2:]
sys.argv = ["ndcg-labeling", *argv]
from ndcg_labeling.cli import main
try:
    main()
except SystemExit:
    pass
with open(out, "w") as f:
    json.dump(sorted(m for m in HEAVY if m in sys.modules), f)
""".replace("HEAVY", repr(HEAVY))

COMMANDS: list[tuple[str, list[str]]] = [
    ("ndcg-labeling --help", ["--help"]),
    ("status", ["status"]),
    ("db current", ["db", "current"]),
    ("graders list", ["graders", "list"]),
    ("tasks status demo-0-3", ["tasks", "status", "demo-0-3"]),
    ("tasks list", ["tasks", "list"]),
    ("adjudicate list", ["adjudicate", "list"]),
]


def best_of(runs: dict[str, tuple[list[str], dict[str, str]]], repeat: int) -> dict[str, tuple[float, float]]:
    """The best wall time and the best CPU time (user + system of the child) of each run
    (name -> (argv, env)) over ``repeat`` interleaved rounds. On a busy machine the CPU time moves
    less than the wall time (a process waiting for a core costs wall time, not CPU time)."""
    best = dict.fromkeys(runs, (float("inf"), float("inf")))
    for _ in range(repeat):
        for name, (argv, env) in runs.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, env=env)
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-500:]}")
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            best[name] = (min(best[name][0], elapsed), min(best[name][1], cpu))
    return best


def heavy_modules(args: list[str], env: dict[str, str], folder: Path) -> list[str]:
    out = folder / "heavy.json"
    subprocess.run([sys.executable, "-c", PROBE, str(out), *args], capture_output=True, env=env, check=True)
    loaded: list[str] = json.loads(out.read_text())
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh processes per command (best is kept)")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "ndcg_labeling"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base_env = {k: v for k, v in child_env().items() if k != "NDCG_LABELING_DB"}
        subprocess.run([*cli, "demo", "--out", str(folder / "demo")], env=base_env, capture_output=True, check=True)
        small = {**base_env, "NDCG_LABELING_DB": f"sqlite:///{folder / 'demo' / 'demo.db'}"}
        empty = {**base_env, "NDCG_LABELING_DB": f"sqlite:///{folder / 'empty.db'}"}
        subprocess.run([*cli, "db", "upgrade"], env=empty, capture_output=True, check=True)

        load = "/".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"machine: {os.cpu_count()} cores, {cpu_name()}; Python {sys.version.split()[0]}; "
              f"load average {load}; best of {args.repeat} fresh processes")
        runs = {"pandas": ([sys.executable, "-c", "import pandas"], base_env),
                "python": ([sys.executable, "-c", "pass"], base_env)}
        for name, argv in COMMANDS:
            if argv[0] != "tasks" or argv[1] == "list":  # tasks status needs a batch: the empty db has none
                runs[f"empty {name}"] = ([*cli, *argv], empty)
            runs[f"small {name}"] = ([*cli, *argv], small)
        best = best_of(runs, args.repeat)
        (pandas, pandas_cpu), (python, python_cpu) = best["pandas"], best["python"]
        print(f"python -c pass: {python * 1e3:,.0f} ms (CPU {python_cpu * 1e3:,.0f} ms); "
              f"python -c \"import pandas\": {pandas * 1e3:,.0f} ms (CPU {pandas_cpu * 1e3:,.0f} ms)")
        print()
        print("| command | empty db (ms) | demo db (ms) | / import pandas | demo db CPU (ms) | CPU / import pandas CPU "
              "| heavy modules loaded |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
        for name, argv in COMMANDS:
            on_empty = best.get(f"empty {name}")
            on_small, small_cpu = best[f"small {name}"]
            heavy = heavy_modules(argv, small, folder)
            shown = "—" if on_empty is None else f"{on_empty[0] * 1e3:,.0f}"
            print(f"| {name} | {shown} | {on_small * 1e3:,.0f} | {on_small / pandas:.2f}x | {small_cpu * 1e3:,.0f} | "
                  f"{small_cpu / pandas_cpu:.2f}x | {', '.join(heavy) or 'none'} |", flush=True)
        print()
        print(f"load average after: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("— : the command needs a batch (the empty database has none).")


if __name__ == "__main__":
    main()
