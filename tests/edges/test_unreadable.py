"""Issue 34 item 2: a file that exists but cannot be read is one line ``Error: FILE: cannot read it
(permission denied)`` and exit 1, from every command that reads a file (not Click's usage text, exit 2).

The tests run as root, who may read any file, so the permission is taken away where every reader and
Click ask for it: ``os.access`` answers "no" for that one path (and ``open`` of it raises EACCES)."""

from __future__ import annotations

import builtins
import errno
import os

import pytest

from tests.conftest import invoke

COMMANDS = [
    ["import", "queries", "{f}"],
    ["import", "documents", "{f}"],
    ["import", "graders", "{f}"],
    ["import", "run", "{f}", "--system", "bm25"],
    ["import", "judgments", "{f}", "--scale", "0-3"],
    ["tasks", "import", "{f}", "--grader", "alice"],
    ["gold", "import", "{f}", "--scale", "0-3"],
]


@pytest.fixture
def locked(tmp_path, monkeypatch):
    path = tmp_path / "locked.csv"
    path.write_text("query_id,text\nq1,hello\n")
    real_access, real_open = os.access, builtins.open

    def access(p, mode, *a, **k):
        return False if str(p) == str(path) else real_access(p, mode, *a, **k)

    def fake_open(p, *a, **k):
        if str(p) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(p))
        return real_open(p, *a, **k)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(builtins, "open", fake_open)
    return path


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:2]) for c in COMMANDS])
def test_unreadable_file_is_one_line(runner, sqlite_db, locked, argv):
    assert invoke(runner, sqlite_db, "graders", "add", "alice").exit_code == 0
    result = invoke(runner, sqlite_db, *[a.format(f=locked) for a in argv])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"Error: {locked}: cannot read it (permission denied)"


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_unreadable_file_eval(runner, locked, tmp_path, which):
    other = tmp_path / "other.txt"
    other.write_text("q1 0 d1 1\n" if which == "run" else "q1 Q0 d1 1 1.0 t\n")
    args = ["eval", str(locked), str(other)] if which == "qrels" else ["eval", str(other), str(locked)]
    result = invoke(runner, None, *args)
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"Error: {locked}: cannot read it (permission denied)"
