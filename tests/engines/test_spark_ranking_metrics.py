# ruff: noqa: F811 - the `spark` fixture is imported from spark_fixture and named as a parameter
"""Spark's own ``pyspark.mllib.evaluation.RankingMetrics.ndcgAt`` as a peer of ``eval``'s NDCG.

Where the two definitions meet, the numbers agree (to 1e-12); where they part, the difference is shown
here and documented in docs/scale.md ("Spark's RankingMetrics"):

* binary relevance (the only kind before Spark 3.4; the 2-tuple form today): every listed label is
  relevant with gain 1 -> equals ``ndcg_cut.K`` on binary qrels, and ``ndcg.1=1,2=1,3=1`` on graded ones;
* graded relevance (Scala, Spark >= 3.4: gain ``2**rel - 1``, ideal DCG over the labels in the order
  given) is not reached from PySpark: its wrapper passes two columns, the 3-tuple form scores binary;
* ties: Spark ranks the predicted list as given; trec_eval orders equal scores by document id
  descending -> equal only when the caller sorts ties that way.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from pyspark.mllib.evaluation import RankingMetrics
from spark_fixture import spark  # noqa: F401 - the fixture

from ndcg_labeling.scoring.evaluate import evaluate_files

# One worker runs every Spark test (make test: --dist loadgroup), so one JVM starts.
pytestmark = pytest.mark.xdist_group("spark")


def _data(seed: int, graded: bool) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Every query has a relevant document (Spark averages label-less queries as 0, trec_eval skips
    them); distinct scores (no ties) unless a test adds them."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(40):
        docs = [f"D{d:03d}" for d in rng.choice(200, int(rng.integers(3, 30)), replace=False)]
        labels = rng.choice([0, 1, 2, 3] if graded else [0, 1], len(docs)).tolist()
        labels[0] = max(labels[0], 1)
        qrels[f"q{q}"] = dict(zip(docs, labels, strict=True))
        ranked = [f"D{d:03d}" for d in rng.choice(200, int(rng.integers(5, 40)), replace=False)]
        run[f"q{q}"] = dict(zip(ranked, rng.permutation(len(ranked)).astype(float).tolist(), strict=True))
    return qrels, run


def _write(tmp_path: Path, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> tuple[Path, Path]:
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {r}\n" for q, ds in qrels.items() for d, r in ds.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, ds in run.items() for d, s in ds.items()))
    return tmp_path / "qrels", tmp_path / "run"


def _ours(tmp_path: Path, qrels, run, measure: str) -> float:
    q_path, r_path = _write(tmp_path, qrels, run)
    result = evaluate_files(q_path, r_path, [measure])
    name = next(c.name for c in result.columns if c.family.startswith("ndcg"))
    return float(result.summary[name])


def _ranked(scores: dict[str, float]) -> list[str]:
    """The list as the caller hands it to Spark: by score descending (ties: as the dict has them)."""
    return sorted(scores, key=lambda d: -scores[d])


def _spark_ndcg(spark, rows: list[tuple], k: int) -> float:
    return float(RankingMetrics(spark.sparkContext.parallelize(rows, 2)).ndcgAt(k))


def test_binary_relevance_equals_ndcg_cut(spark, tmp_path):
    qrels, run = _data(1, graded=False)
    rows = [(_ranked(run[q]), [d for d, r in qrels[q].items() if r > 0]) for q in qrels]
    for k in (5, 10):
        assert _spark_ndcg(spark, rows, k) == pytest.approx(_ours(tmp_path, qrels, run, f"ndcg_cut.{k}"), abs=1e-12)


def test_binary_mode_on_graded_labels_ignores_the_grades(spark, tmp_path):
    qrels, run = _data(2, graded=True)
    rows = [(_ranked(run[q]), [d for d, r in qrels[q].items() if r > 0]) for q in qrels]
    spark_binary = _spark_ndcg(spark, rows, 1000)
    assert spark_binary == pytest.approx(_ours(tmp_path, qrels, run, "ndcg.1=1,2=1,3=1"), abs=1e-12)
    assert abs(spark_binary - _ours(tmp_path, qrels, run, "ndcg")) > 1e-3  # trec_eval's gains are the grades


def test_graded_relevance_values_from_python_act_as_binary(spark, tmp_path):
    # Spark's Scala RankingMetrics (>= 3.4) has a graded form (gain 2**rel - 1, the ideal DCG over the
    # labels in the order given); PySpark's wrapper hands the JVM the first two columns only, so the
    # 3-tuple form still scores binary relevance (observed on PySpark 4.3): the grades change nothing.
    qrels, run = _data(3, graded=True)
    rows = []
    for q, ds in qrels.items():
        labels = sorted(d for d in ds if ds[d] > 0)
        rows.append((_ranked(run[q]), labels, [float(ds[d]) for d in labels]))
    graded = _spark_ndcg(spark, rows, 1000)
    assert graded == pytest.approx(_ours(tmp_path, qrels, run, "ndcg.1=1,2=1,3=1"), abs=1e-12)
    assert abs(graded - _ours(tmp_path, qrels, run, "ndcg.1=1,2=3,3=7")) > 1e-3  # not exponential gains
    assert abs(graded - _ours(tmp_path, qrels, run, "ndcg")) > 1e-3  # nor trec_eval's linear gains
    # by hand: the grade-3 document ranked below the grade-1 one still scores 1 (binary: both relevant)
    assert _spark_ndcg(spark, [(["b", "a"], ["a", "b"], [3.0, 1.0])], 2) == pytest.approx(1.0, abs=1e-12)


def test_ties_spark_keeps_the_given_order_trec_eval_sorts_by_doc_id_descending(spark, tmp_path):
    qrels = {"q": {"a": 1, "b": 0, "c": 0}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}  # one three-way tie: trec_eval ranks c, b, a
    ours = _ours(tmp_path, qrels, run, "ndcg_cut.3")
    assert ours == pytest.approx(1 / math.log2(4), abs=1e-12)  # a at rank 3, by hand
    assert _spark_ndcg(spark, [(["a", "b", "c"], ["a"])], 3) == pytest.approx(1.0, abs=1e-12)  # a first as given
    assert _spark_ndcg(spark, [(["c", "b", "a"], ["a"])], 3) == pytest.approx(ours, abs=1e-12)
