"""The README's shell blocks run verbatim, in order, on a fresh copy of the repository (issue 45).

A newcomer runs the ```sh blocks from "Set-up" on (the ```shell blocks are examples, not run): the copy
holds exactly the tracked files (``git ls-files``), its ``.venv`` is a link to this environment (not
rebuilt), ``make test`` is skipped and ``make demo`` runs the command its Makefile recipe wraps. Every
block runs in one bash with ``set -e``, so a missing file or a command not on the PATH fails the test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def sh_blocks(readme: str) -> list[str]:
    """The bodies of the ```sh fenced blocks, in order."""
    return re.findall(r"^```sh\n(.*?)^```$", readme, flags=re.S | re.M)


def make_recipe(makefile: str, target: str) -> list[str]:
    """The command lines of ``target``'s recipe, with ``$(BIN)`` as ``.venv/bin``."""
    body = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert body, f"no {target}: target in the Makefile"
    return [line.strip().replace("$(BIN)", ".venv/bin") for line in body.group(1).splitlines()]


def script(readme: str, makefile: str) -> str:
    lines = ["set -euo pipefail"]
    for block in sh_blocks(readme):
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command == "make test":
                continue
            lines.extend(make_recipe(makefile, "demo") if command == "make demo" else [line])
    return "\n".join(lines) + "\n"


def test_the_script_holds_the_first_session():
    text = script((ROOT / "README.md").read_text(encoding="utf-8"), (ROOT / "Makefile").read_text(encoding="utf-8"))
    assert "make " not in text and ".venv/bin/ndcg-labeling demo" in text
    assert "source .venv/bin/activate" in text and "ndcg-labeling report" in text and "tasks export" in text


@pytest.mark.slow
def test_readme_shell_blocks_run_verbatim_on_a_fresh_copy(tmp_path: Path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    copy = tmp_path / "clone"
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    (copy / ".venv").symlink_to(Path(sys.prefix))  # this environment, as `make demo` would have built it
    text = script((copy / "README.md").read_text(encoding="utf-8"), (copy / "Makefile").read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items() if k not in ("NDCG_LABELING_DB", "VIRTUAL_ENV", "PYTHONPATH")}
    env["PYTHONPATH"] = str(copy)  # the copy's package, not the one the editable install points at
    proc = subprocess.run(["bash", "-c", text], cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert (copy / "demo-out" / "report.html").is_file() and (copy / "report.html").is_file()
    assert (copy / "relevance.db").is_file() and (copy / "ann.csv").read_text().startswith("item")
