"""``report`` through the CLI on SQLite and PostgreSQL.

The data is imported through the CLI: queries, TREC runs (``import run``), judgments (``import
judgments``) and labels by ``consensus --method median`` (three graders per item, so the median is a
plain integer median that the test computes itself for trec_eval's qrels). The peer is pytrec_eval
(trec_eval's C code): ``ndcg_cut_10`` per query, linear gain.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from tests.conftest import invoke

SYSTEMS = ("alpha", "beta", "gamma")
TYPES = ("navigational", "informational", "transactional")


def make_dataset(tmp_path: Path, seed: int = 7, n_queries: int = 30) -> dict:
    """Random graded labels, ragged runs with unjudged documents, judged-but-unretrieved documents,
    a query with no relevant document and queries some systems did not return."""
    rng = np.random.default_rng(seed)
    queries = [f"q{i:03d}" for i in range(n_queries)]
    qtype = {q: TYPES[i % len(TYPES)] for i, q in enumerate(queries)}
    qrels: dict[str, dict[str, int]] = {}
    judgment_rows = ["query_id,doc_id,grader,grade"]
    for i, q in enumerate(queries):
        pool = [f"{q}-d{j:02d}" for j in range(40)]
        judged = rng.choice(pool, size=int(rng.integers(5, 25)), replace=False)
        qrels[q] = {}
        for d in judged:
            truth = int(rng.integers(0, 4)) if i != 3 else 0  # q003: no relevant document
            grades = np.clip(truth + rng.integers(-1, 2, size=3), 0, 3)
            if i == 3:
                grades[:] = 0
            qrels[q][str(d)] = int(np.median(grades))
            for g, grade in zip(("ann", "bob", "cid"), grades, strict=True):
                judgment_rows.append(f"{q},{d},{g},{int(grade)}")
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for s_i, s in enumerate(SYSTEMS):
        runs[s] = {}
        lines = []
        for i, q in enumerate(queries):
            if (i + s_i) % 11 == 5:  # this system returned nothing for this query
                continue
            pool = [f"{q}-d{j:02d}" for j in range(40)]
            length = int(rng.integers(1, 31))
            docs = rng.choice(pool, size=length, replace=False)
            scores = rng.permutation(length) + rng.random(length)  # distinct scores
            runs[s][q] = {str(d): float(sc) for d, sc in zip(docs, scores, strict=True)}
            for rank, j in enumerate(np.argsort(-scores), start=1):
                lines.append(f"{q} Q0 {docs[j]} {rank} {float(scores[j])!r} {s}")
        # a query nobody judged: ranked but never scored
        lines.append(f"unjudged Q0 x1 1 1.0 {s}")
        (tmp_path / f"{s}.run").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "judgments.csv").write_text("\n".join(judgment_rows) + "\n", encoding="utf-8")
    (tmp_path / "queries.csv").write_text(
        "query_id,text,query_type\n" + "".join(f"{q},text of {q},{qtype[q]}\n" for q in queries), encoding="utf-8")
    return {"queries": queries, "qtype": qtype, "qrels": qrels, "runs": runs}


def load(runner, db, tmp_path: Path, systems=SYSTEMS) -> None:
    assert invoke(runner, db, "import", "queries", str(tmp_path / "queries.csv")).exit_code == 0
    for s in systems:
        result = invoke(runner, db, "import", "run", str(tmp_path / f"{s}.run"), "--system", s)
        assert result.exit_code == 0, result.output
    result = invoke(runner, db, "import", "judgments", str(tmp_path / "judgments.csv"), "--scale", "0-3",
                    "--create-graders")
    assert result.exit_code == 0, result.output
    result = invoke(runner, db, "consensus", "--method", "median")
    assert result.exit_code == 0, result.output


def read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.slow
def test_per_query_linear_ndcg_matches_trec_eval(runner, db, tmp_path):
    data = make_dataset(tmp_path)
    load(runner, db, tmp_path)
    result = invoke(runner, db, "report", "--per-query", "--gain", "linear", "--format", "csv", "--empty", "zero",
                    "--missing", "skip", "--metric", "ndcg@10", "--metric", "judged@10")
    assert result.exit_code == 0, result.output
    rows = read_csv(result.stdout)
    assert list(rows[0]) == ["system", "query_id", "query_type", "metric", "value"]
    ours = {(r["system"], r["query_id"]): float(r["value"]) for r in rows if r["metric"] == "ndcg@10"}
    evaluator = pytrec_eval.RelevanceEvaluator(data["qrels"], {"ndcg_cut"})
    n_compared = 0
    for s in SYSTEMS:
        theirs = evaluator.evaluate(data["runs"][s])
        assert {q for (sys, q) in ours if sys == s} == set(theirs)
        for q, measures in theirs.items():
            assert ours[(s, q)] == pytest.approx(measures["ndcg_cut_10"], abs=1e-9), (s, q)
            n_compared += 1
    assert n_compared > 70
    # the query types travel with each row
    assert all(r["query_type"] == data["qtype"][r["query_id"]] for r in rows)


def test_summary_csv_columns_and_means(runner, db, tmp_path):
    data = make_dataset(tmp_path, seed=11)
    load(runner, db, tmp_path)
    result = invoke(runner, db, "report", "--format", "csv", "--gain", "linear", "--missing", "skip")
    assert result.exit_code == 0, result.output
    rows = read_csv(result.stdout)
    assert list(rows[0]) == ["system", "query_type", "metric", "value", "n_queries", "ci_low", "ci_high"]
    assert {r["metric"] for r in rows} == {"ndcg@5", "ndcg@10", "mrr@10", "map@10", "p@10", "judged@10"}
    assert {r["query_type"] for r in rows} == set(TYPES) | {"all"}
    # the overall mean and n agree with trec_eval over the queries that have a relevant document
    evaluator = pytrec_eval.RelevanceEvaluator(data["qrels"], {"ndcg_cut", "P", "recip_rank"})
    relevant = {q for q, rel in data["qrels"].items() if max(rel.values()) >= 1}
    for s in SYSTEMS:
        theirs = {q: v for q, v in evaluator.evaluate(data["runs"][s]).items() if q in relevant}
        row = next(r for r in rows if r["system"] == s and r["query_type"] == "all" and r["metric"] == "ndcg@10")
        assert int(row["n_queries"]) == len(theirs)
        assert float(row["value"]) == pytest.approx(np.mean([v["ndcg_cut_10"] for v in theirs.values()]), abs=1e-9)
        assert float(row["ci_low"]) < float(row["value"]) < float(row["ci_high"])
        p10 = next(r for r in rows if r["system"] == s and r["query_type"] == "all" and r["metric"] == "p@10")
        assert float(p10["value"]) == pytest.approx(np.mean([v["P_10"] for v in theirs.values()]), abs=1e-9)
    assert "1 query has no relevant document" in result.stderr


def test_json_has_comparisons_and_holm(runner, sqlite_db, tmp_path):
    make_dataset(tmp_path, seed=3)
    load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "report", "--format", "json", "--baseline", "beta", "--metric", "ndcg@10")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["baseline"] == "beta"
    assert set(data["results"]) == {"alpha", "beta", "gamma"}
    assert set(data["results"]["alpha"]) == set(TYPES) | {"all"}
    assert set(data["comparisons"]) == {"alpha", "gamma"}
    for system in ("alpha", "gamma"):
        c = data["comparisons"][system]["all"]["ndcg@10"]
        assert c["t_p_holm"] >= c["t_p"] and c["rand_p_holm"] >= c["rand_p"]
        assert c["wins"] + c["ties"] + c["losses"] == c["n_queries"]
        assert c["diff"] == pytest.approx(c["value"] - c["baseline_value"])
        assert c["value"] == pytest.approx(data["results"][system]["all"]["ndcg@10"]["value"])
        assert c["diff_ci_low"] < c["diff"] < c["diff_ci_high"]
    # Holm over two comparisons: the smaller p is doubled (capped at 1)
    ps = sorted((data["comparisons"][s]["all"]["ndcg@10"]["t_p"], s) for s in ("alpha", "gamma"))
    assert data["comparisons"][ps[0][1]]["all"]["ndcg@10"]["t_p_holm"] == pytest.approx(min(1.0, 2 * ps[0][0]))
    per_query = json.loads(invoke(runner, sqlite_db, "report", "--format", "json", "--per-query", "--metric",
                                  "ndcg@10").stdout)["per_query"]
    assert set(per_query) == {"alpha", "beta", "gamma"}
    assert all(set(v) == {"query_type", "ndcg@10"} for v in per_query["beta"].values())


def test_low_judged_coverage_warns_with_the_pooling_command(runner, sqlite_db, tmp_path):
    make_dataset(tmp_path, seed=5)
    load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "report", "--format", "csv")
    assert result.exit_code == 0
    # about half of each list is unjudged in this data set
    assert "unsafe comparison: judged@10 is below 0.9" in result.stderr
    # the warning states the fact; the command comes as the command line's hint (issue 32)
    assert ("hint: pool the holes with `ndcg-labeling tasks create BATCH --system alpha --system beta --system gamma "
            "--depth 10") in result.stderr
    data = json.loads(invoke(runner, sqlite_db, "report", "--format", "json").stdout)
    assert data["warnings"] and not any("ndcg-labeling" in w for w in data["warnings"])
    md = invoke(runner, sqlite_db, "report", "--format", "md")
    assert "**Warning:** unsafe comparison" in md.stdout
    table = invoke(runner, sqlite_db, "report")
    assert "unsafe comparison" in table.stdout


def test_unknown_system_and_metric_are_clean_errors(runner, sqlite_db, tmp_path):
    make_dataset(tmp_path)
    load(runner, sqlite_db, tmp_path, systems=("alpha",))
    result = invoke(runner, sqlite_db, "report", "--system", "nope")
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: unknown system 'nope'; known systems: alpha"
    result = invoke(runner, sqlite_db, "report", "--metric", "ndgc@10")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: unknown metric 'ndgc@10'")


def test_no_labels_is_a_clean_error(runner, sqlite_db, tmp_path):
    make_dataset(tmp_path)
    invoke(runner, sqlite_db, "import", "run", str(tmp_path / "alpha.run"), "--system", "alpha")
    result = invoke(runner, sqlite_db, "report")
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: no consensus labels in the database: run `ndcg-labeling consensus` first"


def test_out_file_and_markdown(runner, sqlite_db, tmp_path):
    make_dataset(tmp_path)
    load(runner, sqlite_db, tmp_path)
    out = tmp_path / "r.md"
    result = invoke(runner, sqlite_db, "report", "--format", "md", "--out", str(out))
    assert result.exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert "## Mean per query type" in text and "## Difference to the baseline alpha" in text
    assert "| navigational | beta |" in text


def test_by_none_and_by_query(runner, sqlite_db, tmp_path):
    data = make_dataset(tmp_path, seed=9)
    load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "report", "--format", "csv", "--by", "none", "--metric", "ndcg@10",
                    "--system", "beta", "--system", "gamma")
    rows = read_csv(result.stdout)
    assert [(r["system"], r["query_type"]) for r in rows] == [("beta", "all"), ("gamma", "all")]
    by_query = read_csv(invoke(runner, sqlite_db, "report", "--format", "csv", "--by", "query", "--metric",
                               "ndcg@10", "--system", "beta").stdout)
    assert list(by_query[0]) == ["system", "query_id", "query_type", "metric", "value"]
    relevant = {q for q, rel in data["qrels"].items() if max(rel.values()) >= 1}
    assert {r["query_id"] for r in by_query} == relevant
    # the overall mean is the mean of the per-query rows
    assert float(rows[0]["value"]) == pytest.approx(np.mean([float(r["value"]) for r in by_query]), abs=1e-12)


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_out_file_is_not_overwritten_without_force(runner, sqlite_db, tmp_path, fmt):
    make_dataset(tmp_path)
    load(runner, sqlite_db, tmp_path)
    out = tmp_path / f"r.{fmt}"
    out.write_text("a lead's notes\n", encoding="utf-8")
    result = invoke(runner, sqlite_db, "report", "--format", fmt, "--out", str(out))
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and str(out) in result.stderr and "--force" in result.stderr
    assert out.read_text(encoding="utf-8") == "a lead's notes\n"
    result = invoke(runner, sqlite_db, "report", "--format", fmt, "--out", str(out), "--force")
    assert result.exit_code == 0, result.stderr
    assert "beta" in out.read_text(encoding="utf-8")
