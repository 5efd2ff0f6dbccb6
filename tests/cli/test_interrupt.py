"""Ctrl-C (SIGINT) during an import leaves the database exactly as it was before the command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROWS = 300_000


def test_sigint_during_import_rolls_back(db, tmp_path: Path):
    rng = np.random.default_rng(1)
    path = tmp_path / "big.csv"
    pd.DataFrame({"query_id": [f"q{i // 100}" for i in range(ROWS)], "doc_id": [f"d{i}" for i in range(ROWS)],
                  "grader": "alice", "grade": rng.integers(0, 4, ROWS)}).to_csv(path, index=False)
    exe = [sys.executable, "-m", "ndcg_labeling"]
    subprocess.run([*exe, "graders", "add", "alice", "--db", db.url], check=True, capture_output=True)
    before = db.counts()
    env = dict(os.environ, NDCG_LABELING_PROGRESS="plain")
    proc = subprocess.Popen([*exe, "import", "judgments", str(path), "--scale", "0-3", "--db", db.url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the first chunk of rows is written inside the transaction
    assert first.startswith("progress: "), first
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Interrupted: nothing was written." in err
    assert "Traceback" not in err
    assert db.counts() == before


def test_sigint_during_consensus_keeps_the_previous_labels(db, tmp_path: Path):
    """A consensus run replaces the labels of its scope; interrupted half way, the old labels stay."""
    items = 120_000
    rng = np.random.default_rng(2)
    path = tmp_path / "grades.csv"
    pd.DataFrame({"query_id": np.repeat([f"q{i // 100}" for i in range(items)], 2),
                  "doc_id": np.repeat([f"d{i}" for i in range(items)], 2),
                  "grader": np.tile(["alice", "bob"], items),
                  "grade": rng.integers(0, 4, 2 * items)}).to_csv(path, index=False)
    exe = [sys.executable, "-m", "ndcg_labeling"]
    subprocess.run([*exe, "import", "judgments", str(path), "--scale", "0-3", "--create-graders", "--db", db.url],
                   check=True, capture_output=True)
    subprocess.run([*exe, "consensus", "--method", "median", "--db", db.url], check=True, capture_output=True)
    from sqlalchemy import text

    def labels() -> list[tuple]:
        with db.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(
                "SELECT query_id, document_id, value, method FROM consensus_labels ORDER BY query_id, document_id"))]

    before_labels = labels()
    before = db.counts()
    assert len(before_labels) == items
    env = dict(os.environ, NDCG_LABELING_PROGRESS="plain")
    proc = subprocess.Popen([*exe, "consensus", "--method", "mean", "--db", db.url], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # old labels deleted, the first 50,000 new ones written: mid-transaction
    assert first.startswith("progress: "), first
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert db.counts() == before
    assert labels() == before_labels
