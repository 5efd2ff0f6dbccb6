"""The dependency direction of STYLE.md, checked on the source: a layer table over every import (relative
ones included); the db layer never imports the kernels; the kernels never import the db layer, pandas or
the use cases; importing the package does no work; no import circle between modules; docs/layout.md's
layer table is the one below."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ndcg_labeling"
#: the use cases, one package per domain (docs/layout.md): the only code that joins the database and
#: the kernels
USE_CASES = ("labels", "sources", "scoring", "experiments", "workspace", "demo", "snapshots")
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


def test_kernels_import_neither_db_pandas_nor_use_cases():
    files = list((PKG / "metrics").glob("*.py")) + [PKG / "agreement.py", PKG / "consensus.py", PKG / "stats.py",
                                                    PKG / "assignment.py", PKG / "quality.py"]
    for path in files:
        bad = {m for m in imported_modules(path)
               if m.split(".")[0] in {"pandas", "sqlalchemy", "alembic"}
               or m.startswith(("ndcg_labeling.db", "ndcg_labeling.io", "ndcg_labeling.cli",
                                 *(f"ndcg_labeling.{u}" for u in USE_CASES)))}
        assert not bad, f"{path.name} imports {bad}"


def test_importing_the_package_loads_nothing_heavy():
    code = ("import sys, ndcg_labeling; heavy = [m for m in ('pandas', 'sqlalchemy', 'numpy', 'torch') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


# --- the layer table ----------------------------------------------------------------------------------
# Every module of the package belongs to one area; an area may import only the areas listed for it.
# Imports are resolved to module names first (``from . import x``, ``from ..labels import y`` and
# ``from ndcg_labeling import _jit`` included), wherever they appear (top level, inside a function or
# under ``if TYPE_CHECKING:``).

AREAS: dict[str, str] = {
    "cli": "cli", "web": "web",
    # the use cases, by domain: labels people and files put in; labels from other sources (behavior logs,
    # LLM judges); numbers from labels; online experiments; the served app's users; the demo
    "labels": "labels", "sources": "sources", "scoring": "scoring", "experiments": "experiments",
    "workspace": "workspace", "demo": "demo",
    # rankings straight from search engines: configurations, snapshots (stored runs), diffs, their pool
    "snapshots": "snapshots",
    # pure kernels and the small modules that only they use (the jit and backend switches)
    "metrics": "kernels", "agreement": "kernels", "consensus": "kernels", "stats": "kernels",
    "assignment": "kernels", "quality": "kernels", "_jit": "kernels", "backend": "kernels",
    "io": "io", "trec": "trec", "db": "db", "reports": "reports",
    # the next areas (docs/layout.md): each a room with pure kernels and thin use cases of its own
    "behavior": "behavior", "judges": "judges", "online": "online", "budget": "budget", "engines": "engines",
    # the result types the use cases build and the renderers format (neither imports the other's internals)
    "results": "results",
    "errors": "base", "scales": "base", "choices": "base", "guidelines": "base", "spreadsheet": "base",
    "settings": "base",
    "": "root", "__main__": "root",
}
BASE = {"base"}
FRONT = {"cli", "web", "reports", "results", "db", "io", "root"} | set(USE_CASES) | BASE
#: what every use case may import besides other use cases
BELOW_USE_CASES = {"kernels", "io", "trec", "db", "reports", "results", "behavior", "judges", "online", "budget",
                   "engines"} | BASE
LAYERS: dict[str, set[str]] = {
    "root": set(AREAS.values()),  # __main__ starts the CLI; __init__ only re-exports lazily
    "cli": FRONT,                 # thin: options -> session -> one use-case call -> render
    "web": FRONT,                 # like the CLI
    # the use cases, one direction between domains: labels <- sources <- scoring <- workspace <- experiments
    # (the live arms check ingest keys) <- demo; labels imports no other domain (a role check or a judge
    # fill is passed in or done at the edge)
    "labels": {"labels"} | BELOW_USE_CASES,
    "sources": {"sources", "labels"} | BELOW_USE_CASES,
    "scoring": {"scoring", "labels", "sources"} | BELOW_USE_CASES,
    "workspace": {"workspace", "labels", "sources", "scoring"} | BELOW_USE_CASES,
    "experiments": {"experiments", "labels", "sources", "scoring", "workspace"} | BELOW_USE_CASES,
    "demo": set(USE_CASES) | BELOW_USE_CASES,
    # snapshots read labels (the pool, the labels in force) and score with the report; no domain imports them
    "snapshots": {"snapshots", "labels", "sources", "scoring"} | BELOW_USE_CASES,
    # the rooms of kernels: they may use the kernels, io and one another's kernels, never the db layer or
    # a use case (a use case that needs the database lives in its domain package above)
    "behavior": {"behavior", "kernels", "io", "engines"} | BASE,
    "judges": {"judges", "kernels", "io"} | BASE,
    "online": {"online", "behavior", "kernels", "io", "engines"} | BASE,
    "budget": {"budget", "kernels"} | BASE,
    "engines": {"engines", "behavior", "kernels", "io", "trec"} | BASE,
    "kernels": {"kernels"} | BASE,
    "io": {"io"} | BASE,
    "trec": {"trec", "io", "kernels"} | BASE,
    "db": {"db"} | BASE,          # never the kernels or a use case
    "reports": {"reports", "results", "kernels", "trec"} | BASE,  # never a use case or the db layer
    "results": {"results", "kernels"} | BASE,  # plain data: no db, no use case, no renderer
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
    target.write_text(target.read_text(encoding="utf-8") + "\nfrom ..scoring import report as _report\n",
                      encoding="utf-8")
    labels = copy / "labels" / "adjudication.py"  # a domain climbing back up: labels -> workspace
    labels.write_text(labels.read_text(encoding="utf-8") + "\n\ndef _f():\n    from ..workspace import auth\n",
                      encoding="utf-8")
    db_file = copy / "db" / "reads.py"
    db_file.write_text(db_file.read_text(encoding="utf-8") + "\nfrom .. import stats as _stats\n", encoding="utf-8")
    assert layer_violations(copy) == [
        "ndcg_labeling/db/reads.py: db must not import kernels (ndcg_labeling.stats)",
        "ndcg_labeling/labels/adjudication.py: labels must not import workspace (ndcg_labeling.workspace.auth)",
        "ndcg_labeling/reports/text.py: reports must not import scoring (ndcg_labeling.scoring.report)",
    ]


def test_every_area_of_the_table_has_its_rule():
    assert set(AREAS.values()) == set(LAYERS)
    assert not LAYERS["reports"] & set(USE_CASES) and "db" not in LAYERS["reports"]
    assert "kernels" not in LAYERS["db"] and not LAYERS["db"] & set(USE_CASES)
    assert all(not LAYERS[room] & set(USE_CASES) for room in ("kernels", "behavior", "judges", "online", "budget",
                                                              "engines", "io", "trec", "results", "base"))
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


def import_circles(root: Path = PKG, runtime: bool = True) -> list[frozenset[str]]:
    """The strongly connected components (more than one module) of the import graph (Tarjan's
    algorithm): imports inside functions count; those under ``if TYPE_CHECKING:`` count unless
    ``runtime`` (the graph Python runs)."""
    graph = _graph(root, runtime=runtime)
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
    assert [sorted(c) for c in import_circles()] == []


def test_no_import_circles_even_counting_type_checking_and_function_local_imports():
    """A circle kept at bay by ``if TYPE_CHECKING:`` or a function-local import is still a circle for a
    reader (two modules that each need the other): none in the package."""
    assert [sorted(c) for c in import_circles(runtime=False)] == []


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
    # a circle through ``if TYPE_CHECKING:`` only (tasks.files imports gold at run time): invisible to the
    # run-time graph, caught by the strict one
    gold = copy / "labels" / "gold.py"
    gold.write_text(gold.read_text(encoding="utf-8")
                    + "\nif TYPE_CHECKING:\n    from .tasks import files as _files\n", encoding="utf-8")
    pair = frozenset({"ndcg_labeling.labels.gold", "ndcg_labeling.labels.tasks.files"})
    assert not any(pair <= c for c in import_circles(copy))
    assert any(pair <= c for c in import_circles(copy, runtime=False))


def environ_readers(root: Path = PKG) -> list[str]:
    """The modules other than settings.py that touch the environment: ``os.environ``, ``os.getenv``,
    ``os.putenv``/``unsetenv``, or ``environ``/``getenv`` imported from os."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
                    and node.attr in ("environ", "getenv", "putenv", "unsetenv", "environb")) or (
                    isinstance(node, ast.ImportFrom) and node.module == "os"
                    and {a.name for a in node.names} & {"environ", "getenv", "putenv", "unsetenv", "environb"}):
                found.append(f"{module_name(path, root)}:{node.lineno}")
    return found


