"""The interactive ``grade`` session driven end to end with scripted input, on SQLite and PostgreSQL:
grades, an unknown key, undo, skip with the default reason, quit, resume, end of input, the guideline."""

from __future__ import annotations

from sqlalchemy import select

from ndcg_labeling.db import models as m
from tests.conftest import invoke
from tests.labels.test_tasks import assignments, create, make_corpus


def grade(runner, db, script: str, grader: str = "ann"):
    from ndcg_labeling.cli import app

    return runner.invoke(app, ["grade", "b1", "--grader", grader, "--db", db.url], input=script,
                         catch_exceptions=False)


def state(db) -> list[tuple[str, str | None, int | None]]:
    """ann's items in ann's order: (status, skip reason, stored grade)."""
    frame = assignments(db, "b1").query("grader == 'ann'")
    with db.engine.connect() as conn:
        grades = dict(conn.execute(
            select(m.BatchItem.item_key, m.Judgment.grade)
            .join(m.Judgment, (m.Judgment.query_id == m.BatchItem.query_id)
                  & (m.Judgment.document_id == m.BatchItem.document_id))
            .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
            .where(m.Grader.name == "ann", m.Judgment.batch == "b1")).all())
        reasons = dict(conn.execute(select(m.BatchItem.item_key, m.Assignment.skip_reason)
                                    .join(m.Assignment, m.Assignment.item_id == m.BatchItem.id)).all())
    return [(row.status, reasons[row.item_key], grades.get(row.item_key)) for row in frame.itertuples()]


def test_grade_undo_skip_quit_and_resume(runner, db, tmp_path):
    make_corpus(db, tmp_path, queries=2, docs=5, systems={"bm25": 1})
    create(db, depth=3, overlap=1, graders=["ann"])  # 6 items, all ann's
    result = grade(runner, db, "2\n0\n7\nu\n1\ns\n\nq\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "saved: 2 — Highly relevant" in out and "saved: 0 — Irrelevant" in out
    assert "Unknown key '7': grades are 0, 1, 2, 3; s skip, u undo, ? guideline, q quit." in out
    assert "is open again" in out and "saved: 1 — Somewhat relevant" in out and "skipped (cannot judge)" in out
    assert "Saved. 2/6 done, 1 skipped. Resume with: ndcg-labeling grade b1 --grader ann" in out
    # the grade names and their definitions come from the guideline; nothing of rank, score or system
    for name in ("Irrelevant", "Somewhat relevant", "Highly relevant", "Perfect", "The document is exactly"):
        assert name in out
    for hidden in ("bm25", "rank", "score", "700."):
        assert hidden not in out
    assert state(db) == [("done", None, 2), ("done", None, 1), ("skipped", "cannot judge", None)] + [("open", None, None)] * 3
    with db.engine.connect() as conn:
        judgments = conn.execute(select(m.Judgment.batch, m.Judgment.scale, m.Judgment.source_file)).all()
    assert judgments == [("b1", "0-3", "(grade session)")] * 2

    # a second session resumes at the first open item; undo there reaches only its own actions
    result = grade(runner, db, "u\n3\ns\nduplicate page\nu\nq\n")
    assert result.exit_code == 0, result.output
    assert "Nothing to undo in this session." in result.stdout
    assert state(db)[:5] == [("done", None, 2), ("done", None, 1), ("skipped", "cannot judge", None),
                             ("done", None, 3), ("open", None, None)]

    # end of input quits; what was graded before it is saved
    result = grade(runner, db, "0\n")
    assert result.exit_code == 0
    assert state(db)[4] == ("done", None, 0)

    # the last item, then nothing is left: the session says so and ends
    result = grade(runner, db, "1\nq\n")
    assert "Nothing left to grade in batch b1 for ann." in result.stdout
    assert [s for s, _, _ in state(db)] == ["done", "done", "skipped", "done", "done", "done"]


def test_skip_with_a_reason_and_the_guideline_key(runner, db, tmp_path):
    make_corpus(db, tmp_path, queries=1, docs=3, systems={"bm25": 1})
    create(db, depth=2, overlap=1, graders=["ann"], scale="0-4")
    result = grade(runner, db, "?\ns\nnot in English\nq\n")
    assert result.exit_code == 0
    assert "Hard cases" in result.stdout and "Version: 1.0" in result.stdout
    assert "Excellent" in result.stdout and "skipped (not in English)" in result.stdout
    assert state(db)[0] == ("skipped", "not in English", None)


def test_grade_errors(runner, db, tmp_path):
    make_corpus(db, tmp_path, queries=1, docs=3, systems={"bm25": 1})
    create(db, depth=2, overlap=1, graders=["ann"])
    result = invoke(runner, db, "grade", "nope", "--grader", "ann")
    assert result.exit_code == 1 and result.stderr.strip() == "Error: unknown batch 'nope'; known batches: b1"
    result = invoke(runner, db, "grade", "b1", "--grader", "bob")
    assert result.exit_code == 1 and result.stderr.strip() == "Error: grader 'bob' has no items in batch 'b1'"
    result = invoke(runner, db, "grade", "b1", "--grader", "zed")
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: unknown grader 'zed'; add it with `ndcg-labeling graders add zed`"


def test_everything_shown_to_a_grader_is_inert_text(runner, db, tmp_path):
    """ANSI escapes in a title or body cannot clear the screen or print a fake line; Rich markup in a
    batch name (wk[/bold]) is shown literally instead of crashing; Arabic-Indic digits are no grade."""
    from sqlalchemy import update

    from ndcg_labeling.cli import app

    make_corpus(db, tmp_path, queries=1, docs=2, systems={"bm25": 1})
    with db.engine.begin() as conn:
        conn.execute(update(m.Document).values(title="\x1b[2J\x1b[Hrank 1 (bm25) [bold]x[/bold]",
                                               body="line one\n\x1b[31mred\x07\x08\rcarriage", url="\x1b]8;;evil\x1b\\"))
        conn.execute(update(m.Query).values(text="q\x1b[1A\u202eevil"))
    create(db, name="wk[/bold]", depth=2, overlap=1, graders=["ann"])
    result = runner.invoke(app, ["grade", "wk[/bold]", "--grader", "ann", "--db", db.url], input="\u0662\n1\nq\n",
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for raw in ("\x1b", "\x07", "\x08", "\r", "\u202e"):
        assert raw not in out
    assert "\\x1b[2J\\x1b[Hrank 1 (bm25) [bold]x[/bold]" in out  # visible, literal, markup not applied
    assert "\\x1b[31mred\\x07\\x08\\rcarriage" in out and "line one" in out
    assert "q\\x1b[1A\\u202eevil" in out
    assert "batch wk[/bold]" in out and "Resume with: ndcg-labeling grade wk[/bold] --grader" in out
    assert "Unknown key '\u0662'" in out  # an Arabic-Indic two is not the grade 2
    assert "saved: 1 — Somewhat relevant" in out
    with db.engine.connect() as conn:
        assert conn.execute(select(m.Judgment.grade)).scalars().all() == [1]
