"""The bad-input corpus (tests/data/bad/): every broken file is refused through the CLI with exit 1,
one line naming the file and (where there is one) the line, no traceback, and every table unchanged.
Runs on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import invoke

BAD = Path(__file__).resolve().parents[1] / "data" / "bad"

JUDG = ["import", "judgments", "--scale", "0-3"]
QRELS = ["import", "judgments", "--scale", "0-3", "--format", "trec-qrels", "--grader", "alice"]
RUN = ["import", "run", "--system", "bm25"]

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
}


def test_corpus_is_complete():
    files = {p.name for p in BAD.iterdir() if p.is_file() and p.suffix != ".py"}
    listed = set(CORPUS) | set(TASK_CORPUS)
    assert files == listed, f"unlisted: {files - listed}; missing: {listed - files}"
    assert len(files) >= 30
    formats = {p.split(".", 1)[1] for p in files}
    assert {"csv", "tsv", "jsonl", "parquet", "txt", "json"} <= formats


def _seed(runner, db):
    assert invoke(runner, db, "graders", "add", "alice", "bob").exit_code == 0


def _check_refused(result, path: Path, expected: str, before: dict, db) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"Error: {path}{expected}"]
    assert db.counts() == before


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_bad_file_is_refused(runner, db, name):
    _seed(runner, db)
    before = db.counts()
    command, expected = CORPUS[name]
    path = BAD / name
    result = invoke(runner, db, *command[:2], str(path), *command[2:])
    _check_refused(result, path, expected, before, db)


# --- tasks import: files whose item ids are filled in at test time ---------------------------------

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
}


def _item_of(runner, db, tmp_path: Path, batch: str, grader: str) -> str:
    out = tmp_path / f"{batch}-{grader}.csv"
    assert invoke(runner, db, "tasks", "export", batch, "--grader", grader, "--out", str(out)).exit_code == 0
    return out.read_text().splitlines()[1].split(",")[0]


@pytest.mark.parametrize("name", sorted(TASK_CORPUS))
def test_bad_graded_file_is_refused(runner, db, tmp_path, name):
    _seed(runner, db)
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 3 s\nq1 Q0 d2 2 2 s\nq2 Q0 d3 1 3 s\nq2 Q0 d4 2 2 s\n")
    assert invoke(runner, db, "import", "run", str(run), "--system", "s").exit_code == 0
    for batch, query, seed in (("b1", "q1", "1"), ("b2", "q2", "2")):
        result = invoke(runner, db, "tasks", "create", batch, "--scale", "0-3", "--depth", "2", "--overlap", "1",
                        "--graders", "alice,bob", "--query-id", query, "--seed", seed)
        assert result.exit_code == 0, result.output
    ids = {"alice_b1": _item_of(runner, db, tmp_path, "b1", "alice"), "bob_b1": _item_of(runner, db, tmp_path, "b1", "bob"),
           "alice_b2": _item_of(runner, db, tmp_path, "b2", "alice")}
    content = (BAD / name).read_text(encoding="utf-8")
    options, expected = TASK_CORPUS[name]
    for key, value in ids.items():
        content = content.replace("{" + key + "}", value)
        expected = expected.replace("{" + key + "}", value)
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    before = db.counts()
    result = invoke(runner, db, "tasks", "import", str(path), "--grader", "alice", *options)
    _check_refused(result, path, expected, before, db)
