"""The bad-input corpus (tests/data/bad/): every broken file is refused through the CLI with exit 1,
one line naming the file and (where there is one) the line, no traceback, and the content of every
table unchanged. Runs on SQLite and PostgreSQL.

One migrated database per backend serves the whole module (seeded once: graders, a run, two batches);
each case compares a snapshot of every table's rows before and after. The commands run in-process
through Typer's CliRunner, which gives the same output as the console script (the wheel test and
tests/cli/test_import_cli.py run real processes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import BACKENDS, Database, invoke

BAD = Path(__file__).resolve().parents[1] / "data" / "bad"

JUDG = ["import", "judgments", "--scale", "0-3"]
QRELS = ["import", "judgments", "--scale", "0-3", "--format", "trec-qrels", "--grader", "alice"]
RUN = ["import", "run", "--system", "bm25"]

# issue 11: the id rule, refused structure, limits and typed formats (tests/data/bad/make_bad_files.py)
NEW_CORPUS: dict[str, tuple[list[str], str]] = {
    'documents_duplicate_header.csv': (["import", "documents"], ":1: the header names the column 'title' twice"),
    'documents_id_513.csv': (["import", "documents"], ':2: doc_id is 513 characters long; the limit is 512'),
    'documents_id_control.tsv': (["import", "documents"], ":3: doc_id 'd\\x012' contains a control or non-printable character (U+0001); ids are printable text without white space"),
    'documents_id_object.jsonl': (["import", "documents"], ':1: doc_id must be a string, got JSON object {"$gt": ""}'),
    'documents_id_space.csv': (["import", "documents"], ":3: doc_id 'd 2' contains white space (U+0020); ids are printable text without white space"),
    'documents_id_struct.parquet': (["import", "documents"], ': column doc_id: ids must be strings, got a Parquet struct<a: int64> column'),
    'documents_nested.jsonl': (["import", "documents"], ':1: not a JSON object: nested too deeply'),
    'documents_nul_body.jsonl': (["import", "documents"], ":1: NUL character (\\u0000) in the value of 'body'"),
    'documents_short_row.csv': (["import", "documents"], ':3: 2 field(s) where the header has 3: a value is missing (quote values that hold the delimiter)'),
    'graders_display_name_257.csv': (["import", "graders"], ':2: display_name is 257 characters long; the limit is 256'),
    'graders_name_129.csv': (["import", "graders"], ':2: grader is 129 characters long; the limit is 128'),
    'graders_name_space.csv': (["import", "graders"], ":2: grader 'alice smith' contains white space (U+0020); ids are printable text without white space"),
    'graders_name_true.jsonl': (["import", "graders"], ':1: grader must be a string, got JSON boolean true'),
    'graders_short_row.csv': (["import", "graders"], ':3: 1 field(s) where the header has 2: a value is missing (quote values that hold the delimiter)'),
    'judgments_batch_129.csv': (JUDG, ':2: batch is 129 characters long; the limit is 128'),
    'judgments_batch_200k.tsv': (JUDG, ':2: batch is 200000 characters long; the limit is 128'),
    'judgments_doc_id_binary.parquet': (JUDG, ': column doc_id: ids must be strings, got a Parquet binary column'),
    'judgments_doc_id_control.parquet': (JUDG, ": row 1: doc_id 'd\\x1b1' contains a control or non-printable character (U+001B); ids are printable text without white space"),
    'judgments_doc_id_nan.jsonl': (JUDG, ':1: not valid JSON: NaN is not a JSON value'),
    'judgments_doc_id_number.jsonl': (JUDG, ':1: doc_id must be a string, got JSON number 7'),
    'judgments_doc_id_space.csv': (JUDG, ":3: doc_id 'd 2' contains white space (U+0020); ids are printable text without white space"),
    'judgments_doc_id_tab.tsv': (JUDG, ":2: doc_id 'd\\t1' contains white space (U+0009); ids are printable text without white space"),
    'judgments_duplicate_header.csv': (JUDG, ":1: the header names the column 'grade' twice"),
    'judgments_duplicate_header_batch.tsv': (JUDG, ":1: the header names the column 'batch' twice"),
    'judgments_grade_1e309.jsonl': (JUDG, ':1: not valid JSON: the number 1e309 is too large'),
    'judgments_grade_1e400.csv': (JUDG, ":2: grade 1e400 is outside the scale 0-3 (0..3)"),  # exactly 10**400
    'judgments_grade_arabic_indic.csv': (JUDG, ":3: grade '٢' is not an integer"),
    'judgments_grade_bool.parquet': (JUDG, ": row 1: grade 'True' is not an integer"),
    'judgments_grade_fullwidth.csv': (JUDG, ":2: grade '２' is not an integer"),
    'judgments_grade_inf.csv': (JUDG, ":2: grade 'inf' is not an integer"),
    'judgments_grade_nan.jsonl': (JUDG, ':1: not valid JSON: NaN is not a JSON value'),
    'judgments_grade_true.jsonl': (JUDG, ":1: grade 'True' is not an integer"),
    'judgments_grade_underscore.csv': (JUDG, ":2: grade '1_0' is not an integer"),
    'judgments_grader_129.csv': (JUDG, ':2: grader is 129 characters long; the limit is 128'),
    'judgments_grader_struct.parquet': (JUDG, ': column grader: ids must be strings, got a Parquet struct<name: string> column'),
    'judgments_long_row.tsv': (JUDG, ':2: 5 fields where the header has 4 (quote values that hold the delimiter)'),
    'judgments_nul.csv': (JUDG, ':2: NUL byte (0x00) in the file; is it binary, or UTF-16?'),
    'judgments_query_id_1e309.jsonl': (JUDG, ':1: not valid JSON: the number 1e309 is too large'),
    'judgments_query_id_int.parquet': (JUDG, ': column query_id: ids must be strings, got a Parquet int64 column'),
    'judgments_short_row.csv': (JUDG, ':3: 3 field(s) where the header has 4: a value is missing (quote values that hold the delimiter)'),
    'qrels_doc_id_513.txt': (QRELS, ':1: doc_id is 513 characters long; the limit is 512'),
    'qrels_doc_id_control.txt': (QRELS, ":2: doc_id 'd\\x1b[31m2' contains a control or non-printable character (U+001B); ids are printable text without white space"),
    'qrels_query_id_zero_width.txt': (QRELS, ":1: query_id 'q\\u200b1' contains a control or non-printable character (U+200B); ids are printable text without white space"),
    'queries_duplicate_columns.parquet': (["import", "queries"], ": the file names the column 'query_id' twice"),
    'queries_duplicate_header.csv': (["import", "queries"], ":1: the header names the column 'query_id' twice"),
    'queries_duplicate_header.tsv': (["import", "queries"], ":1: the header names the column 'text' twice"),
    'queries_duplicate_key.jsonl': (["import", "queries"], ":1: not valid JSON: the key 'query_id' appears twice"),
    'queries_id_1e309.jsonl': (["import", "queries"], ':2: not valid JSON: the number 1e309 is too large'),
    'queries_id_200k.csv': (["import", "queries"], ':3: query_id is 200000 characters long; the limit is 512'),
    'queries_id_513.jsonl': (["import", "queries"], ':2: query_id is 513 characters long; the limit is 512'),
    'queries_id_ansi.csv': (["import", "queries"], ":3: query_id 'q\\x1b[2J' contains a control or non-printable character (U+001B); ids are printable text without white space"),
    'queries_id_array.jsonl': (["import", "queries"], ':2: query_id must be a string, got JSON array ["q1"]'),
    'queries_id_bidi.jsonl': (["import", "queries"], ":2: query_id 'q\\u202e2' contains a control or non-printable character (U+202E); ids are printable text without white space"),
    'queries_id_binary.parquet': (["import", "queries"], ': column query_id: ids must be strings, got a Parquet binary column'),
    'queries_id_del.csv': (["import", "queries"], ":3: query_id 'q\\x7f2' contains a control or non-printable character (U+007F); ids are printable text without white space"),
    'queries_id_float.jsonl': (["import", "queries"], ':2: query_id must be a string, got JSON number 1.5'),
    'queries_id_ideographic_space.csv': (["import", "queries"], ":3: query_id 'q\\u30002' contains white space (U+3000); ids are printable text without white space"),
    'queries_id_infinity.jsonl': (["import", "queries"], ':2: not valid JSON: -Infinity is not a JSON value'),
    'queries_id_int.parquet': (["import", "queries"], ': column query_id: ids must be strings, got a Parquet int64 column'),
    'queries_id_list.parquet': (["import", "queries"], ': column query_id: ids must be strings, got a Parquet list<element: string> column'),
    'queries_id_nan.jsonl': (["import", "queries"], ':2: not valid JSON: NaN is not a JSON value'),
    'queries_id_nbsp.tsv': (["import", "queries"], ":3: query_id 'q\\xa02' contains white space (U+00A0); ids are printable text without white space"),
    'queries_id_newline.csv': (["import", "queries"], ":3: query_id 'q\\n2' contains white space (U+000A); ids are printable text without white space"),
    'queries_id_nul_escape.jsonl': (["import", "queries"], ":2: NUL character (\\u0000) in the value of 'query_id'"),
    'queries_id_number.jsonl': (["import", "queries"], ':2: query_id must be a string, got JSON number 1'),
    'queries_id_object.jsonl': (["import", "queries"], ':2: query_id must be a string, got JSON object {"$ne": 1}'),
    'queries_id_space.csv': (["import", "queries"], ":3: query_id 'q 2' contains white space (U+0020); ids are printable text without white space"),
    'queries_id_space.parquet': (["import", "queries"], ": row 2: query_id 'q 2' contains white space (U+0020); ids are printable text without white space"),
    'queries_id_struct.parquet': (["import", "queries"], ': column query_id: ids must be strings, got a Parquet struct<a: int64> column'),
    'queries_id_tab.tsv': (["import", "queries"], ":3: query_id 'q\\t2' contains white space (U+0009); ids are printable text without white space"),
    'queries_id_true.jsonl': (["import", "queries"], ':2: query_id must be a string, got JSON boolean true'),
    'queries_id_zero_width.csv': (["import", "queries"], ":3: query_id 'q\\u200b2' contains a control or non-printable character (U+200B); ids are printable text without white space"),
    'queries_long_row.csv': (["import", "queries"], ':2: 4 fields where the header has 3 (quote values that hold the delimiter)'),
    'queries_nested.jsonl': (["import", "queries"], ':1: not a JSON object: nested too deeply'),
    'queries_nul_escape_in_text.jsonl': (["import", "queries"], ":2: NUL character (\\u0000) in the value of 'text'"),
    'queries_nul_in_text.csv': (["import", "queries"], ':3: NUL byte (0x00) in the file; is it binary, or UTF-16?'),
    'queries_nul_text.parquet': (["import", "queries"], ": row 2: NUL byte (0x00) in column 'text'"),
    'queries_query_type_65.csv': (["import", "queries"], ':2: query_type is 65 characters long; the limit is 64'),
    'queries_query_type_65.jsonl': (["import", "queries"], ':2: query_type is 65 characters long; the limit is 64'),
    'queries_semicolon_quoted.csv': (["import", "queries"], ':2: 2 fields where the header has 1 (is the delimiter right?)'),
    'queries_short_row.csv': (["import", "queries"], ':3: 2 field(s) where the header has 3: a value is missing (quote values that hold the delimiter)'),
    'queries_short_row.tsv': (["import", "queries"], ':3: 1 field(s) where the header has 3: a value is missing (quote values that hold the delimiter)'),
    'queries_short_row_after_quoted_newline.csv': (["import", "queries"], ':4: 2 field(s) where the header has 3: a value is missing (quote values that hold the delimiter)'),
    'queries_top_level_array.jsonl': (["import", "queries"], ':1: not a JSON object: got list'),
    'queries_utf16.csv': (["import", "queries"], ':1: NUL byte (0x00) in the file; is it binary, or UTF-16?'),
    'run_doc_id_ansi.txt': (RUN, ":2: doc_id 'd\\x1b[2J2' contains a control or non-printable character (U+001B); ids are printable text without white space"),
    'run_doc_id_control.tsv': (RUN, ":2: doc_id 'd\\x071' contains a control or non-printable character (U+0007); ids are printable text without white space"),
    'run_doc_id_object.jsonl': (RUN, ':1: doc_id must be a string, got JSON object {"id": "d1"}'),
    'run_doc_id_space.csv': (RUN, ":2: doc_id 'd 1' contains white space (U+0020); ids are printable text without white space"),
    'run_doc_id_zero_width.txt': (RUN, ":1: doc_id 'd\\u200b1' contains a control or non-printable character (U+200B); ids are printable text without white space"),
    'run_duplicate_header.csv': (RUN, ":1: the header names the column 'rank' twice"),
    'run_nul.txt': (RUN, ':2: NUL byte (0x00) in the file; is it binary, or UTF-16?'),
    'run_query_id_struct.parquet': (RUN, ': column query_id: ids must be strings, got a Parquet struct<q: int64> column'),
    'run_rank_1e20.csv': (RUN, ":3: rank '1e20' is not a whole number from 1 to 2147483647"),
    'run_rank_2_31.csv': (RUN, ":2: rank '2147483648' is not a whole number from 1 to 2147483647"),
    'run_rank_2_31.parquet': (RUN, ": row 1: rank '2147483648' is not a whole number from 1 to 2147483647"),
    'run_rank_arabic_indic.csv': (RUN, ":2: rank '١' is not a whole number from 1 to 2147483647"),
    'run_rank_fraction.csv': (RUN, ":2: rank '1.5' is not a whole number from 1 to 2147483647"),
    'run_rank_hex.tsv': (RUN, ":2: rank '0x1' is not a whole number from 1 to 2147483647"),
    'run_rank_inf.csv': (RUN, ":2: rank 'inf' is not a whole number from 1 to 2147483647"),
    'run_rank_negative.csv': (RUN, ":2: rank '-1' is not a whole number from 1 to 2147483647"),
    'run_score_word.csv': (RUN, ":2: score 'high' is not a finite number"),
    'run_short_row.csv': (RUN, ':3: 2 field(s) where the header has 4: a value is missing (quote values that hold the delimiter)'),
}


# file -> (command, what follows "Error: <path>")
CORPUS: dict[str, tuple[list[str], str]] = {
    "queries_wrong_delimiter.csv": (["import", "queries"], ":1: missing column(s) query_id, text, query_type: expected "
                                    "query_id,text,query_type, found query_id;text;query_type (is the delimiter right?)"),
    "queries_missing_column.csv": (["import", "queries"], ":1: missing column(s) query_type: expected query_id,text,"
                                   "query_type, found query_id,text"),
    "queries_misspelt_column.csv": (["import", "queries"], ":1: missing column(s) query_id: expected query_id,text,"
                                    "query_type, found qid,text,query_type"),
    "queries_empty.csv": (["import", "queries"], ": the file is empty"),
    "queries_header_only.csv": (["import", "queries"], ": the file has a header but no rows"),
    "queries_latin1.csv": (["import", "queries"], ":2: not UTF-8 text (byte 0xe9)"),
    "queries_empty_id.tsv": (["import", "queries"], ":3: empty query_id"),
    "queries_long_id.csv": (["import", "queries"], ":2: query_id is 10000 characters long; the limit is 512"),
    "queries_duplicate.jsonl": (["import", "queries"], ":2: duplicate query_id (query_id='q1'), first seen at line 1"),
    "queries_not_json.jsonl": (["import", "queries"], ":2: not a JSON object: Expecting value"),
    "documents_no_body_or_url.csv": (["import", "documents"], ":1: missing column body or url: expected doc_id,title,"
                                     "body or doc_id,title,url"),
    "documents_empty_id.jsonl": (["import", "documents"], ":2: empty doc_id"),
    "graders_missing_column.csv": (["import", "graders"], ":1: missing column(s) grader: expected grader,"
                                   "[display_name], found name,display_name"),
    "judgments_grade_fraction.csv": (JUDG, ":3: grade '3.5' is not an integer"),
    "judgments_grade_negative.csv": (JUDG, ":2: grade -1 is outside the scale 0-3 (0..3)"),
    "judgments_grade_5_on_0-4.csv": (["import", "judgments", "--scale", "0-4"], ":3: grade 5 is outside the scale "
                                     "0-4 (0..4)"),
    "judgments_grade_word.tsv": (JUDG, ":2: grade 'three' is not an integer"),
    "judgments_grade_empty.csv": (JUDG, ":2: empty grade"),
    "judgments_duplicate_rows.csv": (JUDG, ":4: duplicate judgment (query_id='q1', doc_id='d1', grader='alice', "
                                     "batch=''), first seen at line 2"),
    "judgments_unknown_grader.csv": (JUDG, ":3: unknown grader 'mallory' (1 unknown); add it with `ndcg-labeling "
                                     "graders add mallory` or pass --create-graders"),
    "judgments_empty_doc_id.jsonl": (JUDG, ":1: empty doc_id"),
    "judgments_wrong_types.parquet": (JUDG, ": row 1: grade 'high' is not an integer"),
    "judgments_corrupt.parquet": (JUDG, ": not a readable Parquet file: truncated, or not Parquet (no PAR1 marks at "
                                  "start and end)"),
    "qrels_non_integer.txt": (QRELS, ":2: relevance must be an integer, got 'relevant'"),
    "qrels_three_columns.txt": (QRELS, ":2: expected 4 whitespace-separated fields (query_id iteration doc_id "
                                "relevance), got 3"),
    "run_nan_score.txt": (RUN, ":2: score must be a finite number, got 'nan'"),
    "run_inf_score.txt": (RUN, ":1: score must be a finite number, got 'inf'"),
    "run_five_columns.txt": (RUN, ":2: expected 6 whitespace-separated fields (query_id Q0 doc_id rank score tag), "
                             "got 5"),
    "run_duplicate_doc.txt": (RUN, ":2: document 'd1' appears twice for query 'q1'"),
    "run_empty.txt": (RUN, ": the file is empty"),
    "run_duplicate_rank.csv": (RUN, ":3: duplicate rank 1 for query 'q1'"),
    "run_missing_rank.csv": (RUN, ":1: missing column(s) rank: expected query_id,doc_id,rank,[score], found "
                             "query_id,doc_id,score"),
} | NEW_CORPUS


NEW_TASK_CORPUS: dict[str, tuple[list[str], str]] = {
    'labelstudio_choices_string.json': (["--format", "label-studio"], ': task 1: value.choices must be a list of one choice, got str "2"'),
    'labelstudio_item_id_number.json': (["--format", "label-studio"], ': task 1: data.item_id must be a string, got int'),
    'labelstudio_nested.json': (["--format", "label-studio"], ': not a Label Studio JSON export: nested too deeply'),
    'labelstudio_two_choices.json': (["--format", "label-studio"], ': task 1: value.choices holds 2 choices; a grade is one choice'),
    'tasks_duplicate_header.csv': ([], ":1: the header names the column 'grade' twice"),
    'tasks_grade_arabic_indic.csv': ([], ":2: grade '٢' is not a grade of scale 0-3 (0..3 or a grade name)"),
    'tasks_grade_fullwidth.jsonl': ([], ":1: grade '２' is not a grade of scale 0-3 (0..3 or a grade name)"),
    'tasks_nul.csv': ([], ':2: NUL byte (0x00) in the file; is it binary, or UTF-16?'),
    'tasks_semicolon.csv': ([], ':2: 3 fields where the header has 1 (is the delimiter right?)'),
    'tasks_short_row.csv': ([], ':2: 2 field(s) where the header has 3: a value is missing (quote values that hold the delimiter)'),
}

# --- tasks import: files whose item ids are filled in with those of the shared database ---------------

TASK_CORPUS: dict[str, tuple[list[str], str]] = {
    "tasks_other_graders_item.csv": ([], ":3: item_id '{bob_b1}' is not assigned to grader 'alice'"),
    "tasks_grade_outside_scale.csv": ([], ":2: grade 7 is outside the scale 0-3 (0..3)"),
    "tasks_grade_fraction.jsonl": ([], ":1: grade '2.5' is not a grade of scale 0-3 (0..3 or a grade name)"),
    "tasks_unknown_item.jsonl": ([], ":2: unknown item_id 'not-an-item'"),
    "tasks_missing_grade_column.csv": ([], ":1: missing column(s) grade: expected item_id,grade, found item_id,relevance"),
    "labelstudio_other_batch.json": (["--format", "label-studio", "--batch", "b1"],
                                     ": task 2: item_id '{alice_b2}' belongs to batch 'b2', not 'b1'"),
    "labelstudio_not_a_list.json": (["--format", "label-studio"],
                                    ": not a Label Studio JSON export: expected a list of tasks, got dict"),
} | NEW_TASK_CORPUS




def test_corpus_is_complete():
    files = {p.name for p in BAD.iterdir() if p.is_file() and p.suffix != ".py"}
    listed = set(CORPUS) | set(TASK_CORPUS)
    assert files == listed, f"unlisted: {files - listed}; missing: {listed - files}"
    assert len(files) >= 120
    formats = {p.split(".", 1)[1] for p in files}
    assert {"csv", "tsv", "jsonl", "parquet", "txt", "json"} <= formats


class Shared:
    """The module's database, seeded once, with the item ids the task files refer to."""

    def __init__(self, db: Database, ids: dict[str, str]) -> None:
        self.db = db
        self.ids = ids

    def snapshot(self) -> dict[str, list[tuple]]:
        """Every row of every table, sorted (so that a changed value is seen, not only a count)."""
        import ndcg_labeling.db.models  # noqa: F401
        from ndcg_labeling.db.base import Base

        with self.db.engine.connect() as conn:
            return {name: sorted((tuple(r) for r in conn.execute(text(f"SELECT * FROM {name}"))), key=repr)
                    for name in sorted(Base.metadata.tables)}


