"""The dependency direction of STYLE.md, checked on the source: a layer table over every import (relative
ones included); the db layer never imports the kernels; the kernels never import the db layer, pandas or
the pipeline; importing the package does no work."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ndcg_labeling"
KERNELS = ("ndcg_labeling.metrics", "ndcg_labeling.agreement", "ndcg_labeling.consensus", "ndcg_labeling.stats",
           "ndcg_labeling.assignment", "ndcg_labeling.quality")


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
    files = list((PKG / "metrics").glob("*.py")) + [PKG / "agreement.py", PKG / "consensus.py", PKG / "stats.py",
                                                    PKG / "assignment.py", PKG / "quality.py"]
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


# --- the layer table ----------------------------------------------------------------------------------
# Every module of the package belongs to one area; an area may import only the areas listed for it.
# Imports are resolved to module names first (``from . import x``, ``from ..pipeline import y`` and
# ``from ndcg_labeling import _jit`` included), wherever they appear (top level or inside a function).

AREAS: dict[str, str] = {
    "cli": "cli", "web": "web", "pipeline": "pipeline",
    # pure kernels and the small modules that only they use (the jit and backend switches)
    "metrics": "kernels", "agreement": "kernels", "consensus": "kernels", "stats": "kernels",
    "assignment": "kernels", "quality": "kernels", "_jit": "kernels", "backend": "kernels",
    "io": "io", "trec": "trec", "db": "db", "reports": "reports",
    # the next areas (docs/layout.md): each a room with pure kernels and thin use cases of its own
    "behavior": "behavior", "judges": "judges", "online": "online", "budget": "budget", "engines": "engines",
    # the result types the pipeline builds and the renderers format (neither imports the other's internals)
    "results": "results",
    "errors": "base", "scales": "base", "choices": "base", "guidelines": "base", "spreadsheet": "base",
    "": "root", "__main__": "root",
}
BASE = {"base"}
FRONT = {"cli", "web", "pipeline", "reports", "results", "db", "io", "root"} | BASE
LAYERS: dict[str, set[str]] = {
    "root": set(AREAS.values()),  # __main__ starts the CLI; __init__ only re-exports lazily
    "cli": FRONT,                 # thin: options -> session -> one pipeline call -> render
    "web": FRONT,                 # like the CLI
    "pipeline": {"pipeline", "kernels", "io", "trec", "db", "reports", "results", "behavior", "judges", "online",
                 "budget", "engines"} | BASE,
    # the new rooms: their kernels and use cases may use the kernels, io and one another's kernels, never
    # the db layer or the pipeline (a use case that needs the database lives in pipeline/)
    "behavior": {"behavior", "kernels", "io", "engines"} | BASE,
    "judges": {"judges", "kernels", "io"} | BASE,
    "online": {"online", "behavior", "kernels", "io", "engines"} | BASE,
    "budget": {"budget", "kernels"} | BASE,
    "engines": {"engines", "behavior", "kernels", "io", "trec"} | BASE,
    "kernels": {"kernels"} | BASE,
    "io": {"io"} | BASE,
    "trec": {"trec", "io", "kernels"} | BASE,
    "db": {"db"} | BASE,          # never the kernels or the pipeline
    "reports": {"reports", "results", "kernels", "trec"} | BASE,  # never the pipeline or the db layer
    "results": {"results", "kernels"} | BASE,  # plain data: no db, no pipeline, no renderer
    "base": BASE,
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:`` (never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def resolved_imports(path: Path, root: Path, runtime: bool = False) -> set[str]:
    """The package modules ``path`` imports, relative imports resolved, ``from pkg import module``
    read as the module; ``runtime``: leave out the imports under ``if TYPE_CHECKING:``."""
    me = module_name(path, root)
    package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                rel = Path(*candidate.split("."))
                is_module = (root.parent / rel).with_suffix(".py").exists() or (root.parent / rel).is_dir()
                out.add(candidate if is_module else module)
    return {m for m in out if m == root.name or m.startswith(root.name + ".")}


def area_of(module: str) -> str:
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else ""
    if key not in AREAS:
        raise AssertionError(f"{module} is in no area of the layer table: add it to AREAS")
    return AREAS[key]


def layer_violations(root: Path = PKG) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        me = module_name(path, root)
        mine = area_of(me)
        for target in sorted(resolved_imports(path, root)):
            theirs = area_of(target)
            if theirs not in LAYERS[mine]:
                problems.append(f"{path.relative_to(root.parent)}: {mine} must not import {theirs} ({target})")
    return problems


def test_every_import_follows_the_layer_table():
    assert layer_violations() == []


def test_a_forbidden_relative_import_fails_the_layer_table(tmp_path):
    copy = tmp_path / "ndcg_labeling"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    target = copy / "reports" / "text.py"
    target.write_text(target.read_text(encoding="utf-8") + "\nfrom ..pipeline import report as _report\n",
                      encoding="utf-8")
    db_file = copy / "db" / "reads.py"
    db_file.write_text(db_file.read_text(encoding="utf-8") + "\nfrom .. import stats as _stats\n", encoding="utf-8")
    assert layer_violations(copy) == [
        "ndcg_labeling/db/reads.py: db must not import kernels (ndcg_labeling.stats)",
        "ndcg_labeling/reports/text.py: reports must not import pipeline (ndcg_labeling.scoring.report)",
    ]


def test_every_area_of_the_table_has_its_rule():
    assert set(AREAS.values()) == set(LAYERS)
    assert "pipeline" not in LAYERS["reports"] and "db" not in LAYERS["reports"]
    assert "kernels" not in LAYERS["db"] and "pipeline" not in LAYERS["db"]
    assert LAYERS["web"] == LAYERS["cli"]


# --- fronts, private modules, circles ---------------------------------------------------------------
#: the one import between the two fronts: ``serve`` starts the web app (create_app, run_server, server_engine)
FRONT_BRIDGE = {("ndcg_labeling.cli.serve_cmd", "ndcg_labeling.web.app")}


def _graph(root: Path = PKG, runtime: bool = False) -> dict[str, set[str]]:
    return {module_name(p, root): resolved_imports(p, root, runtime) for p in sorted(root.rglob("*.py"))}


def front_violations(root: Path = PKG) -> list[str]:
    """Imports between ``cli`` and ``web`` (either way) other than :data:`FRONT_BRIDGE`."""
    out = []
    for me, targets in _graph(root).items():
        for target in sorted(targets):
            pair = {area_of(me), area_of(target)}
            if pair == {"cli", "web"} and (me, target) not in FRONT_BRIDGE:
                out.append(f"{me} imports {target}")
    return out


def private_violations(root: Path = PKG) -> list[str]:
    """Imports of a private module (``_x``, not a dunder) from outside the package that holds it."""
    out = []
    for path in sorted(root.rglob("*.py")):
        me = module_name(path, root)
        home = me if path.name == "__init__.py" else me.rpartition(".")[0]
        for target in sorted(resolved_imports(path, root)):
            parts = target.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:i])
                    if home != owner and not home.startswith(owner + "."):
                        out.append(f"{me} imports the private {target}")
                    break
    return out


def import_circles(root: Path = PKG) -> list[frozenset[str]]:
    """The strongly connected components (more than one module) of the run-time import graph:
    imports inside functions count, those under ``if TYPE_CHECKING:`` do not (Tarjan's algorithm)."""
    graph = _graph(root, runtime=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(frozenset(component))

    for v in graph:
        if v not in index:
            visit(v)
    return circles


def test_cli_and_web_never_import_each_other():
    assert front_violations() == []


def test_no_private_module_is_imported_from_outside_its_package():
    assert private_violations() == []


def test_no_import_circles():
    assert [sorted(c) for c in import_circles() ] == []


def test_the_front_private_and_circle_checks_catch_a_violation(tmp_path):
    copy = tmp_path / "ndcg_labeling"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    web = copy / "web" / "text.py"
    web.write_text(web.read_text(encoding="utf-8") + "\nfrom ndcg_labeling.cli import common as _common\n",
                   encoding="utf-8")
    cli = copy / "cli" / "eval_cmd.py"
    cli.write_text(cli.read_text(encoding="utf-8") + "\nfrom ndcg_labeling.labels.tasks import _common\n",
                   encoding="utf-8")
    scales = copy / "scales.py"  # a new circle: scales -> errors -> scales (the second inside a function)
    scales.write_text(scales.read_text(encoding="utf-8") + "\nimport ndcg_labeling.errors\n", encoding="utf-8")
    errors = copy / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") + "\n\ndef _f():\n    from ndcg_labeling import scales\n",
                      encoding="utf-8")
    assert front_violations(copy) == ["ndcg_labeling.web.text imports ndcg_labeling.cli.common"]
    assert private_violations(copy) == ["ndcg_labeling.cli.eval_cmd imports the private "
                                        "ndcg_labeling.labels.tasks._common"]
    assert frozenset({"ndcg_labeling.errors", "ndcg_labeling.scales"}) in import_circles(copy)


def test_docs_layout_names_every_package_and_top_level_module():
    text = (PKG.parent / "docs" / "layout.md").read_text(encoding="utf-8")
    names = sorted([f"{p.name}/" for p in PKG.iterdir() if (p / "__init__.py").is_file()]
                   + [p.name for p in PKG.glob("*.py")])
    assert [n for n in names if n not in text] == []
