"""What ``implicit derive`` refuses before it stores anything: ids and grader names that break the id rule
the importers enforce (:mod:`ndcg_labeling.io.ids`), named at their file and line; numbers beyond what
the models, the stored window and the database hold; times that are not finite. One Error line each,
exit 1, the database unchanged."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ndcg_labeling.engines import LogRequest, parquet_scan
from ndcg_labeling.engines.duckdb import DuckDBEngine
from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from tests.conftest import invoke

HEADER = "request_id,query_id,doc_id,position,clicked,ts,watch_ratio"
GOOD = "r0,Q1,D1,1,1,1762041890,0.5"
TAIL = "ids are printable text without white space (nothing was stored)"


def _csv(tmp_path: Path, *rows: str) -> str:
    path = tmp_path / "log.csv"
    path.write_text("\n".join([HEADER, GOOD, *rows]) + "\n", encoding="utf-8")
    return str(path)


def _derive(runner, db, log: str, *args: str, model: str = "watch", grader: str = "bz"):  # noqa: ANN001, ANN201
    before = db.counts()
    result = invoke(runner, db, "implicit", "derive", log, "--model", model, "--grader", grader,
                    "--min-impressions", "1", *args)
    assert result.exit_code == 1, result.stdout
    assert db.counts() == before
    return result.stderr.strip()


LONG = "D" + "x" * 599


@pytest.mark.parametrize(("row", "line", "problem"), [
    ("r1,Q 010,D0113,1,1,1762041890,0.5", 3, f"query_id 'Q 010' contains white space (U+0020); {TAIL}"),
    ("r1,Q1,\x1b[31mDX,2,1,1762041890,0.5", 3,
     f"doc_id '\\x1b[31mDX' contains a control or non-printable character (U+001B); {TAIL}"),
    ('r1,Q1,"D01\n13",2,1,1762041890,0.5', 3, f"doc_id 'D01\\n13' contains white space (U+000A); {TAIL}"),
    ("r1,Q1,\ufeffD2,2,1,1762041890,0.5", 3,
     f"doc_id '\\ufeffD2' contains a control or non-printable character (U+FEFF); {TAIL}"),
    (f"r1,Q1,{LONG},2,1,1762041890,0.5", 3, "doc_id is 600 characters long; the limit is 512 (nothing was stored)"),
])
def test_a_log_id_that_breaks_the_id_rule_is_named_at_its_line(runner, db, tmp_path, row, line, problem):
    log = _csv(tmp_path, row)
    assert _derive(runner, db, log) == f"Error: {log}:{line}: {problem}"


def test_a_bad_id_in_a_parquet_folder_names_file_and_row_on_both_paths(runner, db, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    common = {"request_id": ["r1", "r2", "r3"], "position": [1, 1, 1], "clicked": [1, 0, 0], "ts": [1762041890.0] * 3,
              "watch_ratio": [0.5] * 3}
    pq.write_table(pa.table({**common, "query_id": ["Q1", "Q2", "Q3"], "doc_id": ["D1", "D2", "D3"]}), folder / "a.parquet")
    pq.write_table(pa.table({**common, "query_id": ["Q1", "Q2", "Q3"], "doc_id": ["D1", "D\x1b[2J", "D3"]}),
                   folder / "b.parquet")
    problem = f"doc_id 'D\\x1b[2J' contains a control or non-printable character (U+001B); {TAIL}"
    assert _derive(runner, db, str(folder)) == f"Error: {folder / 'b.parquet'}:row 1: {problem}"
    # the compiled scan checks the distinct ids of its result and hands a bad one to DuckDB, which names it
    request = LogRequest(sources=(str(folder),), watch=True)
    assert parquet_scan.aggregate(request, sorted(str(p) for p in folder.iterdir())) is None
    with pytest.raises(InputFileError) as raised:
        DuckDBEngine(compiled_scan=True).aggregate(request)
    assert str(raised.value) == f"{folder / 'b.parquet'}:row 1: {problem}"


def test_a_float_id_column_is_refused_even_inside_a_folder(runner, db, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    common = {"request_id": ["r1"], "doc_id": ["D1"], "position": [1], "clicked": [1], "ts": [1762041890.0],
              "watch_ratio": [0.5]}
    pq.write_table(pa.table({**common, "query_id": ["Q1"]}), folder / "a.parquet")
    pq.write_table(pa.table({**common, "query_id": [1.5]}), folder / "b.parquet")
    expected = f"Error: {folder / 'b.parquet'}: column query_id: ids must be text or integers, got DOUBLE"
    assert _derive(runner, db, str(folder)) == expected  # read together, the column would be text "1.5"
    assert _derive(runner, db, str(folder / "b.parquet")) == expected


@pytest.mark.parametrize(("grader", "problem"), [
    ("a b", "grader name 'a b' contains white space (U+0020); ids are printable text without white space"),
    ("x\x1b[2Jy", "grader name 'x\\x1b[2Jy' contains a control or non-printable character (U+001B); ids are "
                  "printable text without white space"),
    ("", "empty grader name"),
])
def test_a_grader_name_follows_the_rule_of_graders_add(runner, db, tmp_path, grader, problem):
    assert _derive(runner, db, _csv(tmp_path), grader=grader) == f"Error: --grader: {problem}"


@pytest.mark.parametrize(("row", "problem"), [
    ("r1,Q1,D2,99999999999999999999,1,1762041890,0.5",
     'position "99999999999999999999" is beyond the deepest position read (10000)'),
    ("r1,Q1,D2,2,1,1e300,0.5", 'ts "1e300" is outside the years 1 to 9999'),
    ("r1,Q1,D2,2,1,-99999999999,0.5", 'ts "-99999999999" is outside the years 1 to 9999'),
])
def test_numbers_beyond_what_the_models_and_the_window_hold_are_bad_rows(runner, db, tmp_path, row, problem):
    log = _csv(tmp_path, row)
    assert _derive(runner, db, log) == f"Error: {log}:3: {problem} (nothing was stored)"


@pytest.mark.parametrize(("args", "message"), [
    (("--as-of", "nan"), "--as-of: 'nan' is neither ISO 8601 nor epoch seconds"),
    (("--as-of", "inf"), "--as-of: 'inf' is neither ISO 8601 nor epoch seconds"),
    (("--since", "nan"), "--since: 'nan' is neither ISO 8601 nor epoch seconds"),
    (("--until", "inf"), "--until: 'inf' is neither ISO 8601 nor epoch seconds"),
    (("--as-of", "1e300"), "--as-of: '1e300' is outside the years 1 to 9999"),
    (("--since", "-99999999999"), "--since: '-99999999999' is outside the years 1 to 9999"),
    (("--half-life", "9" * 400), f"--half-life: '{'9' * 400}' is not a positive duration such as 14d, 36h or 90m"),
    (("--min-impressions", "99999999999999999999"),
     "--min-impressions must be at most 2147483647 (the stored column's width), got 99999999999999999999"),
])
def test_options_out_of_range_are_one_error_line(runner, db, tmp_path, args, message):
    assert _derive(runner, db, _csv(tmp_path), *args) == f"Error: {message}"


def test_a_log_request_takes_finite_times_only():
    """The engines write these numbers into SQL: a caller of the library gets the same refusal."""
    with pytest.raises(NdcgLabelingError, match=r"^--as-of: nan is outside the years 1 to 9999$"):
        LogRequest(sources=("x.csv",), as_of=float("nan"))
    with pytest.raises(NdcgLabelingError, match=r"^--half-life: inf is not a positive number of seconds$"):
        LogRequest(sources=("x.csv",), half_life_s=float("inf"))


def test_two_documents_at_one_position_name_the_second_row(runner, db, tmp_path):
    log = _csv(tmp_path, "r1,Q1,D1,1,1,1762041890,0.5", "r2,Q1,D1,1,0,1762041890,0.5", "r1,Q1,D2,1,0,1762041890,0.5")
    problem = ("request 'r1' shows two documents at one position ([1, 1]): the DBN needs one document per position "
               "of a served list")
    assert _derive(runner, db, log, model="dbn") == f"Error: {log}:5: {problem}"
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"request_id": ["r1", "r2", "r1"], "query_id": ["Q1"] * 3, "doc_id": ["D1", "D1", "D2"],
                             "position": [1, 1, 1], "clicked": [1, 0, 0], "ts": [1762041890.0] * 3}), path)
    assert _derive(runner, db, str(path), model="dbn") == f"Error: {path}:row 2: {problem}"


def test_a_log_file_given_twice_is_refused_not_counted_twice(runner, db, tmp_path):
    log = _csv(tmp_path, "r1,Q1,D2,2,0,1762041890,0.5")
    again = tmp_path / "link.csv"
    again.symlink_to(log)  # another name of the same file
    twice = "its impressions would count twice"
    assert _derive(runner, db, log, log) == f"Error: {log}: this log file is given twice: {twice}"
    assert _derive(runner, db, log, str(again)) == f"Error: {log}: this log file is given again as {again}: {twice}"
    folder = tmp_path / "logs"
    folder.mkdir()
    part = folder / "a.parquet"
    pq.write_table(pa.table({"request_id": ["r1"], "query_id": ["Q1"], "doc_id": ["D1"], "position": [1],
                             "clicked": [1], "ts": [1762041890.0], "watch_ratio": [0.5]}), part)
    assert _derive(runner, db, str(folder), str(part)) == f"Error: {part}: this log file is given twice: {twice}"


def test_a_csv_header_naming_a_column_twice_is_refused_at_line_1(runner, db, tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("request_id,query_id,doc_id,position,clicked,ts,watch_ratio,clicked\n"
                    "r0,Q1,D1,1,1,1762041890,0.5,0\n", encoding="utf-8")
    assert _derive(runner, db, str(path)) == f"Error: {path}:1: the header names the column 'clicked' twice"


def test_derive_into_a_batch_that_does_not_exist_is_refused(runner, db, tmp_path):
    message = _derive(runner, db, _csv(tmp_path), "--batch", "nosuchbatch")
    assert message.startswith("Error: unknown batch 'nosuchbatch'")


@pytest.mark.parametrize(("value", "shown"), [('{"x": 1}', '{"x":1}'), ("[1, 2]", "[1,2]"), ("1.5", "1.5"),
                                             ("true", "true")])
def test_a_json_object_array_or_fraction_in_an_id_field_is_a_bad_row(runner, db, tmp_path, value, shown):
    path = tmp_path / "log.jsonl"
    good = '{"request_id": "r0", "query_id": "Q1", "doc_id": "D1", "position": 1, "clicked": 1, "ts": 1762041890, ' \
           '"watch_ratio": 0.5}'
    path.write_text(good + "\n" + good.replace('"D1"', value).replace('"r0"', '"r1"') + "\n", encoding="utf-8")
    assert _derive(runner, db, str(path)) == \
        f'Error: {path}:2: doc_id "{shown}" is not text or an integer (nothing was stored)'
