"""Make the demo's simulated interaction log, ``behavior_log.csv`` (fixed seed; run again to get the same file).

    .venv/bin/python data/make_behavior_log.py

One row per impression of a served list of 10 documents, over the 4 weeks before 2025-11-30 (UTC):
``request_id,query_id,doc_id,position,clicked,ts,watch_ratio,arm``. Each request is one of the demo's
40 queries, served by one arm: ``bm25``, ``dense`` or ``hybrid`` (that system's top 10 of
``runs/*.run``) or ``explore`` (a random order of the three systems' pooled top documents: the
randomized traffic that lets a click model tell position from relevance).

Users follow the position-based model with the hidden ``truth.csv`` grades (a document the truth
does not grade counts as 0): a position is examined with probability ``EXAMINATION[position]``, an
examined document is clicked with probability ``ATTRACTIVENESS[grade]``; ``watch_ratio`` is drawn
around ``WATCH[grade]`` for a click (0 without one). ``ndcg-labeling demo`` derives behavior labels
from this file and calibrates them against the demo's human consensus.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20261130
N_REQUESTS = 4_400
END = 1_764_460_800  # 2025-11-30T00:00:00Z
DAYS = 28
EXAMINATION = np.array([1.0, 0.82, 0.68, 0.56, 0.47, 0.4, 0.34, 0.29, 0.25, 0.22])
ATTRACTIVENESS = np.array([0.04, 0.22, 0.5, 0.8])
WATCH = np.array([0.05, 0.3, 0.6, 0.9])
ARMS = ("bm25", "dense", "hybrid", "explore")


def read_runs() -> dict[str, dict[str, list[str]]]:
    runs: dict[str, dict[str, list[str]]] = {}
    for arm in ARMS[:3]:
        lists: dict[str, list[tuple[int, str]]] = {}
        for line in (HERE / "runs" / f"{arm}.run").read_text(encoding="utf-8").splitlines():
            qid, _q0, doc, rank, *_ = line.split()
            lists.setdefault(qid, []).append((int(rank), doc))
        runs[arm] = {q: [d for _, d in sorted(v)][:10] for q, v in lists.items()}
    return runs


def main() -> None:
    rng = np.random.default_rng(SEED)
    with open(HERE / "truth.csv", encoding="utf-8", newline="") as fh:
        truth = {(r["query_id"], r["doc_id"]): int(r["relevance"]) for r in csv.DictReader(fh)}
    runs = read_runs()
    queries = sorted(runs["bm25"])
    ts = np.sort(rng.uniform(END - DAYS * 86_400, END, N_REQUESTS)).astype(np.int64)
    rows = []
    for i in range(N_REQUESTS):
        query = queries[int(rng.integers(len(queries)))]
        arm = ARMS[int(rng.choice(4, p=[0.25, 0.25, 0.25, 0.25]))]
        if arm == "explore":
            pool = sorted({d for a in ARMS[:3] for d in runs[a][query]})
            shown = [pool[j] for j in rng.permutation(len(pool))[:10]]
        else:
            shown = runs[arm][query]
        for pos, doc in enumerate(shown, start=1):
            grade = truth.get((query, doc), 0)
            clicked = rng.random() < EXAMINATION[pos - 1] and rng.random() < ATTRACTIVENESS[grade]
            watch = float(np.clip(rng.normal(WATCH[grade], 0.12), 0.0, 1.0)) if clicked else 0.0
            rows.append((f"r{i:05d}", query, doc, pos, int(clicked), int(ts[i]), f"{watch:.2f}", arm))
    with open(HERE / "behavior_log.csv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["request_id", "query_id", "doc_id", "position", "clicked", "ts", "watch_ratio", "arm"])
        writer.writerows(rows)


if __name__ == "__main__":
    main()
