"""Commands that touch no large data start without pandas, numba or matplotlib (issue 17).

Each command runs in a fresh process on a small SQLite database (the demo set); a wrapper runs the
CLI's ``main`` and then writes which of the heavy modules are in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("pandas", "numba", "matplotlib")
# Also kept out of the light commands (issue 17): each costs a large share of `import pandas` (alembic:
# the at-head check reads alembic_version itself; the ORM and numpy: the reads are Core queries; pydantic:
# typer 0.29 and later import it to coerce every option, which pyproject's typer<0.29 keeps out).
STARTUP = ("numpy", "alembic", "sqlalchemy.orm", "pydantic")

_WRAPPER = """
import json, sys
out, argv = sys.argv[1], sys.argv[2:]
sys.argv = ["ndcg-labeling", *argv]
from ndcg_labeling.cli import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
with open(out, "w") as f:
    json.dump({"code": code, "heavy": sorted(m for m in HEAVY if m in sys.modules),
               "startup": sorted(m for m in STARTUP if m in sys.modules)}, f)
""".replace("HEAVY", repr(HEAVY)).replace("STARTUP", repr(STARTUP))


COMMANDS = [
    pytest.param(["--help"], id="help"),
    pytest.param(["status"], id="status"),
    pytest.param(["db", "current"], id="db-current"),
    pytest.param(["graders", "list"], id="graders-list"),
    pytest.param(["tasks", "status", "demo-0-3"], id="tasks-status"),
    pytest.param(["tasks", "list"], id="tasks-list"),
    pytest.param(["adjudicate", "list"], id="adjudicate-list"),
]


@pytest.fixture(scope="module")
def small_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo set's database (queries, graders, a batch 'demo-0-3', judgments, consensus)."""
    folder = tmp_path_factory.mktemp("lazy")
    env = {k: v for k, v in os.environ.items() if k != "NDCG_LABELING_DB"}
    proc = subprocess.run([sys.executable, "-m", "ndcg_labeling", "demo", "--out", str(folder / "demo")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return f"sqlite:///{folder / 'demo' / 'demo.db'}"


@pytest.mark.parametrize("argv", COMMANDS)
def test_light_commands_import_no_heavy_module(argv: list[str], small_db: str, tmp_path: Path) -> None:
    out = tmp_path / "loaded.json"
    env = {**os.environ, "NDCG_LABELING_DB": small_db}
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, str(out), *argv],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["code"] == 0, proc.stdout + proc.stderr
    assert result["heavy"] == [], f"{' '.join(argv)} imported {result['heavy']}"
    if argv != ["--help"]:
        assert result["startup"] == [], f"{' '.join(argv)} imported {result['startup']}"


def test_the_wrapper_sees_a_heavy_import(small_db: str, tmp_path: Path) -> None:
    # The check can fail: a command that does load pandas (import of a table) is reported.
    table = tmp_path / "graders.csv"
    table.write_text("grader,display_name\nzz,Zed\n")
    out = tmp_path / "loaded.json"
    env = {**os.environ, "NDCG_LABELING_DB": small_db}
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, str(out), "import", "graders", str(table)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "pandas" in json.loads(out.read_text())["heavy"]


def test_importing_the_metrics_loads_no_numba() -> None:
    code = "import sys, ndcg_labeling.metrics, ndcg_labeling.backend; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


@pytest.mark.parametrize("module", ["ndcg_labeling.labels.tasks", "ndcg_labeling.labels.overview",
                                    "ndcg_labeling.labels.consensus", "ndcg_labeling.labels.lookups"])
def test_module_loads_no_heavy_package(module: str) -> None:
    code = (f"import sys, {module}\n"
            "print(','.join(m for m in ('pandas', 'numba', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"{module} loaded {out}"


def test_report_runs_its_t_tests(small_db: str, tmp_path: Path) -> None:
    # The report's t-test and power come from scipy.special (imported when first needed). The demo database
    # has two systems, so the comparisons run.
    code = ("import sys\nfrom ndcg_labeling.cli import main\nsys.argv = ['ndcg-labeling', 'report', '--format', 'csv']\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "print('scipy' in sys.modules, 'pandas' in sys.modules, file=sys.stderr)")
    env = {**os.environ, "NDCG_LABELING_DB": small_db}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "MDE" in proc.stderr and "p = " in proc.stderr  # the headline's t-test and power ran
    assert proc.stderr.strip().splitlines()[-1] == "True True"  # scipy.special ran the t-test, pandas the report