def test_only_settings_reads_the_environment(tmp_path):
    """Configuration is read in one place (issue 44): every variable's name and meaning in settings.py."""
    assert environ_readers() == []
    pkg = tmp_path / "ndcg_labeling"
    pkg.mkdir()
    (pkg / "settings.py").write_text("import os\nX = os.environ.get('X')\n", encoding="utf-8")
    (pkg / "a.py").write_text("import os\n\n\ndef f():\n    return os.getenv('X')\n", encoding="utf-8")
    (pkg / "b.py").write_text("from os import environ\n", encoding="utf-8")
    (pkg / "c.py").write_text("import os\nos.environ['X'] = '1'\nos.path.join('a')\n", encoding="utf-8")
    assert environ_readers(pkg) == ["ndcg_labeling.a:5", "ndcg_labeling.b:1", "ndcg_labeling.c:2"]


def test_docs_layout_names_every_package_and_top_level_module():
    text = (PKG.parent / "docs" / "layout.md").read_text(encoding="utf-8")
    names = sorted([f"{p.name}/" for p in PKG.iterdir() if (p / "__init__.py").is_file()]
                   + [p.name for p in PKG.glob("*.py")])
    assert [n for n in names if n not in text] == []


# --- docs/layout.md's layer table is this one ---------------------------------------------------------
def layer_table() -> str:
    """The layer table as docs/layout.md prints it: one row per area (its packages and modules), with the
    areas it may import (itself included), in the order of :data:`LAYERS`."""
    rows = ["| area | holds | may import |", "|---|---|---|"]
    for area, allowed in LAYERS.items():
        members = sorted(f"`{k}`" if k else "`__init__`" for k, v in AREAS.items() if v == area)
        rows.append(f"| {area} | {', '.join(members)} | {', '.join(sorted(allowed))} |")
    return "\n".join(rows) + "\n"


def test_docs_layout_prints_the_layer_table_of_this_test():
    """Regenerate with ``python -c "from tests.test_architecture import layer_table; print(layer_table())"``."""
    text = (PKG.parent / "docs" / "layout.md").read_text(encoding="utf-8")
    assert layer_table() in text
