"""Rendering ``online report``'s result: table text, csv, json (keys ``arms``, ``windows``,
``agreement``, ``headline``), html (one SVG plot per figure over time, arms as lines, one shared time
axis; no script, no external file; every text from the data escaped)."""

from __future__ import annotations

import csv
import html
import io
import json
import math
from typing import Any

ARM_COLS = ("query_type", "arm", "measure", "n", "mean", "ci_low", "ci_high", "diff", "diff_low", "diff_high", "p",
            "judged_share")
WINDOW_COLS = ("window_start", "arm", "query_type", "n", "metric", "metric_ci_low", "metric_ci_high", "metric_diff",
               "metric_p", "ctr", "ctr_diff", "ctr_p", "conversion", "conversion_diff", "conversion_p", "judged_share")
AGREE_COLS = ("arm", "baseline", "metric", "measure", "n_cells", "tau", "ci_low", "ci_high")
PLOT_MEASURES = (("metric", None), ("ctr", "CTR"), ("conversion", "conversion rate"), ("watch_ratio", "mean watch ratio"))
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _table(rows: list[dict[str, Any]], cols: tuple[str, ...]) -> list[str]:
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    out = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return out


def headline_lines(r: dict[str, Any]) -> list[str]:
    lines = [f"online report: {r['metric']} against labels {r['labels']}, baseline {r['baseline']}, "
             f"{r['n_requests']} requests ({r['n_rows']} impressions)"]
    lines += [f"warning: {w}" for w in r["warnings"]]
    if r["headline"]:
        lines += [h["text"] for h in r["headline"]]
    else:
        lines.append(f"no query type where {r['metric']} improves significantly while a business metric drops "
                     "significantly")
    return lines


def render_text(r: dict[str, Any]) -> str:
    lines = headline_lines(r)
    lines += ["", "arms (requests are the unit; 95% cluster bootstrap intervals; difference to the baseline: "
              f"z test, clustered by {r['cluster']})"]
    lines += _table(r["arms"], ARM_COLS)
    lines += ["", f"windows ({r['window'] or 'one window'})"]
    lines += _table(r["windows"], WINDOW_COLS)
    lines += ["", "offline-online agreement (Kendall tau-b of the differences to the baseline across windows and "
              "query types)"]
    lines += _table(r["agreement"], AGREE_COLS)
    return "\n".join(lines) + "\n"


def render_csv(r: dict[str, Any]) -> str:
    """Long csv: ``section`` (arms / windows / agreement / headline) then the section's columns."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for section, rows, cols in (("arms", r["arms"], ARM_COLS), ("windows", r["windows"], WINDOW_COLS),
                                ("agreement", r["agreement"], AGREE_COLS),
                                ("headline", r["headline"], ("query_type", "arm", "measure", "text"))):
        w.writerow(["section", *cols])
        for row in rows:
            w.writerow([section, *["" if _clean(row.get(c)) is None else row.get(c) for c in cols]])
    return buf.getvalue()


def render_json(r: dict[str, Any]) -> str:
    keys = ("metric", "baseline", "labels", "window", "window_s", "cluster", "n_rows", "n_requests", "judged",
            "warnings", "arms", "windows", "agreement", "headline")
    return json.dumps(_clean({k: r[k] for k in keys}), indent=2) + "\n"


#: what a column is called on the HTML page (the text, csv and json keep the identifiers)
HEADERS = {
    "query_type": "query type", "arm": "arm", "measure": "measure", "n": "requests",
    "mean": "mean [95% interval]", "diff": "difference to the baseline [95% interval]", "p": "p-value",
    "judged_share": "judged share", "baseline": "baseline", "metric": "offline metric",
    "n_cells": "cells (windows × query types)", "tau": "Kendall tau-b [95% interval]",
}
#: per plotted figure: its unit on the y axis (a share is drawn in per cent)
PLOT_UNITS = {"metric": "score (0 to 1)", "ctr": "% of requests", "conversion": "% of requests",
              "watch_ratio": "watch ratio"}
_PERCENT = ("ctr", "conversion")
_ONLINE_CSS = (".chart{display:block;width:100%;max-width:720px;height:auto}"
               "figure{margin:1em 0}figcaption{font-weight:600}")


def p_text(p: Any) -> str:
    """A p-value as a page shows it: ``< 0.001`` below a thousandth (never ``0.0000``), else three decimals."""
    if p is None or (isinstance(p, float) and not math.isfinite(p)):
        return "-"
    return "< 0.001" if float(p) < 0.001 else f"{float(p):.3f}"


#: the HTML tables' columns: an estimate and its interval in one cell ("0.832 [0.826, 0.837]")
HTML_ARM_COLS = ("query_type", "arm", "measure", "n", "mean", "diff", "p", "judged_share")
HTML_AGREE_COLS = ("arm", "baseline", "metric", "measure", "n_cells", "tau")
_INTERVAL = {"mean": ("ci_low", "ci_high"), "diff": ("diff_low", "diff_high"), "tau": ("ci_low", "ci_high")}


def _number(value: Any, signed: bool = False) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _html_cell(col: str, row: dict[str, Any]) -> str:
    value = row.get(col)
    if col == "p" or col.endswith("_p"):
        return p_text(value)
    if col in _INTERVAL:
        low, high = (row.get(c) for c in _INTERVAL[col])
        shown = _number(value, signed=col == "diff")
        if shown == "-" or _number(low) == "-":
            return shown
        return f"{shown} [{_number(low, col == 'diff')}, {_number(high, col == 'diff')}]"
    if col == "judged_share":
        return _number(value)
    return _cell(value)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round values (1, 2 or 5 times a power of ten apart) covering [lo, hi]."""
    raw = (hi - lo) / max(n - 1, 1) or 1.0
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    return [round(first + i * step, 12) for i in range(int(math.ceil((hi - first) / step - 1e-9)) + 1)]


