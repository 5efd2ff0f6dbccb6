"""``pip install .`` ships the workspace: the web package, its templates and static files, and its
runtime dependencies (fastapi, uvicorn, jinja2, python-multipart) without any extra."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "ndcg_labeling" / "web"


def test_templates_and_static_files_are_package_data():
    """Every data file under web/ is matched by the package-data patterns of the package of its folder
    (each data folder is a package of its own, so setuptools warns for none of them)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    assert "ndcg_labeling.web" in setuptools["packages"]
    files = [p.relative_to(WEB) for p in WEB.rglob("*") if p.is_file() and p.suffix != ".py"
             and "__pycache__" not in p.parts]
    assert files
    for f in files:
        package = ".".join(("ndcg_labeling", "web", *f.parent.parts))
        assert package in setuptools["packages"], f
        patterns = setuptools["package-data"].get(package, [])
        assert any(fnmatch.fnmatch(f.name, pat) for pat in patterns), (f, patterns)


def test_runtime_dependencies_are_declared_without_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {d.split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in project["dependencies"]}
    assert {"fastapi", "uvicorn", "jinja2", "python-multipart"} <= names
    dev = {d.split(">")[0].strip().lower() for d in project["optional-dependencies"]["dev"]}
    assert {"httpx", "playwright"} <= dev
