"""Audit fixes of the budgeted batches: ``tasks extend`` grows a batch over the pool ``tasks create`` drew
from (every query, not only the queries round 1 reached); ``report --estimator inferred`` covers that pool and
says which strata have no graded pair; it refuses the report options it does not implement; huge or
out-of-range numbers are one ``Error:`` line with the database unchanged."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from tests.budget.test_budget_cli import designs, grade_all
from tests.conftest import invoke
from tests.labels.test_tasks import make_corpus, top_k

ARGS = ["--scale", "0-3", "--depth", "10", "--overlap", "1", "--graders", "ann,bob", "--seed", "2"]


def corpus(db, tmp_path):
    runs = make_corpus(db, tmp_path, queries=8, docs=20)
    return top_k(runs["bm25"], 10) | top_k(runs["dense"], 10)


@pytest.mark.parametrize("strategy", ["depth", "mtf", "bandit", "sample", "weighted"])
def test_extend_grows_over_the_pool_create_drew_from(runner, db, tmp_path, strategy):
    pool = corpus(db, tmp_path)
    result = invoke(runner, db, "tasks", "create", "b", *ARGS, "--strategy", strategy, "--budget", "3")
    assert result.exit_code == 0, result.output
    assert f"strategy {strategy}: 3 of {len(pool)} pooled pairs" in result.stdout
    # round 1 reached 3 of the 8 queries; the pool is still every query's
    result = invoke(runner, db, "tasks", "extend", "b", "--budget", "10")
    assert result.exit_code == 0, result.output
    assert f"13 of {len(pool)} pooled pairs now in the batch" in result.stdout
    result = invoke(runner, db, "tasks", "extend", "b", "--budget", str(len(pool) - 13))
    assert result.exit_code == 0, result.output
    assert f"{len(pool)} of {len(pool)} pooled pairs now in the batch (100%)" in result.stdout
    d = designs(db, "b")
    assert set(d[["query", "doc"]].itertuples(index=False, name=None)) == pool
    assert sorted(d["round"].value_counts().items()) == [(1, 3), (2, 10), (3, len(pool) - 13)]
    if strategy == "sample":  # every pair in the batch: each inclusion probability is 1
        assert (d["inclusion"] == 1.0).all()


def test_extend_refuses_a_budget_over_what_is_left(runner, db, tmp_path):
    pool = corpus(db, tmp_path)
    assert invoke(runner, db, "tasks", "create", "b", *ARGS, "--strategy", "sample", "--budget", "5").exit_code == 0
    before = db.counts()
    for budget in (str(len(pool) - 4), "99999999999999999999"):
        result = invoke(runner, db, "tasks", "extend", "b", "--budget", budget)
        assert result.exit_code == 1
        assert result.stderr.strip() == (
            f"Error: --budget must be between 1 and the {len(pool) - 5} pooled pairs not yet in batch 'b', got "
            f"{budget}" if budget != "99999999999999999999" else
            "Error: --budget must be a number of pairs between 1 and 2147483647, got 99999999999999999999")
    assert db.counts() == before


def test_a_judgment_made_elsewhere_after_create_does_not_shrink_the_batchs_pool(runner, db, tmp_path):
    pool = corpus(db, tmp_path)
    assert invoke(runner, db, "tasks", "create", "b", *ARGS, "--strategy", "sample", "--budget", "5").exit_code == 0
    with session_scope(db.engine) as session:
        in_batch = set(session.execute(select(m.BatchItem.query_id, m.BatchItem.document_id)).all())
        q, d = next(iter(set(session.execute(select(m.RankingEntry.query_id, m.RankingEntry.document_id)
                                            .where(m.RankingEntry.rank <= 10)).all()) - in_batch))
        ann = session.execute(select(m.Grader.id).where(m.Grader.name == "ann")).scalar_one()
        session.add(m.Judgment(grader_id=ann, query_id=q, document_id=d, scale="0-3", batch="other", grade=2))
    result = invoke(runner, db, "tasks", "extend", "b", "--budget", "5")
    assert result.exit_code == 0, result.output
    assert f"10 of {len(pool)} pooled pairs now in the batch" in result.stdout


def test_report_inferred_covers_every_query_of_the_pool_and_names_the_unsampled_strata(runner, db, tmp_path):
    pool = corpus(db, tmp_path)
    assert invoke(runner, db, "tasks", "create", "b", *ARGS, "--strategy", "sample", "--budget", "5").exit_code == 0
    grade_all(db, "b")
    result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "b", "--format", "json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert (got["queries"], got["pool_pairs"], got["judged"]) == (8, len(pool), 5)
    d = designs(db, "b")
    left_out = {(q, doc) for q, doc in pool if q not in set(d["query"])}
    warning = (f"3 of 8 strata ({len(left_out)} of {len(pool)} pooled pairs, in 3 of 8 queries) have no graded pair "
               f"yet: they drop out of the estimates, which are biased until they are graded (grade the open items "
               f"or `tasks extend` the batch)")
    assert got["warnings"] == [warning]
    assert f"Warning: {warning}" in result.stderr
    assert invoke(runner, db, "tasks", "extend", "b", "--budget", "20").exit_code == 0
    grade_all(db, "b")
    result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "b", "--format", "json")
    assert json.loads(result.stdout)["warnings"] == [] and "Warning" not in result.stderr


@pytest.mark.parametrize(("argv", "option"), [
    (["--gate", "ndcg@10"], "--gate"), (["--max-drop", "0.1"], "--max-drop"), (["--quiet"], "--quiet"),
    (["--by", "query"], "--by"), (["--per-query"], "--per-query"), (["--relevant-threshold", "2"], "--relevant-threshold"),
    (["--empty", "zero"], "--empty"), (["--missing", "skip"], "--missing")])
def test_report_inferred_refuses_the_options_it_does_not_implement(runner, db, tmp_path, argv, option):
    corpus(db, tmp_path)
    assert invoke(runner, db, "tasks", "create", "b", *ARGS, "--strategy", "sample", "--budget", "40").exit_code == 0
    grade_all(db, "b")
    result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "b", *argv)
    assert result.exit_code == 1
    mode = "--estimator inferred --metric ndcg@K" if option == "--relevant-threshold" else "--estimator inferred"
    assert result.stderr.strip() == f"Error: {option} does not go with {mode}"


def test_report_inferred_takes_baseline_system_metric_and_out(runner, db, tmp_path):
    corpus(db, tmp_path)
    assert invoke(runner, db, "tasks", "create", "b", *ARGS, "--strategy", "sample", "--budget", "40").exit_code == 0
    grade_all(db, "b")
    plain = json.loads(invoke(runner, db, "report", "--estimator", "inferred", "--batch", "b", "--format", "json").stdout)
    result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "b", "--format", "json",
                    "--baseline", "dense", "--system", "bm25")
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["baseline"] == "dense" and [r["system"] for r in got["rows"]] == ["bm25"]
    assert got["rows"][0]["diff"] == pytest.approx(-plain["rows"][1]["diff"])
    five = json.loads(invoke(runner, db, "report", "--estimator", "inferred", "--batch", "b", "--format", "json",
                             "--metric", "ndcg@5").stdout)
    assert five["metric"] == "ndcg@5" and five["rows"][0]["inferred"] != plain["rows"][0]["inferred"]
    out = tmp_path / "inferred.txt"
    result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "b", "-o", str(out))
    assert result.exit_code == 0 and result.stdout == "" and result.stderr.strip() == f"report written to {out}"
    assert out.read_text().startswith("estimator: inferred (ndcg@10, Horvitz-Thompson")
    for argv, message in [(["--metric", "mrr@10"], "--metric: --estimator inferred estimates one ndcg@K or map[@K], "
                                                   "got mrr@10"),
                          (["--metric", "map@11"], "map@11 needs a pool at least 11 deep; batch 'b' pooled to depth 10"),
                          (["--metric", "ndcg@0"], "ndcg@0: the cut-off must be at least 1"),
                          (["--baseline", "nope"], "system 'nope' is not one of batch 'b''s systems: bm25, dense")]:
        result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "b", *argv)
        assert (result.exit_code, result.stderr.strip()) == (1, f"Error: {message}")
    result = invoke(runner, db, "report", "--batch", "b")
    assert (result.exit_code, result.stderr.strip()) == (1, "Error: --batch does not go with --estimator plain")


CREATE = ["tasks", "create", "x", "--scale", "0-3", "--overlap", "1", "--graders", "ann,bob"]


@pytest.mark.parametrize(("argv", "message"), [
    ([*CREATE, "--strategy", "sample", "--budget", "99999999999999999999", "--depth", "10"],
     "--budget must be a number of pairs between 1 and 2147483647, got 99999999999999999999"),
    ([*CREATE, "--strategy", "sample", "--budget", "3000000000", "--depth", "10"],
     "--budget must be a number of pairs between 1 and 2147483647, got 3000000000"),
    ([*CREATE, "--strategy", "sample", "--budget", "1000", "--depth", "10"],
     "--budget must be between 1 and the 121 pooled pairs, got 1000"),
    ([*CREATE, "--strategy", "sample", "--budget", "5", "--depth", "9999999999999"],
     "--depth must be a number of ranks between 1 and 1000, got 9999999999999"),
    ([*CREATE, "--strategy", "sample", "--budget", "5", "--depth", "0"],
     "--depth must be a number of ranks between 1 and 1000, got 0"),
    ([*CREATE, "--depth", "-1"], "--depth must be a number of ranks between 1 and 1000, got -1"),
    ([*CREATE, "--strategy", "sample", "--depth", "10"], "--strategy sample needs --budget N: how many pairs of the pool to judge"),
    ([*CREATE, "--strategy", "sample", "--budget", "5", "--depth", "10", "--query-type", "nav"],
     "--query-type does not go with --strategy: a budgeted batch pools every query of its systems"),
    (["plan", "--budget", "100", "--depth", "99999999999"], "--depth must be a number of ranks between 1 and 1000, got 99999999999"),
    (["plan", "--budget", "100", "--depth", "0"], "--depth must be a number of ranks between 1 and 1000, got 0"),
    (["plan", "--budget", "100", "--mde", "0.02"], "--mde does not go with --budget"),
    (["plan", "--budget", "100", "--sd", "0.1"], "--sd does not go with --budget"),
    (["plan", "--mde", "0.02", "--depth", "10"], "--depth does not go with --mde (they plan judgments: pass --budget)"),
])
def test_out_of_range_numbers_and_options_are_one_error_line(runner, db, tmp_path, argv, message):
    pool = corpus(db, tmp_path)
    assert len(pool) == 121 or "121" not in message
    assert invoke(runner, db, "tasks", "create", "b", *ARGS, "--strategy", "sample", "--budget", "5").exit_code == 0
    before = db.counts()
    result = invoke(runner, db, *argv)
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == f"Error: {message}"
    assert db.counts() == before


def test_a_first_round_too_small_for_the_full_design_says_so_and_names_the_size_that_is_not(runner, db, tmp_path):
    """The first round fixes a sample's strata and `tasks extend` keeps them: a round too small for the eight
    best-rank strata is warned about, with the smallest first round that gets them; at that size, no warning."""
    corpus(db, tmp_path)
    result = invoke(runner, db, "tasks", "create", "small", *ARGS, "--strategy", "sample", "--budget", "3")
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.output.splitlines() if "best-rank strat" in ln]
    assert len(lines) == 1, result.output
    size = int(lines[0].split("a first round of at least ")[1].split()[0])
    assert lines[0].startswith("Warning: a first round of 3 pairs samples in 1 best-rank stratum per query, not 8, "
                               "and `tasks extend` keeps them: a batch grown from it has wider intervals than one "
                               "created at its final size; a first round of at least "), lines[0]
    for name, budget, warned in (("below", size - 1, True), ("at", size, False)):
        result = invoke(runner, db, "tasks", "create", name, *ARGS, "--strategy", "sample", "--budget", str(budget))
        assert result.exit_code == 0, result.output
        assert ("best-rank strat" in result.output) is warned, (budget, result.output)
    d = designs(db, "at")
    assert d["stratum"].nunique() > designs(db, "below")["stratum"].nunique()
