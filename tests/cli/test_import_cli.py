"""Import commands through the CLI, on SQLite and PostgreSQL: good files, idempotent re-import,
bad files (exit 1, one line naming file/line/problem, every table unchanged)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import text

from ndcg_labeling.db import migrate
from tests.conftest import invoke

QUERIES = "query_id,text,query_type\nq1,cheap flights to rome,transactional\nq2,python docs,navigational\n"
DOCUMENTS = "doc_id,title,body,lang\nd1,Flights to Rome,Cheap flights,en\nd2,Python,The docs,en\nd3,Rome,History,it\n"
JUDGMENTS = "query_id,doc_id,grader,grade\nq1,d1,alice,3\nq1,d2,alice,0\nq1,d1,bob,2\nq2,d2,bob,3\n"
RUN_CSV = "query_id,doc_id,rank,score\nq1,d1,1,2.5\nq1,d3,2,1.5\nq2,d2,1,9\n"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def one_line_error(result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def test_status_needs_upgraded_database(runner, empty_db):
    result = invoke(runner, empty_db, "status")
    assert result.exit_code == 1
    expected = "no database at" if empty_db.backend == "sqlite" else "not at head"
    assert expected in result.stderr and "ndcg-labeling db upgrade" in result.stderr


def test_command_before_upgrade_leaves_no_empty_sqlite_file(runner, tmp_path):
    path = tmp_path / "sub" / "fresh.db"
    url = f"sqlite:///{path}"
    for args in (["status"], ["graders", "list"], ["db", "current"], ["db", "downgrade", "base"],
                 ["import", "queries", str(tmp_path / "q.csv")]):
        result = invoke(runner, None, *args, "--db", url)
        assert "Traceback" not in result.output
        assert not path.exists(), args
    assert "base (head" in invoke(runner, None, "db", "current", "--db", url).stdout
    assert invoke(runner, None, "db", "upgrade", "--db", url).exit_code == 0 and path.stat().st_size > 0


def test_db_upgrade_current_downgrade(runner, empty_db):
    assert invoke(runner, empty_db, "db", "upgrade").exit_code == 0
    result = invoke(runner, empty_db, "db", "current")
    assert result.exit_code == 0 and f"{migrate.HEAD_REVISION} (head {migrate.HEAD_REVISION}; at head)" in result.stdout
    assert invoke(runner, empty_db, "db", "downgrade", "0001").exit_code == 0
    assert "not at head" in invoke(runner, empty_db, "db", "current").stdout
    assert invoke(runner, empty_db, "db", "downgrade", "base").exit_code == 0


def test_import_everything_and_status(runner, db, tmp_path):
    assert invoke(runner, db, "import", "queries", str(write(tmp_path, "q.csv", QUERIES))).exit_code == 0
    assert invoke(runner, db, "import", "documents", str(write(tmp_path, "d.csv", DOCUMENTS))).exit_code == 0
    assert invoke(runner, db, "graders", "add", "alice", "bob").exit_code == 0
    result = invoke(runner, db, "import", "judgments", str(write(tmp_path, "j.csv", JUDGMENTS)), "--scale", "0-3")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"judgments from {tmp_path / 'j.csv'}: 4 new, 0 unchanged"
    result = invoke(runner, db, "import", "run", str(write(tmp_path, "r.csv", RUN_CSV)), "--system", "bm25")
    assert result.exit_code == 0
    status = invoke(runner, db, "status", "--format", "json")
    assert json.loads(status.stdout) == {"queries": 2, "documents": 3, "graders": 2, "systems": 1, "rankings": 3,
                                         "judgments": 4, "consensus": 0}
    with db.engine.connect() as conn:
        meta = conn.execute(text("SELECT meta FROM documents WHERE external_id = 'd3'")).scalar_one()
        qtype = conn.execute(text("SELECT query_type FROM queries WHERE external_id = 'q2'")).scalar_one()
    assert (json.loads(meta) if isinstance(meta, str) else meta) == {"lang": "it"}
    assert qtype == "navigational"


def test_reimport_adds_nothing(runner, db, tmp_path):
    invoke(runner, db, "graders", "add", "alice", "bob")
    path = write(tmp_path, "j.csv", JUDGMENTS)
    first = invoke(runner, db, "import", "judgments", str(path), "--scale", "0-3")
    assert "2 queries created without text" in first.stdout
    again = invoke(runner, db, "import", "judgments", str(path), "--scale", "0-3")
    assert again.exit_code == 0
    assert again.stdout.strip() == f"judgments from {path}: 0 new, 4 unchanged"
    run = write(tmp_path, "r.csv", RUN_CSV)
    invoke(runner, db, "import", "run", str(run), "--system", "bm25")
    assert "0 new, 3 unchanged" in invoke(runner, db, "import", "run", str(run), "--system", "bm25").stdout
    q = write(tmp_path, "q.csv", QUERIES)
    # the judgments created q1, q2 without text; the queries file fills them in
    assert "0 new, 0 unchanged, 2 updated" in invoke(runner, db, "import", "queries", str(q)).stdout
    assert "0 new, 2 unchanged" in invoke(runner, db, "import", "queries", str(q)).stdout
    assert db.counts()["judgments"] == 4 and db.counts()["ranking_entries"] == 3


def test_changed_grade_needs_replace(runner, db, tmp_path):
    invoke(runner, db, "graders", "add", "alice", "bob")
    invoke(runner, db, "import", "judgments", str(write(tmp_path, "j.csv", JUDGMENTS)), "--scale", "0-3")
    changed = write(tmp_path, "j2.csv", "query_id,doc_id,grader,grade\nq1,d1,alice,1\n")
    before = db.counts()
    line = one_line_error(invoke(runner, db, "import", "judgments", str(changed), "--scale", "0-3"))
    assert line == (f"Error: {changed}:2: grader 'alice' already graded ('q1', 'd1') as 3 on 0-3, not 1; "
                    "use --replace to overwrite")
    assert db.counts() == before
    result = invoke(runner, db, "import", "judgments", str(changed), "--scale", "0-3", "--replace")
    assert result.exit_code == 0 and "1 updated" in result.stdout
    with db.engine.connect() as conn:
        grades = conn.execute(text("SELECT grade FROM judgments j JOIN graders g ON g.id = j.grader_id "
                                   "JOIN queries q ON q.id = j.query_id JOIN documents d ON d.id = j.document_id "
                                   "WHERE g.name = 'alice' AND q.external_id = 'q1' AND d.external_id = 'd1'")).scalars().all()
    assert grades == [1]


def test_trec_run_order_is_trec_eval_order(runner, db, tmp_path):
    # rank column ignored; score descending; ties by document id descending
    run = write(tmp_path, "run.txt", "q1 Q0 dA 1 1.0 x\nq1 Q0 dB 2 3.0 x\nq1 Q0 dC 3 1.0 x\nq1 Q0 dD 4 2.0 x\n")
    assert invoke(runner, db, "import", "run", str(run), "--system", "s").exit_code == 0
    with db.engine.connect() as conn:
        order = conn.execute(text("SELECT d.external_id FROM ranking_entries r JOIN documents d ON d.id = r.document_id "
                                  "ORDER BY r.rank")).scalars().all()
    assert order == ["dB", "dD", "dC", "dA"]


def test_trec_qrels_with_grader(runner, db, tmp_path):
    invoke(runner, db, "graders", "add", "nist")
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 1\n")
    result = invoke(runner, db, "import", "judgments", str(qrels), "--format", "trec-qrels", "--grader", "nist",
                    "--scale", "0-3")
    assert result.exit_code == 0, result.output
    assert db.counts()["judgments"] == 3


def test_jsonl_tsv_parquet_import_like_csv(runner, db, tmp_path):
    invoke(runner, db, "graders", "add", "alice", "bob")
    frame = pd.read_csv(write(tmp_path, "j.csv", JUDGMENTS), dtype=str)
    frame.to_json(tmp_path / "j.jsonl", orient="records", lines=True)
    frame.to_csv(tmp_path / "j.tsv", sep="\t", index=False)
    frame.assign(grade=frame["grade"].astype(int)).to_parquet(tmp_path / "j.parquet")
    assert "4 new" in invoke(runner, db, "import", "judgments", str(tmp_path / "j.jsonl"), "--scale", "0-3").stdout
    for name in ("j.tsv", "j.parquet", "j.csv"):
        result = invoke(runner, db, "import", "judgments", str(tmp_path / name), "--scale", "0-3")
        assert result.exit_code == 0 and "0 new, 4 unchanged" in result.stdout, (name, result.output)



def test_every_importer_knows_the_same_extensions(runner, db, tmp_path):
    # One rule (io.tables.detect_format): a run named .tab or .ndjson is TSV or JSON lines, never TREC.
    frame = pd.read_csv(write(tmp_path, "r.csv", RUN_CSV), dtype=str)
    frame.to_csv(tmp_path / "r.tab", sep="\t", index=False)
    frame.to_json(tmp_path / "r.ndjson", orient="records", lines=True)
    assert "3 new" in invoke(runner, db, "import", "run", str(tmp_path / "r.tab"), "--system", "bm25").stdout
    result = invoke(runner, db, "import", "run", str(tmp_path / "r.ndjson"), "--system", "bm25")
    assert result.exit_code == 0 and "0 new, 3 unchanged" in result.stdout, result.output

LONG_ID = "x" * 10_000

# (name, command args builder, file name, content, expected message after "Error: <path>")
BAD_CASES = [
    ("missing-column", ["import", "queries"], "q.csv", "query_id,text\nq1,hello\n",
     ":1: missing column(s) query_type: expected query_id,text,query_type, found query_id,text"),
    ("misspelt-column", ["import", "judgments", "--scale", "0-3"], "j.csv", "query_id,doc_id,grader,grad\nq1,d1,alice,1\n",
     ":1: missing column(s) grade: expected query_id,doc_id,grader,grade,[batch], found query_id,doc_id,grader,grad"),
    ("wrong-delimiter", ["import", "queries"], "q.csv", "query_id;text;query_type\nq1;hello;nav\n",
     ":1: missing column(s) query_id, text, query_type: expected query_id,text,query_type, found query_id;text;query_type "
     "(is the delimiter right?)"),
    ("empty-file", ["import", "queries"], "q.csv", "", ": the file is empty"),
    ("header-only", ["import", "queries"], "q.csv", "query_id,text,query_type\n", ": the file has a header but no rows"),
    ("not-utf8", ["import", "queries"], "q.csv", b"query_id,text,query_type\nq1,caf\xe9,nav\n", ":2: not UTF-8 text (byte 0xe9)"),
    ("empty-id", ["import", "queries"], "q.csv", "query_id,text,query_type\nq1,a,nav\n,b,nav\n", ":3: empty query_id"),
    ("duplicate-query", ["import", "queries"], "q.csv", "query_id,text,query_type\nq1,a,nav\nq1,b,nav\n",
     ":3: duplicate query_id (query_id='q1'), first seen at line 2"),
    ("long-id", ["import", "queries"], "q.csv", f"query_id,text,query_type\n{LONG_ID},a,nav\n",
     ":2: query_id is 10000 characters long; the limit is 512"),
    ("grade-fraction", ["import", "judgments", "--scale", "0-3"], "j.csv", "query_id,doc_id,grader,grade\nq1,d1,alice,3.5\n",
     ":2: grade '3.5' is not an integer"),
    ("grade-negative", ["import", "judgments", "--scale", "0-3"], "j.csv", "query_id,doc_id,grader,grade\nq1,d1,alice,-1\n",
     ":2: grade -1 is outside the scale 0-3 (0..3)"),
    ("grade-above-scale", ["import", "judgments", "--scale", "0-4"], "j.csv", "query_id,doc_id,grader,grade\nq1,d1,alice,5\n",
     ":2: grade 5 is outside the scale 0-4 (0..4)"),
    ("grade-word", ["import", "judgments", "--scale", "0-3"], "j.csv", "query_id,doc_id,grader,grade\nq1,d1,alice,1\nq1,d2,alice,three\n",
     ":3: grade 'three' is not an integer"),
    ("grade-empty", ["import", "judgments", "--scale", "0-3"], "j.csv", "query_id,doc_id,grader,grade\nq1,d1,alice,\n",
     ":2: empty grade"),
    ("unknown-grader", ["import", "judgments", "--scale", "0-3"], "j.csv", "query_id,doc_id,grader,grade\nq1,d1,carol,1\n",
     ":2: unknown grader 'carol' (1 unknown); add it with `ndcg-labeling graders add carol` or pass --create-graders"),
    ("duplicate-judgment", ["import", "judgments", "--scale", "0-3"], "j.csv",
     "query_id,doc_id,grader,grade\nq1,d1,alice,1\nq1,d2,alice,1\nq1,d1,alice,2\n",
     ":4: duplicate judgment (query_id='q1', doc_id='d1', grader='alice', batch=''), first seen at line 2"),
    ("duplicate-rank", ["import", "run", "--system", "s"], "r.csv", "query_id,doc_id,rank\nq1,d1,1\nq1,d2,1\n",
     ":3: duplicate rank 1 for query 'q1'"),
    ("duplicate-doc-in-run", ["import", "run", "--system", "s"], "r.csv", "query_id,doc_id,rank\nq1,d1,1\nq1,d1,2\n",
     ":3: document 'd1' appears twice for query 'q1'"),
    ("nan-score", ["import", "run", "--system", "s"], "r.csv", "query_id,doc_id,rank,score\nq1,d1,1,1.0\nq1,d2,2,nan\n",
     ":3: score 'nan' is not a finite number"),
    ("inf-score", ["import", "run", "--system", "s"], "r.csv", "query_id,doc_id,rank,score\nq1,d1,1,inf\n",
     ":2: score 'inf' is not a finite number"),
    ("bad-rank", ["import", "run", "--system", "s"], "r.csv", "query_id,doc_id,rank\nq1,d1,0\n",
     ":2: rank '0' is not a whole number from 1 to 2147483647"),
    ("no-body-or-url", ["import", "documents"], "d.csv", "doc_id,title\nd1,Hello\n",
     ":1: missing column body or url: expected doc_id,title,body or doc_id,title,url"),
    ("bad-jsonl", ["import", "queries"], "q.jsonl", '{"query_id": "q1", "text": "a", "query_type": "nav"}\n{"query_id": \n',
     ":2: not a JSON object: Expecting value"),
    ("corrupt-parquet", ["import", "judgments", "--scale", "0-3"], "j.parquet", b"PAR1 this is not parquet",
     ": not a readable Parquet file:"),
    ("unknown-extension", ["import", "queries"], "q.xlsx", "whatever",
     ": cannot tell the format from the extension '.xlsx'; use one of .csv, .jsonl, .ndjson, .parquet, .tab, .tsv or pass --format"),
]


@pytest.mark.parametrize("case", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_is_one_line_and_changes_nothing(runner, db, tmp_path, case):
    _name, command, filename, content, expected = case
    invoke(runner, db, "graders", "add", "alice", "bob")
    invoke(runner, db, "import", "queries", str(write(tmp_path, "seed.csv", QUERIES)))
    before = db.counts()
    path = write(tmp_path, filename, content)
    args = command[:2] + [str(path)] + command[2:]
    line = one_line_error(invoke(runner, db, *args))
    assert line.startswith(f"Error: {path}{expected}"), line
    assert db.counts() == before


def test_missing_file_is_an_error(runner, db, tmp_path):
    missing = tmp_path / "nope.csv"
    line = one_line_error(invoke(runner, db, "import", "queries", str(missing)))
    assert line == f"Error: {missing}: no such file"


def test_run_conflict_needs_replace(runner, db, tmp_path):
    first = write(tmp_path, "r1.csv", RUN_CSV)
    invoke(runner, db, "import", "run", str(first), "--system", "bm25")
    second = write(tmp_path, "r2.csv", "query_id,doc_id,rank,score\nq1,d3,1,2.5\nq1,d1,2,1.5\n")
    before = db.counts()
    line = one_line_error(invoke(runner, db, "import", "run", str(second), "--system", "bm25"))
    assert line == (f"Error: {second}: system 'bm25' already has a different ranking for query 'q1' "
                    "(1 queries differ); use --replace to replace them")
    assert db.counts() == before
    result = invoke(runner, db, "import", "run", str(second), "--system", "bm25", "--replace")
    assert result.exit_code == 0 and "2 updated" in result.stdout
    assert db.counts()["ranking_entries"] == 3


# --- issue 11: inputs that are not regular files, --out, URLs, migrations, help, limits ---------------


def test_fifo_device_and_folder_are_refused_at_once(runner, sqlite_db, tmp_path):
    import os

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    cases = [(["import", "queries", str(fifo)], f"Error: {fifo}: is a named pipe (FIFO); give a regular file"),
             (["import", "queries", "/dev/zero", "--format", "csv"], "Error: /dev/zero: is a device; give a regular file"),
             (["import", "run", "/dev/zero", "--system", "s"], "Error: /dev/zero: is a device; give a regular file"),
             (["import", "judgments", str(fifo), "--scale", "0-3", "--format", "trec-qrels", "--grader", "a"],
              f"Error: {fifo}: is a named pipe (FIFO); give a regular file"),
             (["import", "queries", str(folder)], f"Error: {folder}: is a folder, not a file"),
             (["import", "queries", str(tmp_path / "missing.csv")], f"Error: {tmp_path / 'missing.csv'}: no such file")]
    for args, expected in cases:
        assert one_line_error(invoke(runner, sqlite_db, *args)) == expected


def test_out_never_overwrites_without_force_nor_follows_a_symlink(runner, sqlite_db, tmp_path):
    out = tmp_path / "graders.csv"
    assert invoke(runner, sqlite_db, "graders", "add", "alice").exit_code == 0
    args = ["graders", "list", "--format", "csv", "--out", str(out)]
    assert invoke(runner, sqlite_db, *args).exit_code == 0
    out.write_text("a grader's filled-in work\n")
    assert one_line_error(invoke(runner, sqlite_db, *args)) == f"Error: {out}: already exists; pass --force to overwrite it"
    assert out.read_text() == "a grader's filled-in work\n"
    assert invoke(runner, sqlite_db, *args, "--force").exit_code == 0
    assert out.read_text().startswith("grader,display_name")
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    for extra in ([], ["--force"]):
        line = one_line_error(invoke(runner, sqlite_db, "graders", "list", "--out", str(link), *extra))
        assert line.startswith(f"Error: {link}: is a symbolic link"), line
    assert target.read_text() == "keep me\n"
    missing = tmp_path / "no" / "such" / "x.csv"
    assert one_line_error(invoke(runner, sqlite_db, "graders", "list", "--out", str(missing))) == (
        f"Error: {missing}: the folder {str(missing.parent)!r} does not exist")
    assert one_line_error(invoke(runner, sqlite_db, "graders", "list", "--out", str(tmp_path))) == (
        f"Error: {tmp_path}: is a folder; give a file name")


def test_tasks_export_twice_keeps_the_first_file(runner, sqlite_db, tmp_path):
    """Re-running `tasks export` must not wipe a grader's filled-in file (io.tasks_files.write_tasks)."""
    run = write(tmp_path, "run.txt", "q1 Q0 d1 1 3 s\nq1 Q0 d2 2 2 s\n")
    assert invoke(runner, sqlite_db, "import", "run", str(run), "--system", "s").exit_code == 0
    assert invoke(runner, sqlite_db, "graders", "add", "ann").exit_code == 0
    assert invoke(runner, sqlite_db, "tasks", "create", "b1", "--scale", "0-3", "--depth", "2", "--overlap", "1",
                  "--graders", "ann").exit_code == 0
    out = tmp_path / "ann.csv"
    export = ["tasks", "export", "b1", "--grader", "ann", "--out", str(out)]
    assert invoke(runner, sqlite_db, *export).exit_code == 0
    filled = out.read_text().replace(",\n", ",2\n")
    out.write_text(filled)
    assert one_line_error(invoke(runner, sqlite_db, *export)) == f"Error: {out}: already exists; pass --force to overwrite it"
    assert out.read_text() == filled
    assert invoke(runner, sqlite_db, *export, "--force").exit_code == 0  # the lead means it: a fresh export
    assert out.read_text() != filled and out.read_text().count(",\n") == 2


