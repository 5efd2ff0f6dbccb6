# ruff: noqa: F811 - the `spark` fixture is imported from spark_fixture and named as a parameter
"""``eval --engine spark`` prints exactly what the embedded ``eval`` prints (and trec_eval 10, whose own
test outputs lie in tests/data/trec_eval): the same text, the same per-query values, the same errors;
TREC or Parquet files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from spark_fixture import spark  # noqa: F401 - the fixture
from typer.testing import CliRunner

from ndcg_labeling.cli import app
from ndcg_labeling.errors import InputFileError
from ndcg_labeling.scoring.evaluate import evaluate_files
from tests.trec.test_reference_outputs import CASES, DATA  # trec_eval's test Makefile cases

# One worker runs every Spark test (make test: --dist loadgroup), so one JVM starts.
pytestmark = pytest.mark.xdist_group("spark")

runner = CliRunner()


def _eval(args: list[str]):
    files = {"qrels.test", "qrels.rel_level", "results.test", "results.trunc"}
    return runner.invoke(app, ["eval", *[str(DATA / a) if a in files else a for a in args]])


@pytest.mark.parametrize(("expected", "args"), CASES, ids=[c[0] for c in CASES])
def test_spark_prints_what_the_embedded_eval_and_trec_eval_print(spark, expected, args):
    embedded = _eval(args)
    on_spark = _eval([*args, "--engine", "spark"])
    assert embedded.exit_code == 0 and on_spark.exit_code == 0, on_spark.output
    assert on_spark.stdout == embedded.stdout == (DATA / expected).read_text()


def _random_files(tmp_path: Path, seed: int = 1, n_queries: int = 60) -> tuple[Path, Path]:
    """Graded labels (-1..3), heavy score ties, queries missing from the run or the qrels."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(n_queries):
        qid = f"q{q:03d}" if q % 4 else f"topic-{q}"
        judged = rng.choice(80, int(rng.integers(1, 30)), replace=False)
        if q % 9 != 8:
            qrels += [(qid, f"D{d}", int(rng.choice([-1, 0, 0, 1, 2, 3]))) for d in judged]
        if q % 10 != 9:
            docs = rng.choice(100, int(rng.integers(1, 50)), replace=False)
            run += [(qid, f"D{d}", float(rng.integers(0, 6)) / 2.0) for d in docs]
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} {i} {s} sys\n" for i, (q, d, s) in enumerate(run)))
    pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]).to_parquet(tmp_path / "qrels.parquet")
    frame = pd.DataFrame(run, columns=["query_id", "doc_id", "score"]).assign(tag="sys")
    frame.sample(frac=1.0, random_state=3).to_parquet(tmp_path / "run.parquet")  # row order plays no part
    return tmp_path / "qrels", tmp_path / "run"


@pytest.mark.parametrize("flags", [{}, {"complete": True}, {"judged_only": True, "max_docs": 20},
                                   {"relevance_level": 2, "complete": True}])
def test_per_query_values_equal_the_embedded_ones_from_trec_and_parquet(spark, tmp_path, flags):
    qrels, run = _random_files(tmp_path)
    want = evaluate_files(qrels, run, ["all_trec"], **flags)
    for q_path, r_path in [(qrels, run), (tmp_path / "qrels.parquet", tmp_path / "run.parquet")]:
        got = evaluate_files(q_path, r_path, ["all_trec"], engine="spark", spark=spark, **flags)
        assert got.query_ids == want.query_ids and len(got.query_ids) > 40
        g, w = got.table(), want.table()
        assert np.array_equal(np.isnan(g), np.isnan(w))  # -J can leave 0/0 (NaN) in both
        assert np.nanmax(np.abs(g - w)) <= 1e-12
        assert np.array_equal(g, w, equal_nan=True)  # in fact bit for bit: the same kernels, query by query
        assert got.values["relstring"] == want.values["relstring"]
        assert json.dumps(got.summary, sort_keys=True) == json.dumps(want.summary, sort_keys=True)  # NaN == NaN


def test_json_output_is_the_same(spark, tmp_path):
    qrels, run = _random_files(tmp_path, seed=5)
    args = ["eval", str(qrels), str(run), "-m", "ndcg_cut.5,10", "-m", "map", "-q", "--format", "json"]
    embedded, on_spark = runner.invoke(app, args), runner.invoke(app, [*args, "--engine", "spark"])
    assert on_spark.exit_code == 0, on_spark.output
    assert json.loads(on_spark.stdout) == json.loads(embedded.stdout)


