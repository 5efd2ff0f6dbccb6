"""Renderers of a :class:`~ndcg_labeling.reports.model.ReportResult`: Rich tables, CSV, JSON,
Markdown and a self-contained HTML page with embedded plots.

They take the finished result and only format it; nothing here touches the database.
"""

from __future__ import annotations

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