@pytest.mark.parametrize(("url", "expected"), [
    ("relevance.db", "Error: --db 'relevance.db' is not a database URL; for a SQLite file write sqlite:///relevance.db"),
    ("postgres://u:secret@localhost/db", "Error: --db: the scheme postgres:// is not known; write "
                                         "postgresql+psycopg://u:***@localhost/db"),
    ("mysql://u@h/db", "Error: --db: the database 'mysql' is not supported"),
])
def test_database_url_mistakes_say_what_to_write(runner, url, expected):
    line = one_line_error(invoke(runner, None, "status", "--db", url))
    assert line.startswith(expected), line
    assert "secret" not in line


def test_postgresql_url_without_the_driver_names_the_extra(runner, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a))
    line = one_line_error(invoke(runner, None, "status", "--db", "postgresql://u@localhost/db"))
    assert line == ("Error: --db: PostgreSQL needs the driver psycopg, which is not installed; install it with: "
                    "pip install 'ndcg-labeling[postgres]'")


def test_db_upgrade_to_an_unknown_revision_is_one_line(runner, empty_db):
    line = one_line_error(invoke(runner, empty_db, "db", "upgrade", "9999"))
    assert line.startswith("Error: cannot upgrade to '9999': "), line


def test_db_downgrade_dropping_data_needs_yes(runner, db, tmp_path):
    assert invoke(runner, db, "db", "downgrade", "base").exit_code == 0  # only the seeded scales: no question
    assert invoke(runner, db, "db", "upgrade").exit_code == 0
    assert invoke(runner, db, "import", "queries", str(write(tmp_path, "q.csv", QUERIES))).exit_code == 0
    before = db.counts()
    line = one_line_error(invoke(runner, db, "db", "downgrade", "base"))
    assert line.startswith("Error: downgrading to 'base' would drop tables holding data: ") and "queries (2 rows)" in line
    assert line.endswith("pass --yes to drop them")
    assert db.counts() == before
    assert invoke(runner, db, "db", "downgrade", "base", "--yes").exit_code == 0
    assert invoke(runner, db, "db", "current").stdout.startswith("base")