def test_bad_lines_and_duplicates_give_the_embedded_error(spark, tmp_path):
    qrels, run = _random_files(tmp_path)
    lines = run.read_text().splitlines()
    bad = tmp_path / "bad_run"
    bad.write_text("\n".join([*lines[:70], "q001 Q0 D5 1 notanumber sys", *lines[70:]]) + "\n")
    dup = tmp_path / "dup_qrels"
    qlines = qrels.read_text().splitlines()
    dup.write_text("\n".join([*qlines, qlines[40]]) + "\n")
    for q_path, r_path in [(qrels, bad), (dup, run)]:
        embedded = runner.invoke(app, ["eval", str(q_path), str(r_path)])
        on_spark = runner.invoke(app, ["eval", str(q_path), str(r_path), "--engine", "spark"])
        assert embedded.exit_code == on_spark.exit_code == 1
        assert on_spark.output == embedded.output and embedded.output.startswith("Error: ")
        assert f":{71 if r_path == bad else len(qlines) + 1}: " in on_spark.output


def test_parquet_with_a_bad_value_or_column_is_one_error(spark, tmp_path):
    pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "relevance": [1.0, 0.5]}).to_parquet(tmp_path / "q.parquet")
    pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0]}).to_parquet(tmp_path / "r.parquet")
    with pytest.raises(InputFileError, match=r"q\.parquet: query 1 document b: relevance 0.5 is not an integer"):
        evaluate_files(tmp_path / "q.parquet", tmp_path / "r.parquet", engine="spark", spark=spark)
    pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1]}).to_parquet(tmp_path / "q.parquet")
    pd.DataFrame({"query_id": ["1"], "document": ["a"], "score": [1.0]}).to_parquet(tmp_path / "r.parquet")
    with pytest.raises(InputFileError, match=r"r\.parquet: no column 'doc_id'"):
        evaluate_files(tmp_path / "q.parquet", tmp_path / "r.parquet", engine="spark", spark=spark)


def test_engine_spark_refuses_other_qrels_formats(spark):
    result = _eval(["-R", "qrels_jg", "-m", "qrels_jg", "qrels.test", "results.test", "--engine", "spark"])
    assert result.exit_code == 1 and "--engine spark evaluates -R qrels only" in result.output


TRECDL = Path(__file__).resolve().parents[1] / "data" / "trecdl"


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_real_trec_dl_files_print_the_same_on_spark(spark, tmp_path, year):
    """Issue #29 on real files: the NIST DL qrels with an excerpt of a real BM25 run (tests/data/trecdl/README.md:
    two queries at depth 100, real score ties); and the embedded per-query ndcg_cut_10 equals pytrec_eval's."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = TRECDL / f"qrels.{year}-passage.txt"
    run = tmp_path / f"{year}-bm25.trec"
    run.write_bytes(gzip.decompress((TRECDL / "runs" / year / "bm25.trec.gz").read_bytes()))
    args = ["eval", "-m", "all_trec", "-q", str(qrels), str(run)]
    embedded, on_spark = runner.invoke(app, args), runner.invoke(app, [*args, "--engine", "spark"])
    assert embedded.exit_code == 0 and on_spark.exit_code == 0, on_spark.output
    assert on_spark.stdout == embedded.stdout
    assert "ndcg_cut_10" in embedded.stdout and len(embedded.stdout.splitlines()) > 100

    want: dict[str, dict[str, int]] = {}
    for line in qrels.read_text().splitlines():
        qid, _, doc, grade = line.split()
        want.setdefault(qid, {})[doc] = int(grade)
    ranked: dict[str, dict[str, float]] = {}
    for line in run.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        ranked.setdefault(qid, {})[doc] = float(score)
    ref = pytrec_eval.RelevanceEvaluator(want, {"ndcg_cut.10"}).evaluate(ranked)
    ours = evaluate_files(qrels, run, ["ndcg_cut.10"])
    assert sorted(ours.query_ids) == sorted(ref) and len(ref) == 2
    for i, qid in enumerate(ours.query_ids):
        assert abs(float(ours.values["ndcg_cut_10"][i]) - ref[qid]["ndcg_cut_10"]) <= 1e-12, qid
    assert 0.0 < min(ref[q]["ndcg_cut_10"] for q in ref)  # real runs find relevant passages at the top
