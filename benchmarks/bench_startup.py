"""Start-up time of the light commands against ``python -c "import pandas"`` (issue 17).

Each command runs in a fresh process, best of N (``--repeat``), on a small SQLite database (the demo
set, made once in a temporary folder) and, for the commands that need no data, on an empty one.
The goal: every command that touches no large data starts in no more time than importing pandas
takes on the same machine. Also prints which heavy modules (pandas, numba, matplotlib, scipy) each
command loaded, so a slow row says why.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import cpu_name  # benchmarks/ is on sys.path when a script runs

HEAVY = ("pandas", "numba", "matplotlib", "scipy")
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
    ("adjudicate list", ["adjudicate", "list"]),
]


def best_of(argv: list[str], repeat: int, env: dict[str, str]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, env=env)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-500:]}")
        best = min(best, elapsed)
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
        base_env = {k: v for k, v in os.environ.items() if k != "NDCG_LABELING_DB"}
        subprocess.run([*cli, "demo", "--out", str(folder / "demo")], env=base_env, capture_output=True, check=True)
        small = {**base_env, "NDCG_LABELING_DB": f"sqlite:///{folder / 'demo' / 'demo.db'}"}
        empty = {**base_env, "NDCG_LABELING_DB": f"sqlite:///{folder / 'empty.db'}"}
        subprocess.run([*cli, "db", "upgrade"], env=empty, capture_output=True, check=True)

        load = "/".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"machine: {os.cpu_count()} cores, {cpu_name()}; Python {sys.version.split()[0]}; "
              f"load average {load}; best of {args.repeat} fresh processes")
        pandas = best_of([sys.executable, "-c", "import pandas"], args.repeat, base_env)
        python = best_of([sys.executable, "-c", "pass"], args.repeat, base_env)
        print(f"python -c pass: {python * 1e3:,.0f} ms; python -c \"import pandas\": {pandas * 1e3:,.0f} ms")
        print()
        print("| command | empty db (ms) | demo db (ms) | / import pandas | heavy modules loaded |")
        print("| --- | ---: | ---: | ---: | --- |")
        for name, argv in COMMANDS:
            needs_data = argv[0] == "tasks"
            on_empty = None if needs_data else best_of([*cli, *argv], args.repeat, empty)
            on_small = best_of([*cli, *argv], args.repeat, small)
            heavy = heavy_modules(argv, small, folder)
            shown = "—" if on_empty is None else f"{on_empty * 1e3:,.0f}"
            print(f"| {name} | {shown} | {on_small * 1e3:,.0f} | {on_small / pandas:.2f}x | "
                  f"{', '.join(heavy) or 'none'} |", flush=True)
        print()
        print(f"load average after: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("— : the command needs a batch (the empty database has none).")


if __name__ == "__main__":
    main()
