"""Issue 30's small CLI items: ``--db`` before the command, and ``graders list`` shows each role."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys

from ndcg_labeling.cli import COMMAND_MODULES, modules_for
from tests.conftest import invoke


def test_db_before_the_command_is_accepted(sqlite_db):
    """The console script, in a fresh process (its lazy registration reads the command line)."""
    env = {k: v for k, v in os.environ.items() if k != "NDCG_LABELING_DB"}
    done = subprocess.run([sys.executable, "-m", "ndcg_labeling", "--db", sqlite_db.url, "status", "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(("{", "["))


def test_the_commands_own_db_wins(runner, sqlite_db, tmp_path, monkeypatch):
    # the root's --db fills $NDCG_LABELING_DB for the process: restored after the test
    monkeypatch.setenv("NDCG_LABELING_DB", "sqlite:///unused-by-this-test.db")
    from ndcg_labeling.cli import app

    missing = f"sqlite:///{tmp_path / 'nowhere.db'}"
    result = runner.invoke(app, ["--db", missing, "graders", "list", "--db", sqlite_db.url, "--format", "json"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["--db", sqlite_db.url, "graders", "list", "--db", missing])
    assert result.exit_code == 1 and "no database at" in result.output


def test_modules_for_skips_the_roots_db_value():
    assert modules_for(["--db", "sqlite:///x.db", "status"]) == COMMAND_MODULES["status"]
    assert modules_for(["--db=sqlite:///x.db", "graders", "list"]) == COMMAND_MODULES["graders"]


def test_graders_list_shows_role_and_kind(runner, sqlite_db):
    assert invoke(runner, sqlite_db, "graders", "add", "ann").exit_code == 0
    assert invoke(runner, sqlite_db, "graders", "add", "lee", "--role", "lead").exit_code == 0
    assert invoke(runner, sqlite_db, "graders", "add", "gpt", "--kind", "model").exit_code == 0
    result = invoke(runner, sqlite_db, "graders", "list", "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = {r["grader"]: (r["role"], r["kind"]) for r in csv.DictReader(io.StringIO(result.stdout))}
    assert rows == {"ann": ("grader", "human"), "lee": ("lead", "human"), "gpt": ("grader", "model")}
    table = invoke(runner, sqlite_db, "graders", "list").stdout
    assert "role" in table.splitlines()[1] and "lead" in table
