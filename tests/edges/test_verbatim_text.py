"""Issue 36 item 3: free text is stored verbatim (a query's text, a title, a body, a URL, a display
name); ids and the query type are trimmed by rule, and the summary says how many values were trimmed."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from tests.conftest import invoke


def _rows(db, sql):
    with db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_free_text_is_verbatim_and_ids_are_trimmed_and_counted(runner, db, tmp_path, kind):
    queries = [(" q1 ", "  cheap flights  ", " transactional "), ("q2", "\tpython docs ", "navigational")]
    docs = [(" d1", " Title ", "  body with spaces  ", " "), ("d2", "T2", "b2", "https://example.org/ ")]
    graders = [(" ann ", " Ann B. ")]
    if kind == "csv":
        q = tmp_path / "q.csv"
        q.write_text("query_id,text,query_type\n" + "".join(f'"{a}","{b}","{c}"\n' for a, b, c in queries))
        d = tmp_path / "d.csv"
        d.write_text("doc_id,title,body,url\n" + "".join(f'"{a}","{b}","{c}","{e}"\n' for a, b, c, e in docs))
        g = tmp_path / "g.csv"
        g.write_text("grader,display_name\n" + "".join(f'"{a}","{b}"\n' for a, b in graders))
    else:
        q, d, g = tmp_path / "q.jsonl", tmp_path / "d.jsonl", tmp_path / "g.jsonl"
        q.write_text("".join(json.dumps({"query_id": a, "text": b, "query_type": c}) + "\n" for a, b, c in queries))
        d.write_text("".join(json.dumps({"doc_id": a, "title": b, "body": c, "url": e}) + "\n" for a, b, c, e in docs))
        g.write_text("".join(json.dumps({"grader": a, "display_name": b}) + "\n" for a, b in graders))
    result = invoke(runner, db, "import", "queries", str(q))
    assert result.exit_code == 0, result.output
    assert "2 query_id/query_type value(s) trimmed of surrounding spaces" in result.stdout
    result = invoke(runner, db, "import", "documents", str(d))
    assert result.exit_code == 0, result.output
    assert "1 doc_id value(s) trimmed" in result.stdout
    result = invoke(runner, db, "import", "graders", str(g))
    assert result.exit_code == 0, result.output
    assert "1 grader value(s) trimmed" in result.stdout
    assert _rows(db, "SELECT external_id, text, query_type FROM queries ORDER BY external_id") == [
        ("q1", "  cheap flights  ", "transactional"), ("q2", "\tpython docs ", "navigational")]
    assert _rows(db, "SELECT external_id, title, body, url FROM documents ORDER BY external_id") == [
        ("d1", " Title ", "  body with spaces  ", " "), ("d2", "T2", "b2", "https://example.org/ ")]
    assert _rows(db, "SELECT name, display_name FROM graders") == [("ann", " Ann B. ")]


def test_nothing_trimmed_says_nothing(runner, sqlite_db, tmp_path):
    q = tmp_path / "q.csv"
    q.write_text("query_id,text,query_type\nq1,cheap flights,transactional\n")
    result = invoke(runner, sqlite_db, "import", "queries", str(q))
    assert result.exit_code == 0 and "trimmed of surrounding spaces" not in result.stdout
