"""The queries that moved, rendered: per comparison the largest losses and gains on the headline
metric with the query text, both scores and the documents that changed places (title, label, rank
in each system); in HTML also a sorted per-query difference plot."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ndcg_labeling.results import headline_metric

if TYPE_CHECKING:
    from rich.console import Console

    from ndcg_labeling.results import ReportResult

KINDS = (("losses", "largest losses"), ("gains", "largest gains"))


def _rank(r: int | None) -> str:
    return "-" if r is None else str(r)


def _label(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "unjudged"
    return f"{v:g}"


def document_lines(entry: dict[str, Any], baseline: str, system: str) -> list[str]:
    """One line per document that changed places: ``rank baseline -> rank system  id  title (label)``."""
    out = []
    for d in entry["documents"]:
        title = d["title"] or ""
        title = title if len(title) <= 60 else title[:57] + "..."
        out.append(f"{_rank(d['rank_baseline'])} → {_rank(d['rank_system'])}  {d['document_id']} {title} "
                   f"(label {_label(d['label'])})")
    return out


def moved_rows(result: ReportResult, system: str, kind: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows (query, type, text, both scores, difference, documents) of one list."""
    b = str(result.baseline)
    header = ["query", "query type", "text", b, system, "diff", f"documents that changed places (rank {b} → {system})"]
    rows = []
    for e in result.moved.get(system, {}).get(kind, []):
        rows.append([e["query_id"], e["query_type"], e["text"] or "", f"{e['baseline_value']:.3f}",
                     f"{e['value']:.3f}", f"{e['diff']:+.3f}", "\n".join(document_lines(e, b, system))])
    return header, rows


def _title(result: ReportResult, system: str, label: str) -> str:
    metric = headline_metric(result.metrics, result.options)
    return f"{system} vs {result.baseline} on {metric}: the {result.options.n_moved} {label} (all query types)"


def render_moved_table(result: ReportResult, console: Console) -> None:
    """Rich tables of the moved queries (nothing without a baseline)."""
    from rich.table import Table
    from rich.text import Text

    for system in result.moved:
        for kind, label in KINDS:
            header, rows = moved_rows(result, system, kind)
            if not rows:
                continue
            table = Table(title=Text(_title(result, system, label)), show_lines=True)
            for i, col in enumerate(header):
                table.add_column(col, justify="right" if 3 <= i <= 5 else "left", overflow="fold")
            for r in rows:
                table.add_row(*(Text(c) for c in r))  # query texts and titles are data: inert
            console.print(table)


def render_moved_markdown(result: ReportResult, md_table: Any) -> list[str]:
    """Markdown sections of the moved queries (documents joined with ``<br>``)."""
    parts = []
    for system in result.moved:
        for kind, label in KINDS:
            header, rows = moved_rows(result, system, kind)
            if rows:
                parts.append(f"### {_title(result, system, label)}\n")
                parts.append(md_table(header, [[c.replace("\n", "<br>") for c in r] for r in rows]))
    return parts


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c).replace(chr(10), '<br>')}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f'<div class="scroll" tabindex="0"><table class="moved"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def difference_plot(result: ReportResult, system: str) -> str | None:
    """PNG (data URL) of ``system - baseline`` per query on the headline metric, sorted; None when
    there is nothing to plot. The y-axis follows the data (symmetric around 0)."""
    from ndcg_labeling.reports.figures import png, pyplot

    metric = headline_metric(result.metrics, result.options)
    pq = result.per_query[result.per_query["metric"] == metric]
    wide = pq.pivot_table(index="query_id", columns="system", values="value")
    if system not in wide or result.baseline not in wide:
        return None
    diff = (wide[system] - wide[result.baseline]).dropna().to_numpy(float)
    if diff.size == 0:
        return None
    diff.sort()
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.0))
    colors = np.where(diff > 0, "#2a9d55", np.where(diff < 0, "#c0392b", "#999999"))
    ax.bar(np.arange(diff.size), diff, width=1.0, color=colors)
    lim = float(np.abs(diff).max()) or 1.0
    ax.set_ylim(-lim * 1.1, lim * 1.1)
    ax.axhline(0, color="#333", linewidth=0.8)
    ax.set_xlim(-0.5, diff.size - 0.5)
    ax.set_xticks([])
    ax.set_xlabel(f"{diff.size} queries, sorted by difference")
    ax.set_ylabel(f"{metric}: {system} − {result.baseline}")
    ax.set_title(f"per-query difference: {system} − {result.baseline} on {metric}")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return png(fig)


def render_moved_html(result: ReportResult) -> str:
    """The HTML section: per comparison the sorted difference plot and the two lists."""
    if not result.moved:
        return ""
    parts = ["<h2>Queries that moved</h2>",
             '<p class="note">Per comparison with the baseline: every query\'s difference on the headline '
             "metric (sorted), then the largest losses and gains with the documents that changed places in "
             "the top k (rank in the baseline → rank in the system; - = not in its top k).</p>"]
    for system in result.moved:
        src = difference_plot(result, system)
        if src:
            parts.append(f'<img src="{src}" alt="{html.escape(f"per-query difference {system} vs {result.baseline}")}">')
        for kind, label in KINDS:
            header, rows = moved_rows(result, system, kind)
            parts.append(f"<h3>{html.escape(_title(result, system, label))}</h3>")
            parts.append(_html_table(header, rows) if rows else '<p class="note">none</p>')
    return "\n".join(parts)
