"""``tasks create | status | list | export | import`` through the CLI, on SQLite and PostgreSQL:
exit codes, exact messages, and every table unchanged after a refused command."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from sqlalchemy import select

from ndcg_labeling.db import models as m
from tests.conftest import invoke
from tests.labels.test_tasks import assignments, fill, make_corpus


def error_lines(result) -> list[str]:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return [line for line in result.stderr.splitlines() if line.strip()]


def create(runner, db, *args: str):
    return invoke(runner, db, "tasks", "create", *args)


def test_create_prints_a_summary(runner, db, tmp_path):
    make_corpus(db, tmp_path, queries=3, docs=6, systems={"bm25": 1})
    result = create(runner, db, "week1", "--scale", "0-3", "--depth", "2", "--overlap", "2",
                    "--graders", "ann, bob,cat", "--seed", "5")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == ("batch week1: 6 items from 3 queries (scale 0-3, depth 2, systems bm25), "
                                     "12 assignments to 3 graders (overlap 2), seed 5; guideline "
                                     "guidelines/relevance-0-3.md version 1.0")
    result = create(runner, db, "week1-json", "--scale", "0-4", "--depth", "1", "--overlap", "1",
                    "--graders", "ann", "--system", "bm25", "--query-type", "navigational", "--query-id", "q000",
                    "--format", "json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["items"], summary["scale"], summary["systems"], summary["graders"]) == (1, "0-4", ["bm25"], ["ann"])


@pytest.mark.parametrize(("args", "message"), [
    (["--overlap", "4"], "Error: overlap 4 needs at least 4 graders, got 3 (ann, bob, cat)"),
    (["--overlap", "0"], "Error: overlap must be at least 1, got 0"),
    (["--graders", "ann,zed"], "Error: unknown grader 'zed'; add it with `ndcg-labeling graders add zed`"),
    (["--system", "bm99"], "Error: unknown system 'bm99'; known systems: bm25, dense"),
    (["--query-type", "weird"],
     "Error: unknown query type 'weird'; known query types: informational, long-tail, navigational, transactional"),
    (["--scale", "0-9"], "Error: unknown scale '0-9'; known scales: 0-3, 0-4"),
])
def test_create_refusals(runner, db, tmp_path, args, message):
    make_corpus(db, tmp_path)
    base = {"--scale": "0-3", "--depth": "3", "--overlap": "2", "--graders": "ann,bob,cat"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    argv = [x for pair in base.items() for x in pair]
    before = db.counts()
    assert error_lines(create(runner, db, "b1", *argv)) == [message]
    assert db.counts() == before


def test_create_refuses_an_existing_batch(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    args = ["--scale", "0-3", "--depth", "3", "--overlap", "1", "--graders", "ann,bob"]
    assert create(runner, db, "b1", *args).exit_code == 0
    before = db.counts()
    assert error_lines(create(runner, db, "b1", *args)) == ["Error: batch 'b1' already exists; choose another name"]
    assert db.counts() == before


def test_status_and_list(runner, db, tmp_path):
    make_corpus(db, tmp_path, queries=2, docs=4, systems={"bm25": 1})
    assert create(runner, db, "b1", "--scale", "0-3", "--depth", "2", "--overlap", "2", "--graders", "ann,bob",
                  "--seed", "1").exit_code == 0
    result = invoke(runner, db, "tasks", "status", "b1", "--format", "json")
    assert result.exit_code == 0
    status = json.loads(result.stdout)
    assert {k: status[k] for k in ("batch", "scale", "items", "complete_items", "open_items")} == {
        "batch": "b1", "scale": "0-3", "items": 4, "complete_items": 0, "open_items": 4}
    assert status["graders"] == [{"grader": "ann", "done": 0, "skipped": 0, "total": 4},
                                 {"grader": "bob", "done": 0, "skipped": 0, "total": 4}]
    result = invoke(runner, db, "tasks", "status", "b1", "--format", "csv")
    assert result.stdout.splitlines() == ["grader,done,skipped,open,total,items,complete_items,open_items",
                                          "ann,0,0,4,4,,,", "bob,0,0,4,4,,,", "(all),0,0,8,8,4,0,4"]
    result = invoke(runner, db, "tasks", "status", "b1")
    assert result.exit_code == 0 and "items: 4; complete (all 2 grades): 0; still open: 4" in result.stdout
    result = invoke(runner, db, "tasks", "list", "--format", "json")
    rows = json.loads(result.stdout)
    assert [(r["batch"], r["scale"], r["items"], r["done"], r["total"], r["progress"]) for r in rows] == [
        ("b1", "0-3", 4, 0, 8, 0.0)]
    result = invoke(runner, db, "tasks", "list")
    assert result.exit_code == 0 and "0/8 (0.0%)" in result.stdout
    assert error_lines(invoke(runner, db, "tasks", "status", "nope")) == ["Error: unknown batch 'nope'; known batches: b1"]


def test_status_and_export_warn_when_the_guideline_changed(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    assert create(runner, db, "b1", "--scale", "0-3", "--depth", "2", "--overlap", "1", "--graders", "ann").exit_code == 0
    with db.engine.begin() as conn:
        conn.execute(m.GradingBatch.__table__.update().values(guideline_sha256="f" * 64))
    warning = ("Warning: the guideline guidelines/relevance-0-3.md has changed since batch 'b1' was created (it was "
               "version 1.0; its sha256 differs now): the grades of this batch follow the text as it was then")
    result = invoke(runner, db, "tasks", "status", "b1", "--format", "json")
    assert result.exit_code == 0 and result.stderr.strip() == warning
    result = invoke(runner, db, "tasks", "export", "b1", "--grader", "ann", "--out", str(tmp_path / "a.csv"))
    assert result.exit_code == 0 and result.stderr.strip() == warning


@pytest.mark.parametrize(("fmt", "suffix"), [("csv", "csv"), ("jsonl", "jsonl"), ("label-studio", "json")])
def test_export_fill_import(runner, db, tmp_path, fmt, suffix):
    runs = make_corpus(db, tmp_path)
    assert create(runner, db, "b1", "--scale", "0-3", "--depth", "3", "--overlap", "2", "--graders", "ann,bob,cat",
                  "--seed", "9").exit_code == 0
    out = tmp_path / f"ann.{suffix}"
    result = invoke(runner, db, "tasks", "export", "b1", "--grader", "ann", "--out", str(out), "--format", fmt)
    keys = assignments(db, "b1").query("grader == 'ann'")["item_key"].tolist()
    assert result.exit_code == 0
    assert result.stdout.strip() == f"{len(keys)} open items of grader ann in batch b1 written to {out} ({fmt})"
    text = out.read_text(encoding="utf-8")
    for hidden in ("bm25", "dense", "rank", "score", *(str(s) for r in runs.values() for s in r["score"])):
        assert hidden not in text
    fill(out, fmt, {k: "2" for k in keys})
    result = invoke(runner, db, "tasks", "import", str(out), "--grader", "ann", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"grades from {out} (batch b1, grader ann): {len(keys)} new, 0 unchanged"
    result = invoke(runner, db, "tasks", "import", str(out), "--grader", "ann", "--format", fmt)
    assert result.stdout.strip() == f"grades from {out} (batch b1, grader ann): 0 new, {len(keys)} unchanged"
    fill(out, fmt, {k: ("3" if i == 0 else "2") for i, k in enumerate(keys)})
    result = invoke(runner, db, "tasks", "import", str(out), "--grader", "ann", "--format", fmt)
    assert result.stdout.strip() == (f"grades from {out} (batch b1, grader ann): 0 new, {len(keys) - 1} unchanged, "
                                     "1 replaced (a different grade than before: the latest file wins)")
    with db.engine.connect() as conn:
        grades = conn.execute(select(m.Judgment.batch, m.Judgment.grade)).all()
    assert sorted(grades) == sorted([("b1", 2)] * (len(keys) - 1) + [("b1", 3)])
    # everything of ann is graded: the next export is empty
    result = invoke(runner, db, "tasks", "export", "b1", "--grader", "ann", "--out", str(tmp_path / "again.csv"))
    assert result.stdout.strip().startswith("0 open items of grader ann")


def test_import_rejects_bad_rows_one_line_each(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    assert create(runner, db, "b1", "--scale", "0-3", "--depth", "3", "--overlap", "1", "--graders", "ann,bob").exit_code == 0
    frame = assignments(db, "b1")
    ann, bob = frame.query("grader == 'ann'")["item_key"].tolist(), frame.query("grader == 'bob'")["item_key"].tolist()
    path = tmp_path / "ann.csv"
    pd.DataFrame({"item_id": [ann[0], ann[1], bob[0], ann[2]], "grade": ["1", "5", "2", ""]}).to_csv(path, index=False)
    before = db.counts()
    result = invoke(runner, db, "tasks", "import", str(path), "--grader", "ann")
    assert error_lines(result) == [f"Error: {path}:3: grade 5 is outside the scale 0-3 (0..3)",
                                   f"Error: {path}:4: item_id {bob[0]!r} is not assigned to grader 'ann'"]
    assert db.counts() == before


def test_import_and_export_refusals(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    assert create(runner, db, "b1", "--scale", "0-3", "--depth", "3", "--overlap", "1", "--graders", "ann").exit_code == 0
    path = tmp_path / "x.csv"
    path.write_text("item_id,grade\nabc,1\n")
    assert error_lines(invoke(runner, db, "tasks", "import", str(path), "--grader", "zed")) == [
        "Error: unknown grader 'zed'; add it with `ndcg-labeling graders add zed`"]
    assert error_lines(invoke(runner, db, "tasks", "export", "b1", "--grader", "bob", "--out", str(tmp_path / "b.csv"))) == [
        "Error: grader 'bob' has no items in batch 'b1'"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": {}}')
    assert error_lines(invoke(runner, db, "tasks", "import", str(bad), "--grader", "ann")) == [
        f"Error: {bad}: not a Label Studio JSON export: expected a list of tasks, got dict"]
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("id,grade\nabc,1\n")
    assert error_lines(invoke(runner, db, "tasks", "import", str(nocol), "--grader", "ann")) == [
        f"Error: {nocol}:1: missing column(s) item_id: expected item_id,grade, found id,grade"]
