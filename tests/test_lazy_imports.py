"""Commands that only read a little (``tasks status``, ``tasks list``, ``adjudicate list``) start without
loading pandas, numba or matplotlib: their modules import those inside the functions that need them."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["ndcg_labeling.pipeline.tasks", "ndcg_labeling.pipeline.tasks.status",
                                    "ndcg_labeling.pipeline.consensus", "ndcg_labeling.pipeline.lookups"])
def test_module_loads_no_heavy_package(module: str) -> None:
    code = (f"import sys, {module}\n"
            "print(','.join(m for m in ('pandas', 'numba', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"{module} loaded {out}"
