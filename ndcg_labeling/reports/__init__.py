"""Renderers of a :class:`~ndcg_labeling.results.ReportResult`: Rich tables, CSV, JSON,
Markdown and a self-contained HTML page with embedded plots.

They take the finished result and only format it; nothing here touches the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as mypy sees them; at run time __getattr__ loads them on first use
    from ndcg_labeling.reports.html import render_html
    from ndcg_labeling.reports.text import (
        PER_QUERY_COLUMNS,
        SUMMARY_COLUMNS,
        render_csv,
        render_json,
        render_markdown,
        render_overview,
        render_table,
    )

# Loaded on first use (they import pandas and matplotlib): `eval` renders with reports.trec_eval only.
_LAZY = {"render_html": "html", "PER_QUERY_COLUMNS": "text", "SUMMARY_COLUMNS": "text", "render_csv": "text",
         "render_json": "text", "render_markdown": "text", "render_overview": "text", "render_table": "text"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"ndcg_labeling.reports.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'ndcg_labeling.reports' has no attribute {name!r}")


__all__ = [
    "PER_QUERY_COLUMNS",
    "SUMMARY_COLUMNS",
    "render_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "render_overview",
    "render_table",
]