def test_help_shows_flags_as_flags_and_version(runner):
    from ndcg_labeling import __version__

    result = invoke(runner, None, "import", "judgments", "--help")
    assert result.exit_code == 0
    assert "--json " in result.stdout and "<bool>" not in result.stdout
    result = invoke(runner, None, "--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"ndcg-labeling {__version__}"


def test_error_from_a_million_column_header_is_capped(runner, sqlite_db, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(1_000_000)) + "\n" + ",".join("x" * 1_000_000) + "\n")
    line = one_line_error(invoke(runner, sqlite_db, "import", "queries", str(path)))
    assert line.startswith(f"Error: {path}:1: missing column(s) query_id, text, query_type") and len(line) < 1_200
    assert "(1000000 columns)" in line


def test_a_driver_error_is_one_line_naming_the_file(runner, sqlite_db, tmp_path, monkeypatch):
    """Whatever the importer cannot check beforehand reaches the user as one line naming the file."""
    from sqlalchemy.exc import IntegrityError

    from ndcg_labeling.db import repository

    def refuse(*_a, **_k):
        raise IntegrityError("INSERT ...", {}, Exception("value too long for type character varying(64)\nDETAIL"))

    monkeypatch.setattr(repository, "bulk_insert", refuse)
    path = write(tmp_path, "q.csv", QUERIES)
    assert one_line_error(invoke(runner, sqlite_db, "import", "queries", str(path))) == (
        f"Error: {path}: database error: value too long for type character varying(64)")


