"""`pip install .` (a real wheel, no extras) gives a working tool: the migrations, guidelines and demo
data travel inside the package, and every module imports with only the declared dependencies.

Honest without downloading the world on each run: the wheel goes into a fresh venv (no pip, no system
site-packages) beside a folder that holds links to exactly the installed distributions a plain
``pip install .`` would bring: the runtime requirements of the wheel's own METADATA (no extras) and,
recursively, theirs. A module the package imports but does not declare (``click`` was one: typer no
longer depends on it) is then missing there, as on a user's machine. A static check lists every
import of the package and maps it to the distribution that provides it.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
# One xdist worker runs this module, so the wheel and the plain install (module fixtures) are made once
# per run, not once per worker (`--dist loadgroup` spreads the tests of an unmarked module over both).
pytestmark = pytest.mark.xdist_group("wheel")


_IGNORE = shutil.ignore_patterns(".venv", ".git", "*.db", "demo-out", "__pycache__", ".mypy_cache", ".ruff_cache",
                                 ".pytest_cache", "build", "*.egg-info", ".hypothesis")


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel and what the build printed (``-v``: pip hides the backend's output otherwise)."""
    out = tmp_path_factory.mktemp("wheel")
    # A copy of the source tree, so the build leaves nothing in the checkout.
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=_IGNORE)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(src)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"pip wheel failed: {proc.stderr[-2000:]}")
    (found,) = out.glob("ndcg_labeling-*.whl")
    return found, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def wheel(wheel_build: tuple[Path, str]) -> Path:
    return wheel_build[0]


# A warning class printed by setuptools about the project's configuration (`_Warning: Package
# 'ndcg_labeling.web.templates' is absent from the `packages` configuration`, SetuptoolsDeprecationWarning,
# ...). setuptools' own `InformationOnly` note on every editable install is about setuptools, not the project.
_PROJECT_WARNING = re.compile(r"\b(?!InformationOnly)\w*Warning\b: .*|absent from .*packages.* configuration")


def test_building_the_wheel_prints_no_warning(wheel_build: tuple[Path, str]) -> None:
    _wheel, log = wheel_build
    assert "running build_py" in log  # the backend's output is in the log (else the check below is empty)
    assert _PROJECT_WARNING.findall(log) == []


def test_the_editable_build_prints_no_warning(tmp_path: Path) -> None:
    """What `pip install -e .` runs (PEP 660's build_editable) in this environment's setuptools."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=_IGNORE)
    proc = subprocess.run([sys.executable, "-c", "from setuptools import build_meta as b; "
                                                 f"print(b.build_editable({str(tmp_path)!r}))"],
                          capture_output=True, text=True, cwd=src)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith(".editable-py3-none-any.whl")
    assert _PROJECT_WARNING.findall(proc.stdout + proc.stderr) == []


def test_wheel_contains_migrations_and_guidelines(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "ndcg_labeling/migrations/env.py" in names
    assert "ndcg_labeling/migrations/script.py.mako" in names
    assert {"ndcg_labeling/migrations/versions/0001_initial.py",
            "ndcg_labeling/migrations/versions/0002_grading_batches.py",
            "ndcg_labeling/migrations/versions/0003_adjudications.py"} <= set(names)
    assert {"ndcg_labeling/guideline_files/relevance-0-3.md", "ndcg_labeling/guideline_files/relevance-0-4.md"} <= set(names)
    assert {"ndcg_labeling/demo_data/queries.csv", "ndcg_labeling/demo_data/runs/bm25.run"} <= set(names)
    assert not any(n.startswith("tests/") for n in names)


def _requirements(wheel: Path) -> tuple[list[Requirement], dict[str, list[Requirement]]]:
    """The wheel's Requires-Dist: (runtime requirements, extra -> requirements)."""
    archive = zipfile.ZipFile(wheel)
    (meta,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    reqs = [Requirement(r) for r in Parser().parsestr(archive.read(meta).decode()).get_all("Requires-Dist") or []]
    runtime = [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]
    extras: dict[str, list[Requirement]] = {}
    for r in reqs:
        for extra in re.findall(r'extra == "([^"]+)"', str(r.marker or "")):
            extras.setdefault(extra, []).append(r)
    return runtime, extras


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(requirements: list[Requirement]) -> dict[str, md.Distribution]:
    """The installed distributions that ``requirements`` pull in, recursively (no extras)."""
    found: dict[str, md.Distribution] = {}
    todo = list(requirements)
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = _canonical(req.name)
        if key in found:
            continue
        dist = md.distribution(req.name)  # PackageNotFoundError: the dev environment lacks a declared dependency
        assert dist.version in req.specifier or not req.specifier, (req, dist.version)
        found[key] = dist
        todo.extend(Requirement(r) for r in dist.requires or [])
    return found


def test_every_import_is_stdlib_or_declared(wheel: Path) -> None:
    """Each module the package imports (at any depth, lazily or not) comes from the standard library,
    the package itself, or a distribution the wheel declares (runtime, or an extra for optional
    back-ends such as psycopg and torch)."""
    runtime, extras = _requirements(wheel)
    declared = {_canonical(r.name) for r in runtime} | {_canonical(r.name) for rs in extras.values() for r in rs}
    providers = md.packages_distributions()
    archive = zipfile.ZipFile(wheel)
    undeclared: dict[str, str] = {}
    for name in archive.namelist():
        if not name.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(archive.read(name), filename=name)):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in ("ndcg_labeling", "__future__"):
                    continue
                dists = {_canonical(d) for d in providers.get(top, [])}
                if not dists & declared:
                    undeclared[top] = f"{name}:{node.lineno} ({', '.join(sorted(dists)) or 'not installed'})"
    assert not undeclared, f"imported but not declared in pyproject.toml dependencies: {undeclared}"


