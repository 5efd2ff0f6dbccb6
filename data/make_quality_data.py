"""Make the simulated grader-quality data set in data/quality/ (fixed seed; the output is committed).

The truth is known: every (query, document) has a true 0-3 grade. Three query types of 12 queries each
(navigational, informational, long-tail), 8 candidate documents per query ranked by 4 systems of
different quality (TREC runs), and per query one more document that no system returns: the gold items
(gold.csv, with an explanation), graded by their true grade.

Graders (grader_profiles.json; the simulation is ndcg_labeling.demo.quality.simulate):
* ana, ben, chloe: accurate (the true grade with probability 0.9, else one off);
* dev: random (a uniform grade, whatever the truth);
* emma: lenient (one grade too high with probability 0.7);
* llm-judge (kind model, judge.csv): accurate (0.9) on navigational and informational queries, a
  uniform random grade on long-tail ones.

    python data/make_quality_data.py  # writes data/quality/
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

SEED = 20261203
OUT = Path(__file__).resolve().parent / "quality"
TYPES = ("navigational", "informational", "long-tail")
PER_TYPE = 12
CANDIDATES = 8
SYSTEMS = {"exact": 0.4, "semantic": 0.8, "hybrid": 0.6, "random-ish": 2.5}  # noise of each system's score
WORDS = ("river", "garden", "engine", "museum", "recipe", "ticket", "weather", "guitar", "library", "harbor",
         "mountain", "battery", "castle", "orchard", "planet", "violin", "desert", "bakery", "compass", "lantern")
PROFILES = {
    "ana": {"kind": "accurate", "p": 0.9},
    "ben": {"kind": "accurate", "p": 0.9},
    "chloe": {"kind": "accurate", "p": 0.9},
    "dev": {"kind": "random"},
    "emma": {"kind": "lenient", "p": 0.7},
}
JUDGE = {"name": "llm-judge", "p": 0.9, "noisy_type": "long-tail"}
EXPLAIN = {0: "Off topic: nothing here answers the query.", 1: "Related words, but it does not answer the query.",
           2: "Answers part of the query.", 3: "Exactly what the query asks for."}


def _write(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def judge_grade(truth: int, query_type: str, rng: np.random.Generator) -> int:
    if query_type == JUDGE["noisy_type"]:
        return int(rng.integers(0, 4))
    if rng.random() < float(JUDGE["p"]):  # type: ignore[arg-type]
        return truth
    return int(np.clip(truth + rng.choice([-1, 1]), 0, 3))


def main() -> None:
    rng = np.random.default_rng(SEED)
    (OUT / "runs").mkdir(parents=True, exist_ok=True)
    queries, docs, truth, gold, judge = [], [], [], [], []
    runs: dict[str, list[str]] = {s: [] for s in SYSTEMS}
    d = 0
    for t, query_type in enumerate(TYPES):
        for i in range(PER_TYPE):
            qid = f"QQ{t * PER_TYPE + i + 1:03d}"
            words = rng.choice(WORDS, size=2, replace=False)
            queries.append([qid, f"{words[0]} {words[1]} {query_type.replace('-', ' ')}", query_type])
            grades = rng.integers(0, 4, size=CANDIDATES + 1)
            ids = []
            for k in range(CANDIDATES + 1):
                d += 1
                did = f"QD{d:04d}"
                ids.append(did)
                w = rng.choice(WORDS, size=3, replace=False)
                docs.append([did, f"{w[0].title()} {w[1]} and {words[0]}", f"A page about {w[0]}, {w[1]} and {w[2]}."])
                truth.append([qid, did, int(grades[k])])
            gold.append([qid, ids[-1], int(grades[-1]), EXPLAIN[int(grades[-1])]])
            for k in range(CANDIDATES):
                judge.append([qid, ids[k], JUDGE["name"], judge_grade(int(grades[k]), query_type, rng)])
            for system, noise in SYSTEMS.items():
                scores = grades[:CANDIDATES] + rng.normal(0, noise, CANDIDATES)
                for rank, k in enumerate(np.argsort(-scores, kind="stable")):
                    runs[system].append(f"{qid} Q0 {ids[k]} {rank + 1} {float(scores[k]):.4f} {system}\n")
    _write(OUT / "queries.csv", ["query_id", "text", "query_type"], queries)  # type: ignore[arg-type]
    _write(OUT / "documents.csv", ["doc_id", "title", "body"], docs)  # type: ignore[arg-type]
    _write(OUT / "truth.csv", ["query_id", "doc_id", "relevance"], truth)  # type: ignore[arg-type]
    _write(OUT / "gold.csv", ["query_id", "doc_id", "grade", "explanation"], gold)  # type: ignore[arg-type]
    _write(OUT / "judge.csv", ["query_id", "doc_id", "grader", "grade"], judge)  # type: ignore[arg-type]
    _write(OUT / "graders.csv", ["grader"], [[g] for g in PROFILES])
    for system, lines in runs.items():
        (OUT / "runs" / f"{system}.run").write_text("".join(lines), encoding="utf-8")
    profiles = {"seed": SEED, "graders": PROFILES, "judge": JUDGE}
    (OUT / "grader_profiles.json").write_text(json.dumps(profiles, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