@pytest.mark.parametrize("raw", ["\u0662", "\uff12", "1_0", "2.5", "inf", "nan", "", "two", True, "1e400"])
def test_the_one_grade_parser_refuses_other_digits_and_non_integers(raw):
    from ndcg_labeling.scales import SCALES, parse_grade

    with pytest.raises(ValueError):
        parse_grade(raw, SCALES["0-3"])


@pytest.mark.parametrize(("raw", "grade"), [("2", 2), (" 3 ", 3), ("2.0", 2), (1, 1), (0.0, 0), ("+1", 1), ("2e0", 2)])
def test_the_one_grade_parser_reads_what_spreadsheets_write(raw, grade):
    from ndcg_labeling.scales import SCALES, parse_grade

    assert parse_grade(raw, SCALES["0-3"]) == grade


def test_ctrl_c_while_loading_prints_interrupted_not_a_traceback(tmp_path):
    """SIGINT in the first fraction of a second (while typer, rich, sqlalchemy... load and typer builds
    the commands). The clock starts once the interpreter is up: a signal during Python's own start-up
    (site-packages) is Python's to report."""
    import subprocess
    import sys

    script = ("import os, signal, sys, threading\n"
              "from ndcg_labeling.__main__ import main\n"
              f"sys.argv = ['ndcg-labeling', 'status', '--db', {'sqlite:///' + str(tmp_path / 'x.db')!r}]\n"
              # daemon: the exiting interpreter must not wait for this test's own timer (a SIGINT
              # landing in that wait is the harness's traceback, not the command's)
              "t = threading.Timer(float(sys.argv_delay), lambda: os.kill(os.getpid(), signal.SIGINT))\n"
              "t.daemon = True\n"
              "t.start()\n"
              "main()\n")
    for delay in (0.03, 0.06, 0.1, 0.2, 0.3, 0.5, 0.8):
        code = script.replace("sys.argv_delay", repr(delay))
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
        err = proc.stderr
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (delay, err)
        # 1: it had finished (no database); -2: the signal came while the interpreter was exiting
        assert proc.returncode in (1, 130, -2), (delay, proc.returncode, err)
        if proc.returncode == 130:
            assert err.strip().startswith("Interrupted"), (delay, err)


