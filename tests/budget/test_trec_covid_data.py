"""TREC-COVID round 1 in tests/data/trec_covid: the slice is what its README says, it reproduces the published
leaderboard's NDCG@10, and the benchmark's loader checks what it copies (benchmarks/trec_covid.py)."""

from __future__ import annotations

import csv
import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest

from ndcg_labeling.metrics import batch_ndcg
from tests.budget.dl_world import COVID, covid_world, read_covid_slice
from tests.conftest import load_script

ROOT = Path(__file__).resolve().parents[2]


def _loader():  # type: ignore[no-untyped-def]
    return load_script(ROOT / "benchmarks" / "trec_covid.py")


def test_slice_matches_its_readme_checksums() -> None:
    readme = (COVID / "README.md").read_text()
    text = gzip.decompress((COVID / "runs-rnd1-top20.tsv.gz").read_bytes())
    assert hashlib.sha256(text).hexdigest() in readme
    assert hashlib.sha256((COVID / "qrels-rnd1.txt").read_bytes()).hexdigest() in readme
    runs, qrels = read_covid_slice()
    assert len(runs) == 143 and len(qrels) == 30
    assert sum(len(v) for v in qrels.values()) == 8691
    assert max(len(docs) for per in runs.values() for docs in per.values()) == 20


def test_slice_reproduces_the_published_ndcg10() -> None:
    """NDCG@10 (trec_eval's: linear gain, the ideal from every judgment) of each run from the slice against the
    round-1 leaderboard NIST published (4 decimals)."""
    runs, qrels = read_covid_slice()
    with (COVID / "leaderboard-rnd1-ndcg10.csv").open() as fh:
        published = {row["run"]: float(row["ndcg@10"]) for row in csv.DictReader(fh)}
    topics = sorted(qrels, key=int)
    ideal = np.full((len(topics), max(len(qrels[t]) for t in topics)), np.nan)
    for q, t in enumerate(topics):
        ideal[q, : len(qrels[t])] = list(qrels[t].values())
    off = {}
    for run, per in runs.items():
        labels = np.full((len(topics), 10), np.nan)
        scores = np.full((len(topics), 10), np.nan)
        for q, t in enumerate(topics):
            docs = per.get(t, [])[:10]
            labels[q, : len(docs)] = [qrels[t].get(d, 0) for d in docs]
            scores[q, : len(docs)] = -np.arange(len(docs))
        got = float(np.mean(batch_ndcg(scores, labels, 10, gain="linear", ideal_labels=ideal)))
        if abs(got - published[run]) > 5e-5:
            off[run] = (round(got, 4), published[run])
    # BERT: near-tied scores that NIST's trec_eval read in single precision (tests/data/trec_covid/README.md)
    assert off == {"BERT": (0.1736, 0.1731)}


def test_world_from_the_slice() -> None:
    w = covid_world(n_systems=5, n_topics=3)
    assert w.pool.n_systems == 5 and w.pool.n_queries == 3
    assert set(np.unique(w.oracle)) <= {0.0, 1.0, 2.0}
    assert (w.pool.min_rank <= 20).all()


def test_loader_refuses_a_missing_or_altered_file(tmp_path: Path) -> None:
    mod = _loader()
    with pytest.raises(mod.MissingData, match="not cached"):
        mod.fetch(None, tmp_path / "cache")
    source = tmp_path / "src"
    with pytest.raises(mod.MissingData, match="no round1/"):
        mod.fetch(source, tmp_path / "cache")
    first = sorted(mod.expected_sums())[0]
    (source / first).parent.mkdir(parents=True)
    (source / first).write_text("1 Q0 doc 1 1.0 altered\n")
    with pytest.raises(mod.MissingData, match="sha256"):
        mod.fetch(source, tmp_path / "cache")