def _item_of(runner, db, tmp_path: Path, batch: str, grader: str) -> str:
    out = tmp_path / f"{batch}-{grader}.csv"
    assert invoke(runner, db, "tasks", "export", batch, "--grader", grader, "--out", str(out)).exit_code == 0
    return out.read_text().splitlines()[1].split(",")[0]


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    from typer.testing import CliRunner


    tmp = tmp_path_factory.mktemp(f"corpus-{request.param}")
    db = Database(request.param, tmp, migrated=True)
    runner = CliRunner()
    assert invoke(runner, db, "graders", "add", "alice", "bob").exit_code == 0
    run = tmp / "run.txt"
    run.write_text("q1 Q0 d1 1 3 s\nq1 Q0 d2 2 2 s\nq2 Q0 d3 1 3 s\nq2 Q0 d4 2 2 s\n")
    assert invoke(runner, db, "import", "run", str(run), "--system", "s").exit_code == 0
    for batch, query, seed in (("b1", "q1", "1"), ("b2", "q2", "2")):
        result = invoke(runner, db, "tasks", "create", batch, "--scale", "0-3", "--depth", "2", "--overlap", "1",
                        "--graders", "alice,bob", "--query-id", query, "--seed", seed)
        assert result.exit_code == 0, result.output
    ids = {"alice_b1": _item_of(runner, db, tmp, "b1", "alice"), "bob_b1": _item_of(runner, db, tmp, "b1", "bob"),
           "alice_b2": _item_of(runner, db, tmp, "b2", "alice")}
    yield Shared(db, ids)
    db.drop()


def _check_refused(result, path: Path, expected: str, before: dict, shared: Shared) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"Error: {path}{expected}"]
    assert shared.snapshot() == before


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_bad_file_is_refused(runner, shared, name):
    before = shared.snapshot()
    command, expected = CORPUS[name]
    path = BAD / name
    result = invoke(runner, shared.db, *command[:2], str(path), *command[2:])
    _check_refused(result, path, expected, before, shared)


@pytest.mark.parametrize("name", sorted(TASK_CORPUS))
def test_bad_graded_file_is_refused(runner, shared, tmp_path, name):
    content = (BAD / name).read_text(encoding="utf-8")
    options, expected = TASK_CORPUS[name]
    for key, value in shared.ids.items():
        content = content.replace("{" + key + "}", value)
        expected = expected.replace("{" + key + "}", value)
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    before = shared.snapshot()
    result = invoke(runner, shared.db, "tasks", "import", str(path), "--grader", "alice", *options)
    _check_refused(result, path, expected, before, shared)
