"""Trust before use: calibration of a judge that ran finds the quality planted per query type (a
truthful judge on three types, a noisy one on long-tail), against the stored consensus; the verdicts
are stored; ``consensus --judge-fills`` fills only the agreeing types' short items; the report's
caveats count the labels that came from the judge."""

from __future__ import annotations

import json

import pytest
from fake_llm_server import FakeLLM, serving
from judge_world import SECRET, build_world
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import text

from ndcg_labeling.sources.calibration import MIN_KAPPA


def cli(runner, db, *args: str):
    from ndcg_labeling.cli import app

    result = runner.invoke(app, [*args, "--db", db.url], env={"OPENAI_API_KEY": SECRET,
                                                              "NDCG_LABELING_PROGRESS": "plain"},
                           catch_exceptions=False)
    return result


@pytest.fixture
def judged(db, tmp_path, runner):
    """The world with cat grading nothing (items of cat's have one human grade, overlap 2), judged by a
    server truthful on three types and random on 80% of long-tail items."""
    world = build_world(db, tmp_path, leave_open="cat")
    fake = FakeLLM(truth=world.truth, query_type=world.qtype, noisy={"long-tail": 0.8})
    with serving(fake):
        result = cli(runner, db, "judge", "run", "--batch", world.batch, "--grader", "gpt-judge", "--model", "m",
                     "--base-url", fake.url)
        assert result.exit_code == 0, result.output
    return world, fake


def pairs(db) -> list[dict]:
    """Per batch item: query type, true grade inputs, human grades, the judge's grade, from the tables."""
    with db.engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT q.id, d.id, q.text, q.query_type, d.title, g.kind, j.grade FROM judgments j "
            "JOIN graders g ON g.id = j.grader_id JOIN queries q ON q.id = j.query_id "
            "JOIN documents d ON d.id = j.document_id")).all()
    out: dict[tuple[int, int], dict] = {}
    for qid, did, qtext, qtype, title, kind, grade in rows:
        entry = out.setdefault((qid, did), {"key": (qid, did), "q": qtext, "title": title, "type": qtype, "human": [],
                                            "judge": None})
        if kind == "human":
            entry["human"].append(grade)
        else:
            entry["judge"] = grade
    return list(out.values())


