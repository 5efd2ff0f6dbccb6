"""The TREC Deep Learning 2019 / 2020 passage worlds of the budget tests: the real NIST qrels (graded 0-3,
tests/data/trecdl/README.md) as the oracle, and a field of systems ranking each query's judged passages.

The systems are simulated (see the README for why): system ``s`` scores passage ``d`` of a query as
``quality_s * grade_d + topical_d + noise_sd`` (``topical_d`` shared by every system, so the systems agree
with one another as real runs do, ``noise`` their own), and returns its top ``width``. Qualities are spread
so that neighbouring systems differ by a few NDCG points, as the submitted runs of a track do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ndcg_labeling.budget.pool import Pool, build_pool

DATA = Path(__file__).resolve().parents[1] / "data" / "trecdl"
YEARS = {"dl19": "qrels.dl19-passage.txt", "dl20": "qrels.dl20-passage.txt"}


def read_qrels(year: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in (DATA / YEARS[year]).read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    return qrels


@dataclass(frozen=True)
class World:
    pool: Pool
    oracle: np.ndarray          # (pairs,) the qrels grade of each pooled pair
    runs: np.ndarray            # (systems, queries, width) document codes
    grades_by_code: list[np.ndarray]  # per query: grade of each document code
    qids: list[str]


def make_world(year: str, n_systems: int = 12, width: int = 100, depth: int = 20, seed: int = 31) -> World:
    qrels = read_qrels(year)
    qids = sorted(qrels, key=int)
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.35, 1.6, n_systems)
    runs = np.full((n_systems, len(qids), width), -1, dtype=np.int64)
    by_code = []
    for q, qid in enumerate(qids):
        grades = np.array([qrels[qid][d] for d in sorted(qrels[qid])], dtype=np.float64)
        by_code.append(grades)
        topical = rng.normal(0.0, 1.0, grades.size)
        for s in range(n_systems):
            score = quality[s] * grades + topical + rng.normal(0.0, 1.0, grades.size)
            top = np.argsort(-score, kind="stable")[:width]
            runs[s, q, : top.size] = top
    pool = build_pool(runs, depth)
    oracle = np.array([by_code[q][c] for q, c in zip(pool.query, pool.code, strict=True)], dtype=np.float64)
    return World(pool=pool, oracle=oracle, runs=runs, grades_by_code=by_code, qids=qids)