def test_documents_fill_and_update_placeholders_with_every_value_kept(runner, db, tmp_path):
    """A run creates documents with an id only; the documents file fills them (title, body, url and the
    free columns as metadata), and a second file changes some. What the database holds afterwards,
    read back through the ORM, must be what pandas reads from the last file."""
    from sqlalchemy import select

    from ndcg_labeling.db import models as m

    run = write(tmp_path, "r.csv", RUN_CSV)
    assert invoke(runner, db, "import", "run", str(run), "--system", "bm25").exit_code == 0
    first = write(tmp_path, "d1.csv", "doc_id,title,body,lang,note\nd1,Flights,Cheap,en,ß ü 東京\n"
                                      "d2,Python,The docs,en,\nd3,Rome,History,it,\"quote \"\" and , comma\"\n")
    out = invoke(runner, db, "import", "documents", str(first))
    assert out.exit_code == 0 and "0 new, 0 unchanged, 3 updated" in out.stdout, out.output
    second = write(tmp_path, "d2.csv", "doc_id,title,body,lang,note\nd1,Flights,Cheap,en,ß ü 東京\n"
                                       "d2,Python 3,The new docs,de,x\nd3,Rome,History,it,\"quote \"\" and , comma\"\n"
                                       "d4,New,Body,fr,\n")
    out = invoke(runner, db, "import", "documents", str(second))
    assert out.exit_code == 0 and "1 new, 2 unchanged, 1 updated" in out.stdout, out.output
    want = pd.read_csv(second, dtype=str, keep_default_na=False)
    with db.engine.connect() as conn:
        got = {r.external_id: r for r in conn.execute(select(m.Document.__table__))}
    assert sorted(got) == ["d1", "d2", "d3", "d4"]
    for row in want.itertuples():
        stored = got[row.doc_id]
        assert (stored.title, stored.body) == (row.title, row.body)
        meta = stored.meta if isinstance(stored.meta, dict) else json.loads(stored.meta)
        assert meta["lang"] == row.lang
        assert (meta["note"] or "") == row.note
