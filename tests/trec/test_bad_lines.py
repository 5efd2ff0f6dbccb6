"""Malformed TREC runs and qrels: one ``Error: FILE:LINE: problem`` line and exit 1, never a
traceback, in ``eval`` (as qrels and as run) and in ``import run`` / ``import judgments --format
trec-qrels`` (which also leave the database unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ndcg_labeling.cli import app
from tests.conftest import invoke

runner = CliRunner()
QRELS_4 = "expected 4 whitespace-separated fields (query_id iteration doc_id relevance), got {n}"
RUN_6 = "expected 6 whitespace-separated fields (query_id Q0 doc_id rank score tag), got {n}"

BAD_QRELS = [
    ("five_fields", "1 0 a 1\n1 0 b 1 extra\n", 2, QRELS_4.format(n=5)),
    ("semicolons", "1;0;a;1\n", 1, QRELS_4.format(n=1)),
    ("commas", "# header comment\n1,0,a,1\n", 2, QRELS_4.format(n=1)),
    ("three_fields", "1 0 a 1\n\n1 0 b\n", 3, QRELS_4.format(n=3)),
    ("fraction", "1 0 a 1\n1 0 b 1.5\n", 2, "relevance must be an integer, got '1.5'"),
    ("word", "1 0 a yes\n", 1, "relevance must be an integer, got 'yes'"),
    ("infinite", "1 0 a 1e400\n", 1, "relevance must be an integer, got '1e400'"),
    ("latin1", b"1 0 a 1\n1 0 \xe9 1\n", 2, "the file is not UTF-8 text"),
    ("duplicate", "1 0 a 1\n1 0 a 2\n", 2, "document a appears twice for query 1 in the qrels"),
]
BAD_RUNS = [
    ("five_fields", "1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0\n", 2, RUN_6.format(n=5)),
    ("semicolons", "1;Q0;a;1;2.0;t\n", 1, RUN_6.format(n=1)),
    ("score_word", "1 Q0 a 1 high t\n", 1, "score must be a number, got 'high'"),
    ("score_nan", "1 Q0 a 1 nan t\n", 1, "score must be a finite number, got 'nan'"),
    ("score_inf", "1 Q0 a 1 2 t\n1 Q0 b 2 -inf t\n", 2, "score must be a finite number, got '-inf'"),
    ("latin1", b"1 Q0 a 1 2.0 t\n1 Q0 \xe9 2 1.0 t\n", 2, "the file is not UTF-8 text"),
]
GOOD_QRELS = "1 0 a 1\n1 0 b 0\n"
GOOD_RUN = "1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n"


def _write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


def _one_line(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(("name", "content", "line", "problem"), BAD_QRELS, ids=[b[0] for b in BAD_QRELS])
def test_eval_bad_qrels(tmp_path, name, content, line, problem):
    qrels, run = _write(tmp_path, f"{name}.qrels", content), _write(tmp_path, "run", GOOD_RUN)
    assert _one_line(runner.invoke(app, ["eval", qrels, run])) == f"Error: {qrels}:{line}: {problem}"


@pytest.mark.parametrize(("name", "content", "line", "problem"), BAD_RUNS, ids=[b[0] for b in BAD_RUNS])
def test_eval_bad_runs(tmp_path, name, content, line, problem):
    qrels, run = _write(tmp_path, "qrels", GOOD_QRELS), _write(tmp_path, f"{name}.run", content)
    assert _one_line(runner.invoke(app, ["eval", qrels, run])) == f"Error: {run}:{line}: {problem}"


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_eval_unreadable_inputs(tmp_path, which):
    good = {"qrels": _write(tmp_path, "qrels", GOOD_QRELS), "run": _write(tmp_path, "run", GOOD_RUN)}
    for bad, problem in [(str(tmp_path / "missing"), "no such file"),
                         (str(tmp_path), "is a folder, not a file"),
                         (_write(tmp_path, "empty", "\n# only a comment\n"), "the file is empty")]:
        args = {**good, which: bad}
        assert _one_line(runner.invoke(app, ["eval", args["qrels"], args["run"]])) == f"Error: {bad}: {problem}"


@pytest.mark.parametrize(("name", "content", "line", "problem"), BAD_RUNS, ids=[b[0] for b in BAD_RUNS])
def test_import_run_bad_trec_lines(sqlite_db, tmp_path, name, content, line, problem):
    run = _write(tmp_path, f"{name}.run", content)
    before = sqlite_db.counts()
    result = invoke(CliRunner(), sqlite_db, "import", "run", run, "--system", "s", "--format", "trec")
    assert _one_line(result) == f"Error: {run}:{line}: {problem}"
    assert sqlite_db.counts() == before


@pytest.mark.parametrize(("name", "content", "line", "problem"), BAD_QRELS[:-1], ids=[b[0] for b in BAD_QRELS[:-1]])
def test_import_judgments_bad_qrels_lines(sqlite_db, tmp_path, name, content, line, problem):
    qrels = _write(tmp_path, f"{name}.qrels", content)
    before = sqlite_db.counts()
    result = invoke(CliRunner(), sqlite_db, "import", "judgments", qrels, "--format", "trec-qrels", "--grader", "nist",
                    "--scale", "0-3", "--create-graders")
    if name == "infinite":  # read exactly, 1e400 is the integer 10**400: outside the scale (issue 34 item 1)
        problem = "grade 1e400 is outside the scale 0-3 (0..3)"
    assert _one_line(result) == f"Error: {qrels}:{line}: {problem}"
    assert sqlite_db.counts() == before


def test_import_reads_comment_lines_like_eval(sqlite_db, tmp_path):
    run = _write(tmp_path, "run", "# a comment\n" + GOOD_RUN)
    result = invoke(CliRunner(), sqlite_db, "import", "run", run, "--system", "s", "--format", "trec")
    assert result.exit_code == 0, result.output


def test_a_nul_byte_is_refused(tmp_path):
    qrels, run = _write(tmp_path, "qrels", GOOD_QRELS), _write(tmp_path, "run", b"1 Q0 a 1 2 t\n1 Q0 b\x00 2 1 t\n")
    assert _one_line(runner.invoke(app, ["eval", qrels, run])) == f"Error: {run}:2: the file has a NUL byte"
