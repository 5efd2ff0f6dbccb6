"""Grades are read exactly (issue 36 item 2, issue 34 items 1, 6 and 7, issue 30's five-field qrels).

The reference is Python's ``decimal`` module read independently in each test: a grade is stored only
when the text's exact decimal value is one of the scale's grades; never rounded through a float."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ndcg_labeling.scales import get_scale, parse_grade
from ndcg_labeling.web.app import create_app
from tests.conftest import invoke
from tests.web.conftest import build_workspace

NEAR = ["1.9999999999999999", "0.99999999999999999", "2.0000000000000001", "2.99999999999999999e0"]


@pytest.mark.parametrize("text", NEAR)
def test_near_grades_are_refused_with_their_text(text):
    assert float(text) == round(float(text))  # float() would round each of them to a grade...
    assert Decimal(text) != Decimal(text).to_integral_value()  # ...though none is one exactly
    with pytest.raises(ValueError, match=f"grade '{text}' is not an integer"):
        parse_grade(text, get_scale("0-3"))


@pytest.mark.parametrize(("text", "grade"), [("2", 2), ("2.0", 2), ("2e0", 2), ("0.3e1", 3), ("-0", 0), ("3.000", 3)])
def test_exact_spellings_of_a_grade_are_read(text, grade):
    assert Decimal(text) == grade
    assert parse_grade(text, get_scale("0-3")) == grade


def _files(tmp_path: Path, value: str) -> dict[str, tuple[Path, list[str]]]:
    csv_file = tmp_path / "j.csv"
    csv_file.write_text(f"query_id,doc_id,grader,grade\nq1,d1,ann,1\nq1,d2,ann,{value}\n")
    jsonl = tmp_path / "j.jsonl"
    jsonl.write_text('{"query_id":"q1","doc_id":"d1","grader":"ann","grade":1}\n'
                     f'{{"query_id":"q1","doc_id":"d2","grader":"ann","grade":{value}}}\n')
    qrels = tmp_path / "j.qrels"
    qrels.write_text(f"q1 0 d1 1\nq1 0 d2 {value}\n")
    return {"csv": (csv_file, []), "jsonl": (jsonl, []),
            "qrels": (qrels, ["--format", "trec-qrels", "--grader", "ann"])}


@pytest.mark.parametrize("kind", ["csv", "jsonl", "qrels"])
@pytest.mark.parametrize("value", ["1.9999999999999999", "0.99999999999999999"])
def test_import_judgments_refuses_a_rounded_grade(runner, db, tmp_path, kind, value):
    path, extra = _files(tmp_path, value)[kind]
    before = db.counts()
    result = invoke(runner, db, "import", "judgments", str(path), "--scale", "0-3", "--create-graders", *extra)
    assert result.exit_code == 1, result.output
    line = 3 if kind == "csv" else 2
    problem = f"relevance must be an integer, got '{value}'" if kind == "qrels" else f"grade '{value}' is not an integer"
    assert result.stderr.strip() == f"Error: {path}:{line}: {problem}"
    assert db.counts() == before


@pytest.mark.parametrize("value", ["1e20", "99999999999999999999"])
def test_qrels_relevance_too_large_prints_the_files_value_and_nothing_else(sqlite_db, tmp_path, value):
    """In a subprocess: the NumPy RuntimeWarning went to the real stderr."""
    path = tmp_path / "big.qrels"
    path.write_text(f"q1 0 d1 {value}\n")
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    done = subprocess.run([sys.executable, "-m", "ndcg_labeling", "import", "judgments", str(path), "--format",
                           "trec-qrels", "--grader", "ann", "--scale", "0-3", "--create-graders", "--db",
                           sqlite_db.url], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"Error: {path}:1: grade {value} is outside the scale 0-3 (0..3)"]


def test_qrels_with_five_fields_is_one_error_line(runner, sqlite_db, tmp_path):
    path = tmp_path / "five.qrels"
    path.write_text("q1 0 d1 1 extra\nq1 0 d2 0 extra\n")
    result = invoke(runner, sqlite_db, "import", "judgments", str(path), "--format", "trec-qrels", "--grader", "ann",
                    "--scale", "0-3", "--create-graders")
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == (f"Error: {path}:1: expected 4 whitespace-separated fields "
                                     "(query_id iteration doc_id relevance), got 5")


def test_reimport_on_another_scale_names_the_scales(runner, db, tmp_path):
    path = tmp_path / "j.csv"
    path.write_text("query_id,doc_id,grader,grade\nQ001,D0009,ann,0\n")
    assert invoke(runner, db, "import", "judgments", str(path), "--scale", "0-3", "--create-graders").exit_code == 0
    before = db.counts()
    result = invoke(runner, db, "import", "judgments", str(path), "--scale", "0-4")
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert line.startswith(f"Error: {path}:2: grader 'ann' already graded ('Q001', 'D0009') on scale 0-3")
    assert "on scale 0-4" in line and "not 0;" not in line
    assert db.counts() == before


def test_tasks_import_refuses_a_rounded_grade(runner, sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path)
    item = ws.items("ann")[0]
    path = tmp_path / "filled.csv"
    path.write_text(f"item_id,grade\n{item},1.9999999999999999\n")
    result = invoke(runner, sqlite_db, "tasks", "import", str(path), "--grader", "ann")
    assert result.exit_code == 1
    assert f"{path}:2: grade '1.9999999999999999'" in result.stderr
    assert ws.judgments() == []


@pytest.mark.parametrize("grade", ["+2", "02", " 2 ", "2.0", "1.9999999999999999", "２"])
def test_api_takes_only_the_scales_own_spelling(db, tmp_path, grade):
    ws = build_workspace(db, tmp_path)
    item = ws.items("ann")[0]
    with TestClient(create_app(ws.db.engine)) as client:
        h = {"Authorization": f"Bearer {ws.token('ann')}"}
        bad = client.post(f"/api/batches/b1/items/{item}/grade", json={"grade": grade}, headers=h)
        assert bad.status_code == 422, bad.text
        assert bad.json()["detail"].startswith(f"grade {grade!r} is not a grade of scale 0-3")
        assert ws.judgments() == []
        good = client.post(f"/api/batches/b1/items/{item}/grade", json={"grade": "2"}, headers=h)
        assert good.status_code == 200
    assert ws.judgments() == [("ann", item, 2)]
