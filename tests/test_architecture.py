"""The dependency direction of STYLE.md, checked on the source: the db layer never imports the
kernels; the kernels never import the db layer, pandas or the pipeline; importing the package does no work."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ndcg_labeling"
KERNELS = ("ndcg_labeling.metrics", "ndcg_labeling.agreement", "ndcg_labeling.consensus")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def test_db_layer_never_imports_kernels():
    for path in (PKG / "db").glob("*.py"):
        bad = {m for m in imported_modules(path) if m.startswith(KERNELS)}
        assert not bad, f"{path.name} imports {bad}"


def test_kernels_import_neither_db_pandas_nor_pipeline():
    files = list((PKG / "metrics").glob("*.py")) + [PKG / "agreement.py", PKG / "consensus.py"]
    for path in files:
        bad = {m for m in imported_modules(path)
               if m.split(".")[0] in {"pandas", "sqlalchemy", "alembic"}
               or m.startswith(("ndcg_labeling.db", "ndcg_labeling.pipeline", "ndcg_labeling.io", "ndcg_labeling.cli"))}
        assert not bad, f"{path.name} imports {bad}"


def test_importing_the_package_loads_nothing_heavy():
    code = ("import sys, ndcg_labeling; heavy = [m for m in ('pandas', 'sqlalchemy', 'numpy', 'torch') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