def test_calibration_finds_the_planted_quality_and_fills_only_agreeing_types(runner, judged):
    world, _fake = judged
    db = world.db
    bad = cli(runner, db, "calibrate", "--judge", "gpt-judge", "--batch", world.batch)
    assert bad.exit_code == 1 and "no stored consensus labels" in bad.output
    assert cli(runner, db, "consensus", "--method", "median", "--batch", world.batch).exit_code == 0
    report = json.loads(cli(runner, db, "calibrate", "--judge", "gpt-judge", "--batch", world.batch, "--by",
                            "query-type", "--format", "json").stdout)
    rows = {r["scope"]: r for r in report["rows"]}
    items = pairs(db)
    for qtype in ("navigational", "informational", "transactional", "long-tail"):
        sub = [p for p in items if p["type"] == qtype and p["human"]]
        # people graded from the truth, so the stored median is the truth
        truth = [world.truth[(p["q"], p["title"])] for p in sub]
        judge = [p["judge"] for p in sub]
        assert rows[qtype]["n"] == len(sub)
        assert rows[qtype]["kappa"] == pytest.approx(cohen_kappa_score(truth, judge, labels=[0, 1, 2, 3],
                                                                       weights="quadratic"), abs=1e-4)
        # issue 46: the weighting is named, and the unweighted kappa reported beside it
        assert rows[qtype]["kappa_quadratic"] == rows[qtype]["kappa"]
        assert rows[qtype]["kappa_unweighted"] == pytest.approx(cohen_kappa_score(truth, judge, labels=[0, 1, 2, 3]),
                                                                abs=1e-4)
    assert report["kappa_weights"] == "quadratic"
    assert rows["long-tail"]["kappa_unweighted"] != pytest.approx(rows["long-tail"]["kappa"], abs=1e-3)
    for verdict in report["verdicts"]:
        assert "quadratic-weighted kappa" in verdict and "(unweighted " in verdict
        assert "kappa" not in verdict.replace("quadratic-weighted kappa", "")
    table = cli(runner, db, "calibrate", "--judge", "gpt-judge", "--batch", world.batch, "--by", "query-type").stdout
    header = next(line for line in table.splitlines() if "scope" in line).split()
    assert "kappa_quadratic" in header and "kappa_unweighted" in header and "kappa" not in header
    assert table.count("quadratic-weighted kappa") == 5  # the five verdicts
    csv_header = cli(runner, db, "calibrate", "--judge", "gpt-judge", "--batch", world.batch, "--format",
                     "csv").stdout.splitlines()[0].split(",")
    # the columns before keep their places: the gate's (issue 47) come after the two named kappas
    assert csv_header[:3] == ["scope", "n", "kappa"] and csv_header[11:13] == ["kappa_quadratic", "kappa_unweighted"]
    assert rows["long-tail"]["kappa"] < MIN_KAPPA
    assert all(rows[t]["kappa"] == 1.0 for t in ("navigational", "informational", "transactional"))
    with db.engine.connect() as conn:
        stored = {s: bool(a) for s, a in conn.execute(text("SELECT scope, agrees FROM calibration_verdicts"))}
    assert stored == {"all": "agrees with people" in rows["all"]["verdict"], "long-tail": False,
                      "navigational": True, "informational": True, "transactional": True}

    filled = json.loads(cli(runner, db, "consensus", "--method", "median", "--batch", world.batch, "--judge-fills",
                            "gpt-judge", "--format", "json").stdout)["judge_fills"]
    short = [p for p in items if len(p["human"]) < 2]
    expected = {p["key"] for p in short if p["type"] != "long-tail"}
    assert expected and any(p["type"] == "long-tail" for p in short)
    with db.engine.connect() as conn:
        labels = {(q, d): (v, f) for q, d, v, f in conn.execute(text(
            "SELECT query_id, document_id, value, filled_by FROM consensus_labels"))}
    assert {k for k, (_, f) in labels.items() if f == "gpt-judge"} == expected
    assert all(f is None for k, (_, f) in labels.items() if k not in expected)
    for p in items:
        if p["key"] in expected:  # median of (human, judge), ties low; both are the truth here
            assert labels[p["key"]][0] == min(p["human"] + [p["judge"]])
    by_type = {t: sum(1 for p in short if p["type"] == t and p["key"] in expected) for t in world.qtype.values()}
    assert filled["filled_by_query_type"] == {t: n for t, n in by_type.items() if n}
    assert filled["left_short_by_query_type"] == {"long-tail": sum(1 for p in short if p["type"] == "long-tail")}

    # the report's caveats: labels from the judge per query type
    rep = json.loads(cli(runner, db, "report", "--format", "json", "--metric", "ndcg@10").stdout)
    cv = rep["caveats"]["by_query_type"]
    for t, n in by_type.items():
        assert cv[t]["judge_filled"] == n
    assert cv["long-tail"]["judge_filled"] == 0 and cv["all"]["judge_filled"] == len(expected)
    table = cli(runner, db, "report", "--metric", "ndcg@10").stdout
    assert "labels from a judge" in table

    # calibration never counts judge-filled labels as people's
    again = json.loads(cli(runner, db, "calibrate", "--judge", "gpt-judge", "--batch", world.batch, "--format",
                           "json").stdout)
    assert again["rows"][0]["n"] == sum(1 for p in items if p["human"]) - len(expected)


def test_judge_fills_refuses_a_human_grader_and_needs_a_batch(runner, judged):
    world, _ = judged
    bad = cli(runner, world.db, "consensus", "--method", "median", "--judge-fills", "gpt-judge")
    assert bad.exit_code == 1 and "--judge-fills needs --batch" in bad.output
    bad = cli(runner, world.db, "consensus", "--method", "median", "--batch", world.batch, "--judge-fills", "ann")
    assert bad.exit_code == 1 and "'ann' is a human grader" in bad.output
