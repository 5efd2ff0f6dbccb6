"""Unusual but valid files (as spreadsheets and crowd platforms write them) import exactly like their
plain twin: BOM, CRLF, quoted commas and newlines, spaces around ids, query types and headers (trimmed
by rule; spaces around free text are kept: tests/edges/test_verbatim_text.py), SQL-like and non-Latin
text (stored verbatim), trailing tabs."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import Database, invoke

ODD = Path(__file__).resolve().parents[1] / "data" / "odd"

CASES = [
    ("queries", "queries_plain.csv", "queries_bom.csv"),
    ("queries", "queries_plain.csv", "queries_crlf.csv"),
    ("queries", "queries_plain.csv", "queries_spaces.csv"),
    ("queries", "queries_plain.csv", "queries_trailing_tab.tsv"),
    ("queries", "queries_plain.csv", "queries_trailing_tab_rows_only.tsv"),
    ("documents", "documents_plain.csv", "documents_quoted_newlines.csv"),
    ("judgments", "judgments_plain.csv", "judgments_bom_crlf_quoted.csv"),
    ("judgments", "judgments_plain.csv", "judgments_trailing_tab.tsv"),
    # issue 11 (tests/data/odd/make_odd_files.py): the same rows in other valid shapes
    ("queries", "queries_plain.csv", "queries_reordered_escaped.jsonl"),
    ("queries", "queries_plain.csv", "queries_strings.parquet"),
    ("queries", "queries_plain.csv", "queries_all_quoted.csv"),
    ("queries", "queries_plain.csv", "queries_trailing_comma.csv"),
    ("judgments", "judgments_plain.csv", "judgments_strings.parquet"),
    ("judgments", "judgments_plain.csv", "judgments_int_grades.jsonl"),
]

DUMPS = {
    "queries": "SELECT external_id, text, query_type FROM queries ORDER BY external_id",
    "documents": "SELECT external_id, title, body, url FROM documents ORDER BY external_id",
    "judgments": "SELECT g.name, q.external_id, d.external_id, j.grade, j.scale, j.batch FROM judgments j "
                 "JOIN graders g ON g.id = j.grader_id JOIN queries q ON q.id = j.query_id "
                 "JOIN documents d ON d.id = j.document_id ORDER BY 1, 2, 3",
}


def _import(runner, db: Database, kind: str, path: Path) -> list[tuple]:
    args = ["import", kind, str(path)]
    if kind == "judgments":
        args += ["--scale", "0-3", "--create-graders"]
    result = invoke(runner, db, *args)
    assert result.exit_code == 0, result.output
    with db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(DUMPS[kind]))]


@pytest.mark.parametrize(("kind", "plain", "odd"), CASES, ids=[c[2] for c in CASES])
def test_odd_file_imports_like_plain_twin(runner, db, tmp_path, kind, plain, odd):
    plain_rows = _import(runner, db, kind, ODD / plain)
    assert plain_rows, "the plain twin imported nothing"
    # Re-importing the odd file into the same database must find every row unchanged.
    args = ["import", kind, str(ODD / odd)] + (["--scale", "0-3"] if kind == "judgments" else [])
    result = invoke(runner, db, *args)
    assert result.exit_code == 0, result.output
    assert f"0 new, {len(plain_rows)} unchanged" in result.stdout
    with db.engine.connect() as conn:
        assert [tuple(r) for r in conn.execute(text(DUMPS[kind]))] == plain_rows


def test_sql_like_and_non_latin_text_stored_verbatim(runner, db):
    rows = _import(runner, db, "queries", ODD / "queries_plain.csv")
    assert ("q3", "東京 ラーメン", "long-tail") in rows
    assert ("q4", "Robert'); DROP TABLE queries;--", "informational") in rows
    assert db.counts()["queries"] == 4


def test_line_numbers_count_quoted_newlines(runner, db, tmp_path):
    bad = tmp_path / "docs.csv"
    bad.write_text('doc_id,title,body\nd1,A,"two\nlines"\n,B,empty id\n', encoding="utf-8")
    result = invoke(runner, db, "import", "documents", str(bad))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: {bad}:4: empty doc_id"


def test_long_text_with_control_characters_is_stored_verbatim(runner, db):
    """Text fields are not ids: a 140 KB body (over the csv module's default field limit) and ANSI
    escapes in a title are stored exactly as written (the grade screen makes them inert)."""
    result = invoke(runner, db, "import", "documents", str(ODD / "documents_long_body.csv"))
    assert result.exit_code == 0 and "1 new" in result.stdout, result.output
    with db.engine.connect() as conn:
        title, body = conn.execute(text("SELECT title, body FROM documents WHERE external_id = 'd9'")).one()
    assert title == "Long \x1b[31mred\x1b[0m title"
    assert body == "x" * 140_000 + "\x1b[2J\tend"


def test_printable_non_ascii_and_punctuation_ids_are_ids(runner, db, tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("query_id,text,query_type\n東京-1,a,nav\nq#1;x/ü,b,nav\n", encoding="utf-8")
    result = invoke(runner, db, "import", "queries", str(path))
    assert result.exit_code == 0 and "2 new" in result.stdout, result.output
