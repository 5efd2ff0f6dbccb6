"""One entry point from a finished report to its output format (table, csv, json, md, html)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from ndcg_labeling.results import ReportResult

#: the formats :func:`render_report` knows; ``table`` prints Rich tables, the others return text
REPORT_FORMATS = ("table", "csv", "json", "md", "html")
#: terminal width of a table written to a file or a pipe (wide enough for the metric columns)
TABLE_WIDTH = 160


def render_report(result: ReportResult, fmt: str, *, console: Console | None = None) -> str | None:
    """Render ``result`` in ``fmt``.

    ``table`` prints on ``console`` (a 160-column console when none is given) and returns None; every
    other format returns the text.
    """
    from ndcg_labeling.reports.html import render_html
    from ndcg_labeling.reports.text import render_csv, render_json, render_markdown, render_table

    if fmt == "table":
        if console is None:
            from rich.console import Console

            console = Console(width=TABLE_WIDTH)
        render_table(result, console)
        return None
    renderers: dict[str, Callable[[ReportResult], str]] = {
        "csv": render_csv, "json": render_json, "md": render_markdown, "html": render_html}
    if fmt not in renderers:
        raise ValueError(f"render_report: fmt must be one of {', '.join(REPORT_FORMATS)}, got {fmt!r}")
    return renderers[fmt](result)
