"""The TREC Deep Learning 2019 / 2020 passage worlds of the budget tests: the real NIST qrels (graded 0-3,
tests/data/trecdl/README.md) as the oracle, and a field of systems ranking each query's passages.

:func:`real_world`: six real runs per year (tests/data/trecdl/rank_llm: BM25, BM25+RM3, TAS-B, ada-002,
RepLLaMA, SPLADE++ ED; top 30), in trec_eval's order (score descending, ties by document id descending); a
retrieved passage the qrels do not hold is grade 0, as trec_eval counts it.

:func:`make_world`: a simulated field of 12 systems over the judged passages. system ``s`` scores passage ``d`` of a query as
``quality_s * grade_d + topical_d + noise_sd`` (``topical_d`` shared by every system, so the systems agree
with one another as real runs do, ``noise`` their own), and returns its top ``width``. Qualities are spread
so that neighbouring systems differ by a few NDCG points, as the submitted runs of a track do.
"""

from __future__ import annotations

import gzip
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


RUNS = DATA / "rank_llm"


def real_world(year: str, depth: int = 20) -> World:
    """The real runs of ``year`` over the qrels: document codes per query (the judged passages first, in the
    order of their ids, then the unjudged ones as met), a depth-``depth`` pool, the qrels as oracle."""
    qrels = read_qrels(year)
    qids = sorted(qrels, key=int)
    files = sorted((RUNS / year).glob("*.trec.gz"))
    lists: list[dict[str, list[tuple[float, str]]]] = []
    width = 0
    for f in files:
        per: dict[str, list[tuple[float, str]]] = {}
        for line in gzip.decompress(f.read_bytes()).decode().splitlines():
            qid, _, doc, _, score = line.split()[:5]
            per.setdefault(qid, []).append((float(score), doc))
        lists.append(per)
        width = max(width, *(len(v) for v in per.values()))
    codes = [{d: i for i, d in enumerate(sorted(qrels[qid]))} for qid in qids]
    runs = np.full((len(files), len(qids), width), -1, dtype=np.int64)
    for s, per in enumerate(lists):
        for q, qid in enumerate(qids):
            ranked = sorted(per.get(qid, []), key=lambda t: (t[0], t[1]), reverse=True)
            for r, (_, doc) in enumerate(ranked):
                runs[s, q, r] = codes[q].setdefault(doc, len(codes[q]))
    by_code = []
    for q, qid in enumerate(qids):
        names = sorted(codes[q], key=codes[q].__getitem__)
        by_code.append(np.array([qrels[qid].get(d, 0) for d in names], dtype=np.float64))
    pool = build_pool(runs, depth)
    oracle = np.array([by_code[q][c] for q, c in zip(pool.query, pool.code, strict=True)], dtype=np.float64)
    return World(pool=pool, oracle=oracle, runs=runs, grades_by_code=by_code, qids=qids)


COVID = DATA.parent / "trec_covid"


def read_covid_slice() -> tuple[dict[str, dict[str, list[str]]], dict[str, dict[str, int]]]:
    """``(runs, qrels)`` of TREC-COVID round 1 from tests/data/trec_covid (its README): ``runs[run][topic]``
    the run's top-20 document ids in trec_eval's order, ``qrels[topic][doc]`` the grade (0-2)."""
    runs: dict[str, dict[str, list[str]]] = {}
    for line in gzip.decompress((COVID / "runs-rnd1-top20.tsv.gz").read_bytes()).decode().splitlines():
        run, topic, doc, _ = line.split("\t")
        runs.setdefault(run, {}).setdefault(topic, []).append(doc)
    qrels: dict[str, dict[str, int]] = {}
    for line in (COVID / "qrels-rnd1.txt").read_text().splitlines():
        topic, _, doc, grade = line.split()
        qrels.setdefault(topic, {})[doc] = int(grade)
    return runs, qrels


def covid_world(n_systems: int | None = None, n_topics: int | None = None, depth: int = 20) -> World:
    """TREC-COVID round 1 as a world: the runs (sorted by name; the first ``n_systems``) over the first
    ``n_topics`` topics, a depth-``depth`` pool, the qrels as oracle (a pooled document without a judgment
    is grade 0, as trec_eval counts it)."""
    runs_by_name, qrels = read_covid_slice()
    names = sorted(runs_by_name)[:n_systems]
    qids = sorted(qrels, key=int)[:n_topics]
    codes = [{d: i for i, d in enumerate(sorted(qrels[qid]))} for qid in qids]
    runs = np.full((len(names), len(qids), depth), -1, dtype=np.int64)
    for s, name in enumerate(names):
        for q, qid in enumerate(qids):
            for r, doc in enumerate(runs_by_name[name].get(qid, [])[:depth]):
                runs[s, q, r] = codes[q].setdefault(doc, len(codes[q]))
    by_code = []
    for q, qid in enumerate(qids):
        ordered = sorted(codes[q], key=codes[q].__getitem__)
        by_code.append(np.array([qrels[qid].get(d, 0) for d in ordered], dtype=np.float64))
    pool = build_pool(runs, depth)
    oracle = np.array([by_code[q][c] for q, c in zip(pool.query, pool.code, strict=True)], dtype=np.float64)
    return World(pool=pool, oracle=oracle, runs=runs, grades_by_code=by_code, qids=qids)
