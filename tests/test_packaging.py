"""Every Python package of the source tree is listed in pyproject.toml, so the wheel carries it.

The package list is explicit (migrations/, guidelines/ and data/ are mapped into the package), so a new
sub-package that is not added there is silently left out of `pip install .` — the installed tool then
fails with ModuleNotFoundError while every in-tree test passes.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_directory_is_in_the_wheel_list() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ndcg_labeling").rglob("__init__.py")}
    assert found - listed == set(), f"packages missing from [tool.setuptools] packages: {sorted(found - listed)}"
