"""``gold import|list``, ``graders quality``, ``calibrate``, ``--kind``, ``--include-models``,
``consensus --exclude-untrusted`` and ``tasks create --gold-rate/--gold-feedback`` from the command line."""

from __future__ import annotations

import json
import shutil

import pytest
from sqlalchemy import select

from ndcg_labeling.cli import app
from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.demo.quality import QUALITY_DIR, load_quality_data, run_quality_demo
from tests.conftest import Database, invoke


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """A SQLite database with the simulated quality set graded (read by several tests)."""

    folder = tmp_path_factory.mktemp("played")
    database = Database("sqlite", folder, migrated=True)
    with session_scope(database.engine) as session:
        run_quality_demo(session=session, out_dir=folder / "tasks")
    yield database
    database.drop()


def _base(db: Database) -> None:
    from ndcg_labeling.labels import importing

    with session_scope(db.engine) as session:
        importing.import_queries(QUALITY_DIR / "queries.csv", session=session)
        importing.import_documents(QUALITY_DIR / "documents.csv", session=session)


def test_gold_import_list_and_reimport(runner, db):
    _base(db)
    gold = str(QUALITY_DIR / "gold.csv")
    result = invoke(runner, db, "gold", "import", gold, "--scale", "0-3")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"gold items (0-3) from {gold}: 36 new, 0 unchanged"
    again = invoke(runner, db, "gold", "import", gold, "--scale", "0-3", "--json")
    assert json.loads(again.stdout) == {"path": gold, "scale": "0-3", "new": 0, "unchanged": 36, "updated": 0}
    listed = json.loads(invoke(runner, db, "gold", "list", "--format", "json").stdout)
    assert len(listed) == 36 and listed[0]["query_id"] == "QQ001" and listed[0]["answers"] == 0
    assert listed[0]["explanation"] and listed[0]["accuracy"] is None


@pytest.mark.parametrize(("content", "message"), [
    ("query_id,doc_id,grade\nQQ001,QD0009,2\nQQ002,QD0018,5\n", ":3: grade 5 is outside the scale 0-3 (0..3)"),
    ("query_id,doc_id,grade\nQQ001,QD0009,2\nQQ001,QD0009,1\n", ":3: duplicate gold item"),
    ("query_id,doc_id,grade\nQQ001,QD0009,2\nQQ999,QD0018,1\n", ":3: unknown query_id 'QQ999'"),
    ("query_id,doc_id,grade\nQQ001,QD0009,2.5\n", ":2: grade '2.5' is not an integer"),
    ("query_id,doc_id\nQQ001,QD0009\n", ":1: missing column(s) grade"),
])
def test_bad_gold_files_fail_with_one_line_and_change_nothing(runner, sqlite_db, tmp_path, content, message):
    _base(sqlite_db)
    path = tmp_path / "gold.csv"
    path.write_text(content, encoding="utf-8")
    before = sqlite_db.counts()
    result = invoke(runner, sqlite_db, "gold", "import", str(path), "--scale", "0-3")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path}{message}"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert sqlite_db.counts() == before


def test_grader_kind_on_add_import_and_list(runner, db, tmp_path):
    assert invoke(runner, db, "graders", "add", "llm-x", "--kind", "model").exit_code == 0
    path = tmp_path / "g.csv"
    path.write_text("grader\nbot-2\n", encoding="utf-8")
    assert invoke(runner, db, "import", "graders", str(path), "--kind", "model").exit_code == 0
    assert invoke(runner, db, "graders", "add", "ann").exit_code == 0
    rows = json.loads(invoke(runner, db, "graders", "list", "--format", "json").stdout)
    assert {r["grader"]: r["kind"] for r in rows} == {"llm-x": "model", "bot-2": "model", "ann": "human"}
    bad = invoke(runner, db, "graders", "add", "z", "--kind", "robot")
    assert bad.exit_code == 1 and bad.stderr.strip() == "Error: unknown grader kind 'robot'; use human or model"