def _plot(windows: list[dict[str, Any]], key: str, title: str, t0: float, t1: float) -> str:
    """One SVG line plot of ``key`` per arm over the windows (query type ``all``): a y axis with ticks
    and the figure's unit, an x axis with the windows' start times."""
    rows = [w for w in windows if w["query_type"] == "all" and w.get(key) is not None]
    if not rows:
        return ""
    width, height, left, right, top, bottom = 720, 230, 64, 110, 12, 46
    scale = 100.0 if key in _PERCENT else 1.0
    vals = [float(w[key]) * scale for w in rows]
    ticks = nice_ticks(min(0.0, min(vals)), max(vals) if max(vals) > min(0.0, min(vals)) else 1.0)
    lo, hi = ticks[0], ticks[-1]

    def x_of(ts: float) -> float:
        return left + (width - left - right) * ((ts - t0) / (t1 - t0) if t1 > t0 else 0.5)

    def y_of(v: float) -> float:
        return height - bottom - (height - top - bottom) * (v - lo) / (hi - lo)

    label = html.escape(f"{title} per window ({PLOT_UNITS.get(key, '')})")
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{label}">',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#666"/>',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#666"/>']
    for v in ticks:
        y = y_of(v)
        text = f"{v:g}"
        parts += [f'<line x1="{left - 4}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#e5e5e5"/>',
                  f'<text x="{left - 7}" y="{y + 4:.1f}" font-size="12" text-anchor="end">{text}</text>']
    parts.append(f'<text transform="translate(14 {(top + height - bottom) / 2:.0f}) rotate(-90)" font-size="12" '
                 f'text-anchor="middle" fill="#555">{html.escape(PLOT_UNITS.get(key, ""))}</text>')
    starts = sorted({(w["window_start_s"] or 0.0, str(w["window_start"])) for w in rows})
    every = max(1, math.ceil(len(starts) / 6))  # at most six time labels
    for ts, stamp in starts[::every]:
        x = x_of(ts)
        parts += [f'<line x1="{x:.1f}" y1="{height - bottom}" x2="{x:.1f}" y2="{height - bottom + 5}" stroke="#666"/>',
                  f'<text x="{x:.1f}" y="{height - bottom + 18}" font-size="11" text-anchor="middle">'
                  f'{html.escape(stamp[:16].replace("T", " "))}</text>']
    parts.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" font-size="12" text-anchor="middle" '
                 f'fill="#555">window start (UTC)</text>')
    for i, arm in enumerate(sorted({w["arm"] for w in rows})):
        pts = [(x_of(w["window_start_s"] or 0.0), y_of(float(w[key]) * scale)) for w in rows if w["arm"] == arm]
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>' for x, y in pts]
        parts.append(f'<text x="{width - right + 10}" y="{top + 14 + 15 * i}" font-size="12" fill="{color}">'
                     f'{html.escape(str(arm))}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def render_html(r: dict[str, Any]) -> str:
    """The page: the report's stylesheet (``reports/html.py``'s), the headline, one plot per figure with
    axes, ticks and units, and the tables under readable headers with p-values as ``< 0.001``."""
    from ndcg_labeling.reports.html import _CSS as REPORT_CSS  # the report's stylesheet, shared

    times = [w["window_start_s"] or 0.0 for w in r["windows"]]
    t0, t1 = (min(times), max(times)) if times else (0.0, 1.0)
    lines = headline_lines(r)
    body = [f"<h1>Online report: {html.escape(r['metric'])}</h1>", f"<p>{html.escape(lines[0])}</p>"]
    body += [f'<p class="warning">{html.escape(line)}</p>' for line in lines[1:] if line.startswith("warning: ")]
    found = [line for line in lines[1:] if not line.startswith("warning: ")]
    body.append('<div class="headline"><h2>Headline</h2><ul>' + "".join(f"<li>{html.escape(line)}</li>" for line in found)
                + "</ul></div>")
    for key, title in PLOT_MEASURES:
        svg = _plot(r["windows"], key, title or r["metric"], t0, t1)
        if svg:
            caption = html.escape(f"{title or r['metric']} per window, by arm ({PLOT_UNITS.get(key, '')})")
            body.append(f"<figure><figcaption>{caption}</figcaption>{svg}</figure>")
    notes = {"Arms": "Requests are the unit; 95% cluster bootstrap intervals; the difference to the baseline is "
                     f"tested with a z test clustered by {html.escape(str(r['cluster']))}.",
             "Agreement": "Offline-online agreement: Kendall tau-b of the differences to the baseline across "
                          "windows and query types."}
    for name, rows, cols in (("Arms", r["arms"], HTML_ARM_COLS), ("Agreement", r["agreement"], HTML_AGREE_COLS)):
        body.append(f'<h2>{name}</h2><p class="note">{notes[name]}</p><div class="scroll"><table><tr>'
                    + "".join(f"<th>{html.escape(HEADERS.get(c, c))}</th>" for c in cols) + "</tr>")
        body += ["<tr>" + "".join(f"<td>{html.escape(_html_cell(c, row))}</td>" for c in cols) + "</tr>"
                 for row in rows]
        body.append("</table></div>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Online report</title>"
            f"<style>{REPORT_CSS}{_ONLINE_CSS}</style></head><body>" + "\n".join(body) + "</body></html>\n")


def render(r: dict[str, Any], fmt: str) -> str:
    return {"table": render_text, "csv": render_csv, "json": render_json, "html": render_html}[fmt](r)
