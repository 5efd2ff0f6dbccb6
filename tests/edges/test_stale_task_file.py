"""Issue 36 item 4: a stale task file never overwrites newer work. The export stamps its time
(``exported_at``); a row replaces a different stored grade only if the file was exported after that
grade was made (or the grade came from this same file); otherwise it is refused and counted, unless
``--overwrite-newer``."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update

from ndcg_labeling.db import models as m
from ndcg_labeling.io.tasks_files import parse_stamp
from ndcg_labeling.web.app import create_app
from tests.conftest import invoke
from tests.web.conftest import build_workspace


def _export(runner, db, path):
    result = invoke(runner, db, "tasks", "export", "b1", "--grader", "ann", "--out", str(path))
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(path.read_text(), newline="")))


def _fill(path, rows, grade):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**r, "grade": grade} for r in rows)


def _web_grade(ws, items, grade):
    with TestClient(create_app(ws.db.engine)) as client:
        h = {"Authorization": f"Bearer {ws.token('ann')}"}
        for item in items:
            assert client.post(f"/api/batches/b1/items/{item}/grade", json={"grade": grade}, headers=h).status_code == 200


def test_the_export_stamps_its_time(runner, sqlite_db, tmp_path):
    build_workspace(sqlite_db, tmp_path)
    before = m.utcnow()
    rows = _export(runner, sqlite_db, tmp_path / "ann.csv")
    after = m.utcnow()
    stamps = {r["exported_at"] for r in rows}
    assert len(stamps) == 1
    assert before <= parse_stamp(stamps.pop()) <= after


def test_an_old_file_does_not_replace_newer_web_grades(runner, db, tmp_path):
    ws = build_workspace(db, tmp_path)
    old = tmp_path / "ann.csv"
    rows = _export(runner, db, old)
    items = [r["item_id"] for r in rows]
    _web_grade(ws, items[:3], 3)  # newer work, made after the export
    _fill(old, rows, "1")
    result = invoke(runner, db, "tasks", "import", str(old), "--grader", "ann")
    assert result.exit_code == 0, result.output
    assert f"{len(items) - 3} new, 0 unchanged, 3 refused (graded after this file was exported" in result.stdout
    assert "--overwrite-newer" in result.stdout
    grades = dict((item, g) for _, item, g in ws.judgments())
    assert [grades[i] for i in items[:3]] == [3, 3, 3]  # the web grades stand
    assert all(grades[i] == 1 for i in items[3:])
    result = invoke(runner, db, "tasks", "import", str(old), "--grader", "ann", "--overwrite-newer")
    assert result.exit_code == 0, result.output
    assert "3 replaced" in result.stdout
    assert {g for _, _, g in ws.judgments()} == {1}


def test_a_file_exported_after_the_grade_replaces_it(runner, sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path)
    first = tmp_path / "first.csv"
    rows = _export(runner, sqlite_db, first)
    _fill(first, rows[:1], "3")
    assert invoke(runner, sqlite_db, "tasks", "import", str(first), "--grader", "ann").exit_code == 0
    # the grade was made well before a second export of the same items (its time moved back an hour)
    with sqlite_db.engine.begin() as conn:
        conn.execute(update(m.Judgment).values(created_at=m.utcnow() - timedelta(hours=1)))
    later = tmp_path / "later.csv"
    later_rows = [{**rows[0], "exported_at": m.utcnow().strftime("%Y-%m-%dT%H:%M:%S.%fZ")}]
    _fill(later, later_rows, "0")
    result = invoke(runner, sqlite_db, "tasks", "import", str(later), "--grader", "ann")
    assert result.exit_code == 0, result.output
    assert "1 replaced" in result.stdout and "refused" not in result.stdout
    assert [g for _, _, g in ws.judgments()] == [0]


def test_a_file_without_stamp_replaces_only_its_own_grades(runner, sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path)
    items = ws.items("ann")
    _web_grade(ws, items[:1], 2)
    bare = tmp_path / "bare.csv"
    bare.write_text(f"item_id,grade\n{items[0]},0\n{items[1]},1\n")
    result = invoke(runner, sqlite_db, "tasks", "import", str(bare), "--grader", "ann")
    assert "1 new, 0 unchanged, 1 refused" in result.stdout
    bare.write_text(f"item_id,grade\n{items[0]},0\n{items[1]},3\n")  # the grader corrects their own file
    result = invoke(runner, sqlite_db, "tasks", "import", str(bare), "--grader", "ann")
    assert "0 new, 0 unchanged, 1 replaced" in result.stdout and "1 refused" in result.stdout
    assert sorted(g for _, _, g in ws.judgments()) == [2, 3]


def test_a_bad_stamp_is_a_bad_row(runner, sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path)
    item = ws.items("ann")[0]
    path = tmp_path / "bad.csv"
    path.write_text(f"item_id,grade,exported_at\n{item},1,yesterday\n")
    result = invoke(runner, sqlite_db, "tasks", "import", str(path), "--grader", "ann")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: {path}:2: exported_at 'yesterday' is not an export time (expected like 2026-12-04T06:05:00.123456Z)"
    assert ws.judgments() == []
