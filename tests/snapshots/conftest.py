"""Fixtures of the snapshot tests: a database holding a few queries, and a template file per engine kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_engines import TEMPLATES

from tests.conftest import invoke

QUERIES = [("Q1", "github login", "navigational"), ("Q2", 'say "hi" \\ back', "informational"),
           ("Q3", "cheap flights", "transactional")]


def write_queries(path: Path, rows=QUERIES, extra: dict[str, list[str]] | None = None) -> Path:
    cols = ["query_id", "text", "query_type", *(extra or {})]
    lines = [",".join(cols)]
    for i, (q, t, ty) in enumerate(rows):
        cell = '"' + t.replace('"', '""') + '"'
        lines.append(",".join([q, cell, ty, *(v[i] for v in (extra or {}).values())]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


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


def add_config(runner, db, name: str, kind: str, url: str, template: str, *extra: str):
    index = ["--index", "docs"] if kind in ("elasticsearch", "opensearch", "solr") else []
    paths = ["--id-path", "data.results[].doc.key", "--score-path", "data.results[].s"] if kind == "http-json" else []
    return invoke(runner, db, "snapshot", "config", "add", name, "--kind", kind, "--url", url, "--template", template,
                  *index, *paths, *extra)
