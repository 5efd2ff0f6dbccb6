"""The agreement and consensus kernels load neither the database layer nor pandas."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["ndcg_labeling.agreement", "ndcg_labeling.consensus"])
def test_kernel_imports_neither_sqlalchemy_nor_pandas(module: str) -> None:
    code = (
        "import sys\n"
        f"import {module}\n"
        "loaded = sorted(m for m in ('sqlalchemy', 'pandas') if m in sys.modules)\n"
        "print(','.join(loaded))\n"
        "assert 'krippendorff' in sys.modules and 'numpy' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"{module} loaded {done.stdout.strip()}"


@pytest.mark.parametrize("module", ["ndcg_labeling.stats", "ndcg_labeling.quality"])
def test_statistics_kernel_imports_neither_sqlalchemy_nor_pandas(module: str) -> None:
    code = (
        "import sys\n"
        f"import {module}\n"
        "loaded = sorted(m for m in ('sqlalchemy', 'pandas') if m in sys.modules)\n"
        "print(','.join(loaded))\n"
        "assert 'numpy' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"{module} loaded {done.stdout.strip()}"
