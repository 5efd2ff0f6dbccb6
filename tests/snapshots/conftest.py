"""Fixtures of the snapshot tests: a database holding a few queries, and a template file per engine kind
(the helpers are in snapshot_world.py)."""

from __future__ import annotations

import pytest
from fake_engines import TEMPLATES
from snapshot_world import write_queries

from tests.conftest import invoke


@pytest.fixture
def qdb(sqlite_db, tmp_path, runner):
    """A SQLite database with the three queries of QUERIES."""
    assert invoke(runner, sqlite_db, "import", "queries", str(write_queries(tmp_path / "q.csv"))).exit_code == 0
    return sqlite_db


@pytest.fixture
def template_file(tmp_path):
    def make(kind: str) -> str:
        path = tmp_path / f"{kind}.json"
        path.write_text(TEMPLATES[kind], encoding="utf-8")
        return str(path)

    return make
