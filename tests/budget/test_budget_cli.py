"""``tasks create --strategy S --budget N`` and ``tasks extend`` through the CLI on SQLite and PostgreSQL:
the batch holds the budget's pairs of the depth-K pool, the design rows are stored apart from the items,
a round added by ``extend`` goes after each grader's current items, the task files show nothing of the
strategy, and refusals leave the database unchanged."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from sqlalchemy import select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from tests.conftest import invoke
from tests.labels.test_tasks import assignments, make_corpus, top_k

BASE = ["--scale", "0-3", "--depth", "5", "--overlap", "2", "--graders", "ann,bob,cat", "--seed", "3"]


def designs(db, name: str) -> pd.DataFrame:
    with db.engine.connect() as conn:
        rows = conn.execute(select(m.Query.external_id, m.Document.external_id, m.BatchItemDesign.round,
                                   m.BatchItemDesign.stratum, m.BatchItemDesign.inclusion)
                            .join(m.BatchItem, m.BatchItem.id == m.BatchItemDesign.item_id)
                            .join(m.GradingBatch, m.GradingBatch.id == m.BatchItem.batch_id)
                            .join(m.Query, m.Query.id == m.BatchItem.query_id)
                            .join(m.Document, m.Document.id == m.BatchItem.document_id)
                            .where(m.GradingBatch.name == name)).all()
    return pd.DataFrame(rows, columns=["query", "doc", "round", "stratum", "inclusion"])


@pytest.mark.parametrize("strategy", ["depth", "mtf", "bandit", "sample", "weighted"])
def test_create_takes_the_budget_from_the_pool(runner, db, tmp_path, strategy):
    runs = make_corpus(db, tmp_path)
    pool = top_k(runs["bm25"], 5) | top_k(runs["dense"], 5)
    result = invoke(runner, db, "tasks", "create", "b1", *BASE, "--strategy", strategy, "--budget", "12")
    assert result.exit_code == 0, result.output
    assert f"strategy {strategy}: 12 of {len(pool)} pooled pairs" in result.stdout
    got = assignments(db, "b1")
    items = set(got[["query", "doc"]].itertuples(index=False, name=None))
    assert len(items) == 12 and items <= pool
    assert got.groupby("grader").size().max() - got.groupby("grader").size().min() <= 1
    d = designs(db, "b1")
    assert len(d) == 12 and set(d["round"]) == {1}
    if strategy == "sample":
        assert ((d["inclusion"] > 0) & (d["inclusion"] <= 1)).all()
    else:
        assert d["inclusion"].isna().all()


def grade_all(db, name: str) -> None:
    """Every open assignment of the batch graded: grade 3 for even document numbers, 0 for odd."""
    with session_scope(db.engine) as session:
        rows = session.execute(select(m.Assignment.id, m.Assignment.grader_id, m.BatchItem.query_id,
                                      m.BatchItem.document_id, m.Document.external_id)
                               .join(m.BatchItem, m.BatchItem.id == m.Assignment.item_id)
                               .join(m.Document, m.Document.id == m.BatchItem.document_id)
                               .join(m.GradingBatch, m.GradingBatch.id == m.Assignment.batch_id)
                               .where(m.GradingBatch.name == name, m.Assignment.status == "open")).all()
        for aid, grader, qid, did, ext in rows:
            session.add(m.Judgment(grader_id=grader, query_id=qid, document_id=did, scale="0-3", batch=name,
                                   grade=3 if int(ext[1:]) % 2 == 0 else 0))
            session.get(m.Assignment, aid).status = "done"


@pytest.mark.parametrize("strategy", ["mtf", "sample"])
def test_extend_adds_a_round_after_each_graders_items(runner, db, tmp_path, strategy):
    runs = make_corpus(db, tmp_path)
    pool = top_k(runs["bm25"], 5) | top_k(runs["dense"], 5)
    assert invoke(runner, db, "tasks", "create", "b1", *BASE, "--strategy", strategy, "--budget", "8").exit_code == 0
    before = assignments(db, "b1")
    grade_all(db, "b1")
    result = invoke(runner, db, "tasks", "extend", "b1", "--budget", "6")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"batch b1: round 2 ({strategy}) added 6 items, 12 assignments; 14 of "
                                    f"{len(pool)} pooled pairs now in the batch")
    after = assignments(db, "b1")
    items = set(after[["query", "doc"]].itertuples(index=False, name=None))
    assert len(items) == 14 and items <= pool
    new = after[~after["item_key"].isin(before["item_key"])]
    for grader, rows in new.groupby("grader"):
        old = before[before["grader"] == grader]
        assert rows["position"].min() > (old["position"].max() if len(old) else -1)
    assert (after.groupby(["grader", "position"]).size() == 1).all()
    d = designs(db, "b1")
    assert sorted(d["round"].value_counts().items()) == [(1, 8), (2, 6)]
    if strategy == "sample":
        # the inclusion probability of every item is that of its stratum now: same stratum, same value
        assert (d.groupby("stratum")["inclusion"].nunique() == 1).all()


def test_task_files_do_not_tell_the_strategy(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    assert invoke(runner, db, "tasks", "create", "plain", *BASE).exit_code == 0
    assert invoke(runner, db, "tasks", "create", "sampled", *BASE, "--strategy", "sample", "--budget", "9").exit_code == 0
    cols = []
    for name in ("plain", "sampled"):
        out = tmp_path / f"{name}.csv"
        assert invoke(runner, db, "tasks", "export", name, "--grader", "ann", "--out", str(out)).exit_code == 0
        cols.append(list(pd.read_csv(out).columns))
    assert cols[0] == cols[1]


@pytest.mark.parametrize(("argv", "message"), [
    (["tasks", "create", "b2", *BASE, "--strategy", "mtf"], "Error: --strategy mtf needs --budget N: how many pairs of the pool to judge"),
    (["tasks", "extend", "plain", "--budget", "5"],
     "Error: batch 'plain' was made by depth pooling without --strategy; only a batch made with "
     "`tasks create --strategy S --budget N` can be extended"),
    (["tasks", "extend", "nope", "--budget", "5"], "Error: no batch 'nope'"),
])
def test_refusals_leave_the_database_unchanged(runner, db, tmp_path, argv, message):
    make_corpus(db, tmp_path)
    assert invoke(runner, db, "tasks", "create", "plain", *BASE).exit_code == 0
    before = db.counts()
    result = invoke(runner, db, *argv)
    assert result.exit_code == 1, result.output
    assert [line for line in result.stderr.splitlines() if line.strip()] == [message]
    assert db.counts() == before


def test_an_unknown_strategy_is_refused_by_the_option_and_help_lists_the_strategies(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    before = db.counts()
    result = invoke(runner, db, "tasks", "create", "b2", *BASE, "--strategy", "greedy", "--budget", "5")
    assert result.exit_code == 2, result.output  # a usage error of the option, before the database is opened
    assert result.stderr.strip().splitlines()[-1] == ("Error: Invalid value for '--strategy': 'greedy' is not one of "
                                                      "'depth', 'mtf', 'bandit', 'sample', 'weighted'.")
    assert db.counts() == before
    assert "--strategy <depth|mtf|bandit|sample|weighted>" in invoke(runner, None, "tasks", "create", "--help").stdout


def test_library_callers_keep_the_pipelines_strategy_check(db, tmp_path):
    from ndcg_labeling.errors import NdcgLabelingError
    from ndcg_labeling.labels.tasks.budgeted import create_budgeted

    make_corpus(db, tmp_path)
    before = db.counts()
    with pytest.raises(NdcgLabelingError) as info, session_scope(db.engine) as session:
        create_budgeted("b2", strategy="greedy", budget=5, scale="0-3", depth=5, overlap=2,
                        graders=["ann", "bob", "cat"], session=session, seed=3)
    assert str(info.value) == "unknown strategy 'greedy'; choose one of depth, mtf, bandit, sample, weighted"
    assert db.counts() == before


def whole_pool_sampled(runner, db, tmp_path) -> set:  # type: ignore[no-untyped-def]
    """Batch 'all': every pair of the depth-10 pool of bm25 and dense sampled and graded (grade_all)."""
    runs = make_corpus(db, tmp_path, docs=12)
    pool = top_k(runs["bm25"], 10) | top_k(runs["dense"], 10)
    args = ["--scale", "0-3", "--depth", "10", "--overlap", "1", "--graders", "ann,bob", "--seed", "2"]
    assert invoke(runner, db, "tasks", "create", "all", *args, "--strategy", "sample",
                  "--budget", str(len(pool))).exit_code == 0
    grade_all(db, "all")
    return pool


def test_report_inferred_equals_plain_when_the_whole_pool_is_sampled(runner, db, tmp_path):
    pool = whole_pool_sampled(runner, db, tmp_path)
    result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "all", "--format", "json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert (got["judged"], got["pool_pairs"], got["metric"]) == (len(pool), len(pool), "ndcg@10")
    for row in got["rows"]:
        # every pair judged: each inclusion probability is 1, the estimate is the plain value, no sampling error
        assert row["inferred"] == pytest.approx(row["plain"], abs=1e-12)
        assert row["half_width"] == pytest.approx(0.0, abs=1e-12)


def test_report_inferred_map_is_xinfap_and_equals_plain_ap_when_everything_is_sampled(runner, db, tmp_path):
    whole_pool_sampled(runner, db, tmp_path)
    for metric, name in (("map", "map"), ("MAP@5", "map@5")):
        result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "all", "--metric", metric,
                        "--relevant-threshold", "2", "--format", "json")
        assert result.exit_code == 0, result.output
        got = json.loads(result.stdout)
        assert got["metric"] == name and got["method"].startswith("xinfAP")
        for row in got["rows"]:  # every pair judged: xinfAP is AP within its smoothing, no sampling error
            assert row["inferred"] == pytest.approx(row["plain"], abs=1e-4)
            assert row["half_width"] == pytest.approx(0.0, abs=1e-12)
        assert 0 < got["rows"][0]["plain"] <= 1
    table = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "all", "--metric", "map")
    assert table.stdout.startswith("estimator: inferred (map, xinfAP, stratified jackknife intervals, over the "
                                   "stratified sample of batch all)"), table.stdout
    assert "infmap" in table.stdout
    bad = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "all", "--metric", "map@0")
    assert (bad.exit_code, bad.stderr.strip()) == (1, "Error: map@0: the cut-off must be at least 1")
    bad = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "all", "--metric", "map", "--gain", "linear")
    assert (bad.exit_code, bad.stderr.strip()) == (1, "Error: --gain does not go with --estimator inferred --metric map")
    bad = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "all", "--metric", "p@10")
    assert bad.stderr.strip() == "Error: --metric: --estimator inferred estimates one ndcg@K or map[@K], got p@10"


def test_report_inferred_on_a_quarter_of_the_pool(runner, db, tmp_path):
    runs = make_corpus(db, tmp_path, queries=6, docs=20)
    pool = top_k(runs["bm25"], 10) | top_k(runs["dense"], 10)
    args = ["--scale", "0-3", "--depth", "10", "--overlap", "1", "--graders", "ann,bob", "--seed", "2"]
    budget = len(pool) // 4
    assert invoke(runner, db, "tasks", "create", "part", *args, "--strategy", "sample",
                  "--budget", str(budget)).exit_code == 0
    grade_all(db, "part")
    result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "part")
    assert result.exit_code == 0, result.output
    assert (f"estimator: inferred (ndcg@10, Horvitz-Thompson over the stratified sample of batch part); {budget} of "
            f"{len(pool)} pooled pairs judged") in result.stdout
    got = json.loads(invoke(runner, db, "report", "--estimator", "inferred", "--batch", "part",
                            "--format", "json").stdout)
    assert [r["system"] for r in got["rows"]] == ["bm25", "dense"]
    assert all(r["half_width"] > 0 for r in got["rows"]) and got["rows"][1]["diff_half_width"] > 0


def test_report_inferred_refuses_a_batch_without_a_sample(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    assert invoke(runner, db, "tasks", "create", "m1", *BASE, "--strategy", "mtf", "--budget", "5").exit_code == 0
    result = invoke(runner, db, "report", "--estimator", "inferred", "--batch", "m1")
    assert result.exit_code == 1
    assert result.stderr.strip() == ("Error: the inferred estimator needs a batch made with `tasks create --strategy "
                                     "sample`; batch 'm1' was made with mtf")


def test_strategies_are_one_vocabulary():
    from ndcg_labeling import choices
    from ndcg_labeling.budget.strategies import STRATEGIES

    assert STRATEGIES == tuple(s.value for s in choices.PoolStrategy) == ("depth", "mtf", "bandit", "sample", "weighted")


def test_plan_budget_widths_fall_with_the_budget(runner, db, tmp_path):
    runs = make_corpus(db, tmp_path, queries=6, docs=20)
    pool = top_k(runs["bm25"], 10) | top_k(runs["dense"], 10)
    args = ["--scale", "0-3", "--depth", "10", "--overlap", "1", "--graders", "ann,bob", "--seed", "2"]
    assert invoke(runner, db, "tasks", "create", "part", *args, "--strategy", "sample", "--budget", "30").exit_code == 0
    grade_all(db, "part")
    for source in (["--batch", "part"], ["--depth", "10"]):
        result = invoke(runner, db, "plan", "--budget", "20", "--budget", "60", "--budget", str(len(pool)), *source,
                        "--format", "json")
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)
        assert [(r["budget"], r["system"]) for r in rows] == [
            (b, s) for b in (20, 60, len(pool)) for s in ("bm25", "dense")]
        width = {(r["budget"], r["system"]): r["halfwidth"] for r in rows}
        assert width[(20, "bm25")] > width[(60, "bm25")] > width[(len(pool), "bm25")] == 0.0
        assert rows[1]["diff_halfwidth"] > 0 and rows[0]["diff_halfwidth"] is None
    result = invoke(runner, db, "plan", "--budget", "20", "--batch", "part")
    assert result.exit_code == 0 and "expected interval widths" in result.stdout
    from ndcg_labeling.cli import app

    # the progress of the simulation, plain lines on stderr: 20 worlds x 10 samples
    shown = runner.invoke(app, ["plan", "--budget", "20", "--batch", "part", "--db", db.url],
                          env={"NDCG_LABELING_PROGRESS": "plain"})
    lines = shown.stderr.splitlines()
    assert shown.exit_code == 0 and lines[0] == "progress: 10 samples" and lines[-1] == "progress: 200 samples"
    result = invoke(runner, db, "plan", "--budget", str(len(pool) + 1), "--batch", "part")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: --budget must be between 1 and the {len(pool)} pooled pairs, got {len(pool) + 1}"


def test_strategy_does_not_go_with_from_traffic(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    before = db.counts()
    result = invoke(runner, db, "tasks", "create", "b3", *BASE, "--strategy", "sample", "--budget", "5",
                    "--from-traffic", str(tmp_path / "log.parquet"))
    assert result.exit_code == 2
    assert "--strategy pools from the stored rankings; it does not go with --from-traffic" in result.output
    assert db.counts() == before


def test_deleting_a_budgeted_batch_removes_its_design(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    before = db.counts()
    assert invoke(runner, db, "tasks", "create", "b4", *BASE, "--strategy", "sample", "--budget", "9").exit_code == 0
    assert len(designs(db, "b4")) == 9
    result = invoke(runner, db, "tasks", "delete", "b4")
    assert result.exit_code == 0, result.output
    assert db.counts() == before
