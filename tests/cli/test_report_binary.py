"""``report --gain binary``: implicit-feedback NDCG. A label >= --relevant-threshold counts 1, any other
judged label 0, then linear gain, so the ideal DCG is the sum of the first R discounts. The peer is
pytrec_eval (trec_eval's C code) on the test's own qrels binarized at the same threshold: ``ndcg_cut_10``
and ``P_10`` per query (P@10 checks that mrr/map/p keep seeing the same relevant documents)."""

from __future__ import annotations

import json

import pytest
import pytrec_eval

from tests.cli.test_report_cli import SYSTEMS, load, make_dataset
from tests.conftest import invoke


@pytest.mark.parametrize("threshold", [1, 2])
def test_binary_gain_matches_trec_eval_on_binarized_qrels(runner, sqlite_db, tmp_path, threshold):
    data = make_dataset(tmp_path, seed=26)
    load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "report", "--gain", "binary", "--relevant-threshold", str(threshold),
                    "--metric", "ndcg@10", "--metric", "p@10", "--per-query", "--format", "json",
                    "--empty", "zero", "--missing", "skip")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["options"]["gain"] == "binary" and report["options"]["relevant_threshold"] == threshold
    qrels = {q: {d: int(v >= threshold) for d, v in rel.items()} for q, rel in data["qrels"].items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut", "P"})
    n_compared = 0
    for s in SYSTEMS:
        ours = report["per_query"][s]
        theirs = evaluator.evaluate(data["runs"][s])
        assert set(ours) == set(theirs)
        for q, measures in theirs.items():
            assert ours[q]["ndcg@10"] == pytest.approx(measures["ndcg_cut_10"], abs=1e-12), (s, q)
            assert ours[q]["p@10"] == pytest.approx(measures["P_10"], abs=1e-12), (s, q)
            n_compared += 1
    assert n_compared > 70
    # graded labels were in play: linear gain on them differs from binary somewhere
    graded = pytrec_eval.RelevanceEvaluator(data["qrels"], {"ndcg_cut"}).evaluate(data["runs"][SYSTEMS[0]])
    assert any(abs(graded[q]["ndcg_cut_10"] - report["per_query"][SYSTEMS[0]][q]["ndcg@10"]) > 1e-6 for q in graded)


def test_binary_gain_is_named_in_the_table_and_refused_where_unsupported(runner, sqlite_db, tmp_path):
    make_dataset(tmp_path, seed=26, n_queries=8)
    load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "report", "--gain", "binary", "--relevant-threshold", "2",
                    "--metric", "ndcg@10", "--format", "md")
    assert result.exit_code == 0, result.output
    assert "binary gain: a label >= 2 is 1" in result.stdout
    result = invoke(runner, sqlite_db, "report", "--estimator", "inferred", "--batch", "b", "--gain", "binary")
    assert result.exit_code != 0
    assert "--estimator inferred takes exponential or linear gain, not binary" in result.output


def test_online_report_refuses_binary_gain(runner, sqlite_db, tmp_path):
    result = invoke(runner, sqlite_db, "online", "report", str(tmp_path / "log.parquet"), "--baseline", "a",
                    "--gain", "binary")
    assert result.exit_code == 1
    assert "Error: --gain: online report takes exponential or linear, got 'binary'" in result.output
