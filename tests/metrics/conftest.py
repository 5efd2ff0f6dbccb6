"""Random ragged ranking data shared by the metric tests (as fixtures: no tests/metrics/__init__.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest


@dataclass
class RaggedData:
    """``n`` queries: NaN-padded scores and labels, ideal labels with judged-but-unretrieved docs,
    and the same data as trec-style dicts (``qrels[q][doc] = label``, ``run[q][doc] = score``)."""

    scores: np.ndarray
    labels: np.ndarray
    ideal: np.ndarray
    qrels: dict[str, dict[str, int]]
    run: dict[str, dict[str, float]]


def make_ragged(n: int, width: int = 30, seed: int = 0, max_label: int = 4) -> RaggedData:
    rng = np.random.default_rng(seed)
    scores = np.full((n, width), np.nan)
    labels = np.full((n, width), np.nan)
    extra_max = 10
    ideal = np.full((n, width + extra_max), np.nan)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n):
        length = int(rng.integers(1, width + 1))
        # Distinct scores (trec_eval breaks ties by doc id, arrays by column: avoid ties here).
        s = rng.permutation(length * 7)[:length].astype(float) / 7.0 + rng.random()
        lab = rng.integers(0, max_label + 1, size=length).astype(float)
        judged = rng.random(length) < 0.8
        lab[~judged] = np.nan
        # Columns in a random order, padding scattered between them.
        cols = np.sort(rng.choice(width, size=length, replace=False))
        scores[q, cols] = s
        labels[q, cols] = lab
        extra = rng.integers(0, max_label + 1, size=int(rng.integers(0, extra_max + 1))).astype(float)
        judged_labels = np.concatenate([lab[judged], extra])
        ideal[q, : len(judged_labels)] = judged_labels
        qid = f"q{q}"
        run[qid] = {f"d{j}": float(s[j]) for j in range(length)}
        qrels[qid] = {f"d{j}": int(lab[j]) for j in range(length) if judged[j]}
        qrels[qid].update({f"u{j}": int(v) for j, v in enumerate(extra)})
        if not qrels[qid]:
            qrels[qid] = {"never-retrieved": 0}
            ideal[q, 0] = 0.0
    return RaggedData(scores, labels, ideal, qrels, run)


@pytest.fixture(scope="session")
def ragged() -> RaggedData:
    return make_ragged(2000)
