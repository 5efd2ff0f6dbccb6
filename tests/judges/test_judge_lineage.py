"""Lineage and provenance refusals of the judge gate (issue 47): a judge declared to share a model with a
system (``judge lineage add``) is refused for comparisons involving that system, in a report over labels
it filled and in ``report --estimator ppi``; a calibration verdict holds only for the model and prompt it
measured (labels of another prompt are refused by ``--judge-fills`` and the PPI report). On SQLite and
PostgreSQL."""

from __future__ import annotations

import json

from fake_llm_server import FakeLLM, serving
from judge_world import SECRET, copied_world, grade_people

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import tasks as t


def cli(runner, db, *args: str):
    from ndcg_labeling.cli import app

    return runner.invoke(app, [*args, "--db", db.url], env={"OPENAI_API_KEY": SECRET, "NDCG_LABELING_PROGRESS": "plain"},
                         catch_exceptions=False)


def filled_world(runner, db, world_templates, tmp_path_factory):
    """cat graded nothing; the judge gpt (truthful) graded the batch, was calibrated and filled the short items."""
    world = copied_world(db, world_templates, tmp_path_factory, leave_open="cat")
    with serving(FakeLLM(truth=world.truth, query_type=world.qtype)) as fake:
        assert cli(runner, db, "judge", "run", "--batch", world.batch, "--grader", "gpt", "--model", "m",
                   "--base-url", fake.url).exit_code == 0
    assert cli(runner, db, "consensus", "--method", "median", "--batch", world.batch).exit_code == 0
    assert cli(runner, db, "calibrate", "--judge", "gpt", "--batch", world.batch, "--by", "query-type").exit_code == 0
    filled = cli(runner, db, "consensus", "--method", "median", "--batch", world.batch, "--judge-fills", "gpt")
    assert filled.exit_code == 0, filled.output
    return world


def test_a_judge_sharing_a_model_with_a_system_is_refused_for_its_comparisons(runner, db, world_templates,
                                                                              tmp_path_factory):
    world = filled_world(runner, db, world_templates, tmp_path_factory)
    before = cli(runner, db, "report")  # before any declaration
    assert before.exit_code == 0, before.output
    added = cli(runner, db, "judge", "lineage", "add", "gpt", "--system", "bm25", "--note", "same base model")
    assert added.exit_code == 0 and "bm25" in added.stdout
    shown = cli(runner, db, "judge", "lineage", "list", "--format", "json").stdout
    assert shown.endswith("]\n")  # one line end, as every command's JSON (a shell's next prompt starts a line)
    listed = json.loads(shown)
    assert [(r["judge"], r["system"], r["note"]) for r in listed] == [("gpt", "bm25", "same base model")]
    as_csv = cli(runner, db, "judge", "lineage", "list", "--format", "csv").stdout
    assert as_csv.startswith("judge,system,note,") and as_csv.count("\n") == 2 and not as_csv.endswith("\n\n")
    again = cli(runner, db, "judge", "lineage", "add", "gpt", "--system", "bm25")
    assert again.exit_code == 1 and "already declared" in again.stderr
    unknown = cli(runner, db, "judge", "lineage", "add", "gpt", "--system", "nope")
    assert unknown.exit_code == 1 and "'nope'" in unknown.stderr

    report = cli(runner, db, "report")  # the labels in force include gpt's fills
    assert report.exit_code == 1
    assert "judge gpt" in report.stderr and "system bm25" in report.stderr and "share a model" in report.stderr
    ppi = cli(runner, db, "report", "--estimator", "ppi", "--judge", "gpt")
    assert ppi.exit_code == 1 and "report --estimator ppi: judge gpt" in ppi.stderr and "bm25" in ppi.stderr
    # a comparison not involving bm25 is not refused by the gate
    other = cli(runner, db, "report", "--estimator", "ppi", "--judge", "gpt", "--system", "dense", "--baseline", "dense")
    assert "share a model" not in other.output
    assert cli(runner, db, "judge", "lineage", "remove", "gpt", "--system", "bm25").exit_code == 0
    assert cli(runner, db, "report").exit_code == 0
    assert json.loads(cli(runner, db, "judge", "lineage", "list", "--format", "json").stdout) == []
    assert world.batch == "b1"


def test_a_verdict_holds_only_for_the_model_and_prompt_it_measured(runner, db, world_templates, tmp_path_factory,
                                                                   tmp_path):
    world = filled_world(runner, db, world_templates, tmp_path_factory)
    # the same judge grades a second batch with another prompt template
    with session_scope(db.engine) as session:
        t.create_batch("b2", scale="0-3", depth=8, overlap=1, graders=["ann"], session=session, seed=8)
    grade_people(db, "b2", world.truth)
    template = tmp_path / "terse.txt"
    template.write_text("Version: terse-1\n<query>\n{{query}}\n</query>\n<document>\nTitle: {{title}}\n{{body}}\n"
                        "</document>\nAnswer {\"grade\": N}.\n", encoding="utf-8")
    with serving(FakeLLM(truth=world.truth, query_type=world.qtype)) as fake:
        ran = cli(runner, db, "judge", "run", "--batch", "b2", "--grader", "gpt", "--model", "m", "--base-url", fake.url,
                  "--prompt", str(template))
        assert ran.exit_code == 0, ran.output
    fill = cli(runner, db, "consensus", "--method", "median", "--batch", "b2", "--judge-fills", "gpt")
    assert fill.exit_code == 1
    assert "--judge-fills" in fill.stderr and "calibration measured model m" in fill.stderr and "gpt" in fill.stderr
    ppi = cli(runner, db, "report", "--estimator", "ppi", "--judge", "gpt")
    assert ppi.exit_code == 1 and "calibration measured" in ppi.stderr
    # the batch it measured still fills
    assert cli(runner, db, "consensus", "--method", "median", "--batch", world.batch, "--judge-fills", "gpt").exit_code == 0
