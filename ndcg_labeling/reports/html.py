"""A self-contained HTML report: plots embedded as base64 PNG, tables, notes and warnings.

One file, no network: the page opens from disk anywhere. Plots (matplotlib, Agg backend):

* the mean of each metric per query type and system, with its bootstrap interval (points and whiskers on
  an axis that follows the data within the metric's own range);
* the judged@k coverage per query type and system, with the 0.9 line below which comparisons are unsafe;
* the distribution of the effective labels per query type;
* Krippendorff's alpha per query type (when agreement rows are given).
"""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling.reports.figures import png, pyplot
from ndcg_labeling.reports.headline import headline_html
from ndcg_labeling.reports.model import grouping_phrase
from ndcg_labeling.reports.moved import render_moved_html
from ndcg_labeling.reports.text import P_LEGEND, comparison_cells, coverage_cells, summary_cells

if TYPE_CHECKING:

    from ndcg_labeling.results import ReportResult

Array = NDArray[Any]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;
color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right;white-space:nowrap}small{color:#666}
th{background:#f3f3f3;white-space:normal;vertical-align:bottom;min-width:5em}
td:first-child,td:nth-child(2),th:first-child,th:nth-child(2){text-align:left}
.warning{background:#fff3cd;border:1px solid #e0b100;padding:.6em 1em;border-radius:4px}
.note{color:#555}.headline{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.2em 1em .6em}
.headline li{margin:.25em 0}.headline li.up{color:#1a7f37}.headline li.down{color:#b42318}
table.moved td{white-space:normal;vertical-align:top;text-align:left}img{max-width:100%;height:auto}.muted{color:#666;font-size:.9em}.scroll{overflow-x:auto;max-width:100%}
.panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,320px),1fr));gap:.6em}
.panels img{width:100%}
"""


def _img(src: str, alt: str) -> str:
    return f'<img src="{src}" alt="{html.escape(alt)}">'


@contextlib.contextmanager
def _plain_text() -> Iterator[None]:
    """Every text on the plots (system names, query types, metric names) is shown as it is: no
    mathtext (``$\\foo$`` would be parsed, and crash on an unknown command) and no LaTeX."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        yield


def y_top(series: dict[str, tuple[Array, Array, Array]]) -> float:
    """The top of a bar plot's y-axis: 1.05 for metrics within [0, 1], else 5 % above the highest bar or
    interval bound (dcg@10 and other unbounded metrics are not clipped)."""
    values = np.concatenate([np.concatenate([v, hi]) for v, _, hi in series.values()]) if series else np.empty(0)
    finite = values[np.isfinite(values)]
    highest = float(finite.max()) if finite.size else 0.0
    return 1.05 if highest <= 1.0 else highest * 1.05


#: metric families without an upper bound of 1 (their axis follows the data upwards)
UNBOUNDED_FAMILIES = ("dcg",)


def y_range(metric: str, series: dict[str, tuple[Array, Array, Array]]) -> tuple[float, float]:
    """The y-axis of a point-and-interval plot: the data's span (means and interval bounds) with 10 %
    padding, kept inside the metric's own range ([0, 1], or [0, inf) for dcg)."""
    values = np.concatenate([np.concatenate([v, lo, hi]) for v, lo, hi in series.values()]) if series else np.empty(0)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    pad = 0.1 * (high - low) or 0.05 * max(abs(high), 1e-3)
    bottom = max(low - pad, 0.0) if low >= 0 else low - pad
    top = high + pad
    if metric.split("@")[0] not in UNBOUNDED_FAMILIES and high <= 1.0:
        top = min(top, 1.02)
    return bottom, top


def _grouped(ax: Any, groups: Sequence[str], series: dict[str, tuple[Array, Array, Array]], title: str, *,
             points: bool = False) -> None:
    """Per group one bar (``points``: one marker at the mean) per series, coloured per series, with its
    asymmetric interval ``(value, low, high)`` as error bars. Bars start at 0 (:func:`y_top`); with
    points the y-axis follows the data (:func:`y_range`), so differences between 0.8 and 1 are visible."""
    x = np.arange(len(groups))
    width = 0.8 / max(len(series), 1)
    for i, (name, (value, low, high)) in enumerate(series.items()):
        # the intervals contain the means (stats.bootstrap_ci); the clip only guards matplotlib's check
        err = np.clip(np.vstack([np.nan_to_num(value - low), np.nan_to_num(high - value)]), 0.0, None)
        at = x + (i - (len(series) - 1) / 2) * width
        if points:
            ax.errorbar(at, value, yerr=err, fmt="o", capsize=3, markersize=5, label=name)
        else:
            ax.bar(at, np.nan_to_num(value), width, yerr=err, capsize=3, label=name)
    ax.set_xticks(x)
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_title(title)
    ax.set_ylim(*(y_range(title, series) if points else (0, y_top(series))))
    ax.grid(axis="y", alpha=0.3)


def metric_plots(result: ReportResult) -> list[tuple[str, str]]:
    """One small plot per metric (``(data URL, metric)``), each with its own legend and axis labels: the
    page lays them out three to a row on a wide screen and one under the other on a phone, where a
    single many-panel figure would be scaled down past reading."""
    plt = pyplot()
    metrics = [mt for mt in result.metrics if not mt.startswith("judged")] or result.metrics
    groups = result.query_types + ["all"]
    s = result.summary.set_index(["system", "metric", "query_type"]).sort_index()
    plots = []
    for metric in metrics:
        fig, ax = plt.subplots(figsize=(5.0, 3.8))
        series = {}
        for system in result.systems:
            sub = s.loc[(system, metric)].reindex(groups)
            series[system] = (sub["value"].to_numpy(float), sub["ci_low"].to_numpy(float),
                              sub["ci_high"].to_numpy(float))
        _grouped(ax, groups, series, metric, points=True)
        ax.set_ylabel(f"{metric}, mean over queries")
        ax.set_xlabel("query type")
        ax.set_title(metric, pad=26)
        ax.legend(fontsize=8, ncol=min(len(series), 3), loc="lower center", bbox_to_anchor=(0.5, 1.0),
                  frameon=False)
        fig.tight_layout()
        plots.append((png(fig), metric))
    return plots


def coverage_plot(result: ReportResult) -> str:
    plt = pyplot()
    groups = result.query_types + ["all"]
    cov = result.coverage.set_index(["system", "query_type"]).sort_index()
    fig, ax = plt.subplots(figsize=(8, 3.4))
    series = {}
    for system in result.systems:
        v = cov.loc[system].reindex(groups)["judged"].to_numpy(float)
        series[system] = (v, v, v)
    _grouped(ax, groups, series, f"judged@{result.coverage_k}")
    ax.set_ylabel(f"share of top-{result.coverage_k} judged")
    ax.set_xlabel("query type")
    ax.axhline(0.9, color="red", linestyle="--", linewidth=1, label="0.9: below, comparisons are unsafe")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return png(fig)


def grade_plot(result: ReportResult) -> tuple[str, list[list[str]]]:
    """Share of labels at each (rounded) grade per query type: the plot and the count table rows."""
    plt = pyplot()
    labels = result.labels.assign(grade=np.round(result.labels["value"].to_numpy(float)).astype(int))
    table = labels.groupby(["query_type", "grade"]).size().unstack(fill_value=0).sort_index()
    grades = list(table.columns)
    shares = table.div(table.sum(axis=1), axis=0)
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(table) + 1.4))
    left = np.zeros(len(table))
    cmap = plt.get_cmap("viridis")
    for i, g in enumerate(grades):
        vals = shares[g].to_numpy(float)
        ax.barh(list(table.index), vals, left=left, label=f"grade {g}",
                color=cmap(i / max(len(grades) - 1, 1)))
        left += vals
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of labels")
    ax.set_ylabel("query type")
    ax.set_title("effective labels per query type", pad=28)
    ax.legend(fontsize=8, ncol=len(grades), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    rows = [[str(qt)] + [str(int(table.loc[qt, g])) for g in grades] + [str(int(table.loc[qt].sum()))]
            for qt in table.index]
    header = ["query type"] + [f"grade {g}" for g in grades] + ["labels"]
    return png(fig), [header, *rows]


def agreement_plot(rows: Sequence[dict[str, Any]]) -> str:
    plt = pyplot()
    names = [str(r["scope"]) for r in rows]
    alpha = np.array([np.nan if r.get("alpha") is None else float(r["alpha"]) for r in rows])
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.bar(names, np.nan_to_num(alpha), color="#4c72b0")
    ax.axhline(0.667, color="red", linestyle="--", linewidth=1, label="0.667 (tentative conclusions)")
    ax.set_ylim(min(0.0, float(np.nanmin(alpha)) if np.isfinite(alpha).any() else 0.0), 1.0)
    ax.set_title("Krippendorff's alpha (ordinal) per query type")
    ax.set_ylabel("alpha (1 = full agreement)")
    ax.set_xlabel("query type")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png(fig)


def _two_lines(cell: str) -> str:
    """A value with its interval or p-value: the number on top, the rest small below it."""
    for sep in (" [", " (p "):
        if sep in cell:
            head, tail = cell.split(sep, 1)
            return f"{html.escape(head)}<br><small>{html.escape(sep.strip() + ' ' * (sep == ' (p ') + tail)}</small>"
    return html.escape(cell)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_two_lines(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll" tabindex="0"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def render_html(result: ReportResult, *, agreement: Sequence[dict[str, Any]] | None = None,
                agreement_note: str | None = None, title: str = "ndcg-labeling report",
                words: Callable[[str], str] | None = None) -> str:
    """One self-contained HTML page. ``agreement``: rows with ``scope`` and ``alpha`` (and optionally
    ``percent_agreement``, ``ac1``, ``n_items``) per query type, the ``all`` row included; None leaves
    the agreement section out with ``agreement_note`` saying why. ``words``: how the warnings and notes
    are worded for where the page is read (the web workspace says what to choose instead of an option)."""
    if agreement is None and result.caveats is not None:  # measured once, with the caveats
        agreement, agreement_note = result.caveats.agreement_rows, agreement_note or result.caveats.agreement_note
    with _plain_text():
        return _render_html(result, agreement=agreement, agreement_note=agreement_note, title=title,
                            words=words or str)


def _render_html(result: ReportResult, *, agreement: Sequence[dict[str, Any]] | None,
                 agreement_note: str | None, title: str, words: Callable[[str], str]) -> str:
    o = result.options
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    parts.append(f'<p class="muted">systems: {html.escape(", ".join(result.systems))}; baseline: '
                 f'{html.escape(str(result.baseline))}; gain: {o.gain}; relevant threshold: {o.relevant_threshold:g}; '
                 f'{o.confidence:.0%} percentile bootstrap intervals ({o.n_bootstrap:,} resamples).</p>')
    for w in result.warnings:
        parts.append(f'<p class="warning"><strong>Warning:</strong> {html.escape(words(w))}</p>')
    parts.append(headline_html(result))

    grouping = grouping_phrase(o.by)
    parts.append(f"<h2>Metrics {grouping}</h2>")
    parts.append('<div class="panels">' + "".join(_img(src, f"{metric} {grouping} with intervals")
                                                  for src, metric in metric_plots(result)) + "</div>")
    header, rows = summary_cells(result)
    parts.append(_table(header, rows))

    header, rows = comparison_cells(result)
    if rows:
        parts.append(f"<h2>Difference to the baseline {html.escape(str(result.baseline))}</h2>")
        parts.append(_table(header, rows))
        parts.append(f'<p class="note">{html.escape(P_LEGEND)}.</p>')
    parts.append(render_moved_html(result))
    parts.append(_caveats_html(result, words))

    parts.append(f"<h2>Judged@{result.coverage_k} coverage</h2>")
    parts.append(_img(coverage_plot(result), "judged coverage"))
    header, rows = coverage_cells(result)
    parts.append(_table(header, rows))

    parts.append("<h2>Grade distribution</h2>")
    src, grade_rows = grade_plot(result)
    parts.append(_img(src, "grade distribution per query type"))
    parts.append(_table(grade_rows[0], grade_rows[1:]))

    parts.append("<h2>Agreement</h2>")
    if agreement:
        parts.append('<p class="note">Krippendorff\'s alpha (ordinal) of the judgments per query type, with '
                     "percent agreement and Gwet's AC1; below 0.667 conclusions are tentative.</p>")
        parts.append(_img(agreement_plot(agreement), "agreement per query type"))
        cols = ["scope", "alpha", "percent_agreement", "ac1", "n_items", "n_graders"]
        arows = [[_cell(r.get(c)) for c in cols] for r in agreement]
        parts.append(_table(["query type", "alpha", "% agreement", "AC1", "items", "graders"], arows))
    if agreement_note:
        parts.append(f'<p class="note">{html.escape(words(agreement_note))}</p>')

    parts.append("<h2>Notes</h2><ul>")
    parts.extend(f"<li>{html.escape(words(n))}</li>" for n in result.notes)
    parts.append("</ul></body></html>")
    return "\n".join(parts)


def _caveats_html(result: ReportResult, words: Callable[[str], str] = str) -> str:
    """The label-quality section: alpha, pending adjudication and top-k holes per query type."""
    from ndcg_labeling.reports.headline import caveat_notes, caveat_rows

    header, rows = caveat_rows(result)
    if not rows:
        return ""
    parts = ["<h2>Label quality</h2>",
             '<p class="note">How far the labels behind the numbers can be trusted: Krippendorff\'s alpha of the '
             "grades (below 0.667 conclusions are tentative), labelled items still pending adjudication, and the "
             "scored top-k rows whose document has no label or a pending one.</p>", _table(header, rows)]
    parts.extend(f'<p class="note">{html.escape(words(n))}</p>' for n in caveat_notes(result))
    return "\n".join(parts)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.3f}"
    return str(v)
