"""Helpers of the snapshot tests: the queries, a query-set file, ``snapshot config add`` for a kind."""

from __future__ import annotations

from pathlib import Path

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


def add_config(runner, db, name: str, kind: str, url: str, template: str, *extra: str):
    index = ["--index", "docs"] if kind in ("elasticsearch", "opensearch", "solr") else []
    paths = ["--id-path", "data.results[].doc.key", "--score-path", "data.results[].s"] if kind == "http-json" else []
    return invoke(runner, db, "snapshot", "config", "add", name, "--kind", kind, "--url", url, "--template", template,
                  *index, *paths, *extra)
