"""Ctrl-C (SIGINT) during an import leaves the database exactly as it was before the command.

The command runs in a subprocess (a real signal, the real entry point) through :data:`_PAUSING`: it
writes progress every :data:`CHUNK` rows instead of every 50,000, and stops at its first ``progress:``
line (mid-transaction, rows already written) until the test's SIGINT arrives. The interrupt thus lands
inside the write whatever the machine's speed, on a few thousand rows instead of 300,000 (issue 44).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tests.conftest import invoke

CHUNK = 500
ROWS = 3_000  # several progress steps: the interrupt comes after the first, with more rows to write

_PAUSING = f"""
import signal, sys
import ndcg_labeling.db.bulk as bulk, ndcg_labeling.db.rows as rows
rows.CHUNK = bulk.CHUNK = {CHUNK}

class PauseAtProgress:
    def __init__(self, inner):
        self.inner, self.paused = inner, False
    def write(self, text):
        n = self.inner.write(text)
        if text.startswith("progress: ") and not self.paused:
            self.paused = True
            self.inner.flush()
            signal.pause()  # the test's SIGINT raises KeyboardInterrupt here, inside the write
        return n
    def __getattr__(self, name):
        return getattr(self.inner, name)

sys.stderr = PauseAtProgress(sys.stderr)
sys.argv[0] = "ndcg-labeling"
from ndcg_labeling.cli import main
main()
"""


def _interrupt_at_first_progress(args: list[str]) -> tuple[int, str, str]:
    """Run ``ndcg-labeling ARGS``, SIGINT it at its first progress line: (exit code, that line, stderr)."""
    env = dict(os.environ, NDCG_LABELING_PROGRESS="plain")
    proc = subprocess.Popen([sys.executable, "-c", _PAUSING, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    assert first.startswith("progress: "), first + proc.stderr.read()
    assert int(first.split()[1]) > 0, first  # rows were written in the transaction
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    return proc.returncode, first, err


def test_sigint_during_import_rolls_back(db, tmp_path: Path, runner):
    rng = np.random.default_rng(1)
    path = tmp_path / "big.csv"
    pd.DataFrame({"query_id": [f"q{i // 100}" for i in range(ROWS)], "doc_id": [f"d{i}" for i in range(ROWS)],
                  "grader": "alice", "grade": rng.integers(0, 4, ROWS)}).to_csv(path, index=False)
    assert invoke(runner, db, "graders", "add", "alice").exit_code == 0
    before = db.counts()
    code, _first, err = _interrupt_at_first_progress(["import", "judgments", str(path), "--scale", "0-3",
                                                      "--db", db.url])
    assert code == 130, (code, err)
    assert "Interrupted: nothing was written." in err
    assert "Traceback" not in err
    assert db.counts() == before


def test_sigint_during_consensus_keeps_the_previous_labels(db, tmp_path: Path, runner):
    """A consensus run replaces the labels of its scope; interrupted half way, the old labels stay."""
    items = ROWS
    rng = np.random.default_rng(2)
    path = tmp_path / "grades.csv"
    pd.DataFrame({"query_id": np.repeat([f"q{i // 100}" for i in range(items)], 2),
                  "doc_id": np.repeat([f"d{i}" for i in range(items)], 2),
                  "grader": np.tile(["alice", "bob"], items),
                  "grade": rng.integers(0, 4, 2 * items)}).to_csv(path, index=False)
    assert invoke(runner, db, "import", "judgments", str(path), "--scale", "0-3", "--create-graders").exit_code == 0
    assert invoke(runner, db, "consensus", "--method", "median").exit_code == 0
    from sqlalchemy import text

    def labels() -> list[tuple]:
        with db.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(
                "SELECT query_id, document_id, value, method FROM consensus_labels ORDER BY query_id, document_id"))]

    before_labels = labels()
    before = db.counts()
    assert len(before_labels) == items
    # old labels deleted, the first CHUNK new ones written: mid-transaction
    code, first, err = _interrupt_at_first_progress(["consensus", "--method", "mean", "--db", db.url])
    assert int(first.split()[1]) < items, first  # interrupted before the last label was written
    assert code == 130, (code, err)
    assert db.counts() == before
    assert labels() == before_labels