def test_graders_quality_formats(runner, played):
    result = invoke(runner, played, "graders", "quality", "--format", "json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    rows = {r["grader"]: r for r in report["rows"]}
    assert set(rows["dev"]) == {"grader", "kind", "n_gold", "gold_accuracy", "accuracy_low", "accuracy_high",
                                "within_one", "gold_mae", "bias", "trusted", "n_gold_all", "accuracy_all",
                                "accuracy_first_half", "accuracy_second_half", "drift", "drift_low", "drift_high",
                                "drift_flagged"}
    assert rows["dev"]["trusted"] is False and rows["ana"]["trusted"] in (True, "undecided")
    assert rows["dev"]["accuracy_high"] < report["min_accuracy"]
    strict = json.loads(invoke(runner, played, "graders", "quality", "--min-accuracy", "0.99", "--format",
                               "json").stdout)
    # the interval decides: below 0.99 with confidence is untrusted, an interval reaching 0.99 is undecided
    assert all(r["trusted"] is (False if r["accuracy_high"] < 0.99 else r["trusted"]) for r in strict["rows"])
    assert all(r["trusted"] in (False, "undecided") for r in strict["rows"])
    csv_text = invoke(runner, played, "graders", "quality", "--batch", "quality", "--format", "csv").stdout
    assert csv_text.splitlines()[0].startswith("grader,kind,n_gold,gold_accuracy,accuracy_low,accuracy_high")
    table = invoke(runner, played, "graders", "quality")
    assert "Note: dev is untrusted" in table.stdout
    bad = invoke(runner, played, "graders", "quality", "--batch", "nope")
    assert bad.exit_code == 1 and bad.stderr.startswith("Error: unknown batch 'nope'")


def test_calibrate_formats(runner, played):
    report = json.loads(invoke(runner, played, "calibrate", "--judge", "llm-judge", "--by", "query-type",
                               "--format", "json").stdout)
    assert report["metric"] == "ndcg@10" and [r["scope"] for r in report["rows"]][0] == "all"
    assert {"n", "kappa", "exact_agreement", "mae", "confusion", "tau", "max_rank_change"} <= set(report["rows"][0])
    table = invoke(runner, played, "calibrate", "--judge", "llm-judge", "--by", "query-type", "--metric", "ndcg@5")
    assert table.exit_code == 0
    assert "Verdict: do not use llm-judge for long-tail (quadratic-weighted kappa" in table.stdout
    csv_text = invoke(runner, played, "calibrate", "--judge", "llm-judge", "--format", "csv").stdout
    assert csv_text.splitlines()[0].startswith("scope,n,kappa,exact_agreement,mae")
    assert len(csv_text.strip().splitlines()) == 2  # the header and the all row (no --by)
    bad = invoke(runner, played, "calibrate", "--judge", "nobody")
    assert bad.exit_code == 1 and "Error: unknown grader 'nobody'" in bad.stderr


def test_table_output_goes_to_the_out_file(runner, played, tmp_path):
    """-o with the default table format writes the tables (and notes, verdicts) to the file, plain as on
    a pipe, and prints none of it; an existing file is refused before any work. (-o was ignored: the
    table went to stdout and no file was written.)"""
    cal = tmp_path / "cal.txt"
    res = invoke(runner, played, "calibrate", "--judge", "llm-judge", "--by", "query-type", "-o", str(cal))
    assert res.exit_code == 0 and "calibration of llm-judge" not in res.stdout
    text = cal.read_text()
    assert text.startswith("calibration of llm-judge against people")
    assert "confusion (all, n " in text
    assert "Verdict: do not use llm-judge for long-tail (quadratic-weighted kappa" in text
    again = invoke(runner, played, "calibrate", "--judge", "llm-judge", "-o", str(cal))
    assert again.exit_code != 0 and "already exists" in again.stderr and cal.read_text() == text
    agr = tmp_path / "agr.txt"
    res = invoke(runner, played, "agreement", "-o", str(agr))
    assert res.exit_code == 0 and res.stdout == ""
    assert agr.read_text().startswith("agreement (ordinal, scale ")
    csv_out = tmp_path / "agr.csv"
    assert invoke(runner, played, "agreement", "--format", "csv", "-o", str(csv_out)).exit_code == 0
    assert csv_out.read_text().startswith("scope,level,alpha")


def test_agreement_and_consensus_count_humans_unless_include_models(runner, played, tmp_path):
    human = json.loads(invoke(runner, played, "agreement", "--format", "json").stdout)[0]
    both = json.loads(invoke(runner, played, "agreement", "--include-models", "--format", "json").stdout)[0]
    assert human["n_graders"] == 5 and both["n_graders"] == 6
    assert both["n_grades"] - human["n_grades"] == 288
    note = invoke(runner, played, "agreement")
    assert "288 judgments of model graders left out (llm-judge: 288)" in note.stdout
    copy = Database("sqlite", tmp_path)  # consensus writes: work on a copy of the shared database
    shutil.copy(played.url.removeprefix("sqlite:///"), copy.url.removeprefix("sqlite:///"))
    out = json.loads(invoke(runner, copy, "consensus", "--method", "median", "--exclude-untrusted",
                            "--format", "json").stdout)
    assert out["exclude_untrusted"] is True and set(out["excluded"]) == {"dev", "emma"}
    assert out["n_excluded"] == sum(out["excluded"].values()) > 0
    assert out["models_left_out"] == {"llm-judge": 288}
    text = invoke(runner, copy, "consensus", "--method", "median", "--include-models").stdout
    # the exclusion is recorded for the scope: a later run honours it and says so (issue 35)
    assert f"left out {out['n_excluded']} judgments of 2 untrusted graders" in text and "recorded setting" in text
    assert "not counted" not in text
    text = invoke(runner, copy, "consensus", "--method", "median", "--include-models", "--include-untrusted").stdout
    assert "left out" not in text and "not counted" not in text
    text = invoke(runner, copy, "consensus", "--method", "median", "--include-models").stdout
    assert "left out" not in text  # counted again until changed
    copy.drop()


def test_tasks_create_with_gold_and_feedback_in_the_grading_terminal(runner, sqlite_db):
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
    created = invoke(runner, sqlite_db, "tasks", "create", "t", "--scale", "0-3", "--depth", "8", "--overlap", "1",
                     "--graders", "ana,ben,chloe,dev,emma", "--seed", "9", "--gold-rate", "0.25", "--gold-feedback",
                     "--format", "json")
    assert created.exit_code == 0
    summary = json.loads(created.stdout)
    assert summary["gold_rate"] == 0.25 and summary["gold_feedback"] is True
    with session_scope(sqlite_db.engine) as session:
        gold = set(session.execute(select(m.BatchGoldItem.item_id)).scalars())
        first = session.execute(select(m.Assignment.item_id).join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                                .where(m.Grader.name == "ana").order_by(m.Assignment.position)).scalars().all()
    n_first_gold = next(i for i, item in enumerate(first) if item in gold)
    keys = "1\n" * (n_first_gold + 1) + "q\n"
    result = runner.invoke(app,
                           ["grade", "t", "--grader", "ana", "--db", sqlite_db.url], input=keys)
    assert result.exit_code == 0
    assert result.stdout.count("Calibration item: your grade 1") == 1