@pytest.fixture(scope="module")
def plain_install(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the wheel and links to exactly the distributions of its runtime requirements."""
    root = tmp_path_factory.mktemp("plain-install")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", str(wheel)],
                   check=True)
    deps = root / "deps"
    deps.mkdir()
    runtime, _extras = _requirements(wheel)
    for dist in _closure(runtime).values():
        site = Path(str(dist.locate_file("")))
        for entry in {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            if entry != "__pycache__" and not entry.endswith(".pth") and not (deps / entry).exists():
                (deps / entry).symlink_to(site / entry)
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "declared_deps.pth").write_text(f"{deps}\n")
    return venv


def _run(venv: Path, args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NDCG_LABELING_DB")}
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, input=stdin, env=env, timeout=600)


def test_plain_install_has_no_undeclared_distribution(plain_install: Path, tmp_path: Path) -> None:
    py = str(plain_install / "bin" / "python")
    probe = _run(plain_install, [py, "-c", "import ndcg_labeling, importlib.util as u; print(ndcg_labeling.__file__); "
                                           "print(u.find_spec('hypothesis'), u.find_spec('pytest'))"], tmp_path)
    assert probe.returncode == 0, probe.stderr
    where, hidden = probe.stdout.splitlines()
    assert where.startswith(str(plain_install)), where
    # what the package does not declare is not there to hide a missing one (click is: uvicorn needs it;
    # that no module of ours imports click undeclared is test_every_import_is_stdlib_or_declared's job)
    assert hidden == "None None"


def test_every_module_imports_from_a_plain_install(wheel: Path, plain_install: Path, tmp_path: Path) -> None:
    """Every module imports; only a module made for an extra (metrics/_torch.py) may need that extra."""
    _runtime, extras = _requirements(wheel)
    extra_dists = {_canonical(r.name) for rs in extras.values() for r in rs}
    optional = sorted(top for top, dists in md.packages_distributions().items()
                      if {_canonical(d) for d in dists} & extra_dists)
    code = ("import importlib, pkgutil, sys, ndcg_labeling\n"
            f"optional = set({optional!r})\n"
            "needs_extra = []\n"
            "for m in pkgutil.walk_packages(ndcg_labeling.__path__, 'ndcg_labeling.'):\n"
            "    if m.name.startswith(('ndcg_labeling.migrations', 'ndcg_labeling.__main__')):\n"
            "        continue\n"
            "    try:\n"
            "        importlib.import_module(m.name)\n"
            "    except ModuleNotFoundError as exc:\n"
            "        if (exc.name or '').split('.')[0] not in optional:\n"
            "            raise\n"
            "        needs_extra.append(m.name)\n"
            "print(' '.join(needs_extra) or 'none')\n")
    result = _run(plain_install, [str(plain_install / "bin" / "python"), "-c", code], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.stdout.split()) <= {"ndcg_labeling.metrics._torch", "none"}, result.stdout


def test_every_command_help_from_a_plain_install(plain_install: Path, tmp_path: Path) -> None:
    """`ndcg-labeling --help` through the console script, then every command's --help."""
    exe = str(plain_install / "bin" / "ndcg-labeling")
    top = _run(plain_install, [exe, "--help"], tmp_path)
    assert top.returncode == 0 and "Usage: ndcg-labeling" in top.stdout, top.stderr
    assert _run(plain_install, [exe, "--version"], tmp_path).stdout.startswith("ndcg-labeling ")
    code = ("import typer.main\n"
            "from typer.testing import CliRunner\n"
            "from ndcg_labeling.cli import app\n"
            "def walk(cmd, path):\n"
            "    yield path\n"
            "    for name, sub in sorted(getattr(cmd, 'commands', {}).items()):\n"
            "        yield from walk(sub, path + [name])\n"
            "runner = CliRunner()\n"
            "paths = list(walk(typer.main.get_command(app), []))[1:]\n"
            "for path in paths:\n"
            "    result = runner.invoke(app, path + ['--help'])\n"
            "    assert result.exit_code == 0 and 'Usage:' in result.output, (path, result.output)\n"
            "print(len(paths))\n")
    result = _run(plain_install, [str(plain_install / "bin" / "python"), "-c", code], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.strip()) >= 25  # every group and command of the CLI


def test_plain_install_upgrades_imports_grades_and_runs_the_demo(plain_install: Path, tmp_path: Path) -> None:
    exe = str(plain_install / "bin" / "ndcg-labeling")
    url = f"sqlite:///{tmp_path / 'wheel.db'}"

    def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return _run(plain_install, [exe, *args, "--db", url], tmp_path, stdin)

    up = cli("db", "upgrade")
    assert up.returncode == 0, up.stderr
    (tmp_path / "q.csv").write_text("query_id,text,query_type\nq1,hello,navigational\n")
    (tmp_path / "j.csv").write_text("query_id,doc_id,grader,grade\nq1,d1,ann,2\n")
    imp = cli("import", "queries", "q.csv")
    assert imp.returncode == 0 and "1 new" in imp.stdout, imp.stderr
    imp = cli("import", "judgments", "j.csv", "--scale", "0-3", "--create-graders")
    assert imp.returncode == 0 and "1 new" in imp.stdout, imp.stderr
    assert '"judgments": 1' in cli("status", "--format", "json").stdout
    # the guidelines travel too: a batch is created and graded in a scripted session
    (tmp_path / "run.csv").write_text("query_id,doc_id,rank\nq1,d2,1\nq1,d3,2\n")
    for args in (["import", "run", "run.csv", "--system", "s"],
                 ["tasks", "create", "b1", "--scale", "0-3", "--depth", "2", "--overlap", "1", "--graders", "ann"]):
        proc = cli(*args)
        assert proc.returncode == 0, proc.stderr
    session = cli("grade", "b1", "--grader", "ann", stdin="3\nx\n1\n")
    assert session.returncode == 0, session.stderr[-3000:]
    assert "saved: 3 — Perfect" in session.stdout and "Unknown key 'x'" in session.stdout
    assert "saved: 1 — Somewhat relevant" in session.stdout and "Nothing left to grade" in session.stdout
    assert '"judgments": 3' in cli("status", "--format", "json").stdout
    # and the demo data: the main job runs from the installed package
    demo = _run(plain_install, [exe, "demo", "--db", f"sqlite:///{tmp_path / 'demo.db'}", "--out", "demo-out"],
                tmp_path)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert (tmp_path / "demo-out" / "report.html").stat().st_size > 10_000
