"""The console script ends without the interpreter's teardown (``ndcg_labeling.__main__._leave``): its
exit status, output and files must be exactly those of a normal exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXE = [sys.executable, "-m", "ndcg_labeling"]


def test_status_output_and_exit_codes_survive(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    missing = subprocess.run([*EXE, "status", "--db", url], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and missing.stderr.startswith("Error: no database at"), missing.stderr
    assert subprocess.run([*EXE, "db", "upgrade", "--db", url], capture_output=True, timeout=120).returncode == 0
    done = subprocess.run([*EXE, "status", "--db", url, "--format", "json"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip().startswith("{") and done.stdout.strip().endswith("}")
    usage = subprocess.run([*EXE, "status", "--no-such-option"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "No such option" in usage.stderr


def test_output_is_that_of_a_normal_exit_and_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    normal = ("import sys; sys.argv = ['ndcg-labeling', *sys.argv[1:]]\n"
              "from ndcg_labeling.cli import main\nmain()\n")  # SystemExit, then the usual teardown
    for argv in (["--help"], ["import", "--help"], ["report", "--help"]):
        ours = subprocess.run([*EXE, *argv], capture_output=True, text=True, timeout=120)
        plain = subprocess.run([sys.executable, "-c", normal, *argv], capture_output=True, text=True, timeout=120)
        assert ours.returncode == plain.returncode == 0
        # the same text after the usage line (which names the program as each was started)
        assert len(ours.stdout) > 500 and ours.stdout.splitlines()[1:] == plain.stdout.splitlines()[1:], argv
    head = subprocess.run(f"{sys.executable} -m ndcg_labeling report --help | head -c 10", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert head.stdout == "Usage: pyt" and "Traceback" not in head.stderr, head.stderr
