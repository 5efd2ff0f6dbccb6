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


def _plot(windows: list[dict[str, Any]], key: str, title: str, t0: float, t1: float) -> str:
    rows = [w for w in windows if w["query_type"] == "all" and w.get(key) is not None]
    if not rows:
        return ""
    width, height, pad = 640, 180, 40
    vals = [float(w[key]) for w in rows]
    lo, hi = min(vals), max(vals)
    hi = hi if hi > lo else lo + 1e-9

    def xy(ts: float, v: float) -> tuple[float, float]:
        x = pad + (width - 2 * pad) * ((ts - t0) / (t1 - t0) if t1 > t0 else 0.5)
        return x, height - pad / 2 - (height - pad) * (v - lo) / (hi - lo)

    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="4" y="14" font-size="12">{html.escape(title)} ({lo:.4f} .. {hi:.4f})</text>']
    for i, arm in enumerate(sorted({w["arm"] for w in rows})):
        pts = [xy(w["window_start_s"] or 0.0, float(w[key])) for w in rows if w["arm"] == arm]
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>' for x, y in pts]
        parts.append(f'<text x="{width - pad + 4}" y="{20 + 14 * i}" font-size="11" fill="{color}">'
                     f'{html.escape(str(arm))}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def render_html(r: dict[str, Any]) -> str:
    times = [w["window_start_s"] or 0.0 for w in r["windows"]]
    t0, t1 = (min(times), max(times)) if times else (0.0, 1.0)
    body = [f"<h1>Online report: {html.escape(r['metric'])}</h1>"]
    body += [f"<p>{html.escape(line)}</p>" for line in headline_lines(r)]
    body.append(f"<p>time axis: window starts from {html.escape(str(r['windows'][0]['window_start']) if r['windows'] else '-')}"
                f" to {html.escape(str(r['windows'][-1]['window_start']) if r['windows'] else '-')}</p>")
    for key, title in PLOT_MEASURES:
        svg = _plot(r["windows"], key, title or r["metric"], t0, t1)
        if svg:
            body.append(f"<figure>{svg}</figure>")
    for name, rows, cols in (("Arms", r["arms"], ARM_COLS), ("Agreement", r["agreement"], AGREE_COLS)):
        body.append(f"<h2>{name}</h2><table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>")
        body += ["<tr>" + "".join(f"<td>{html.escape(_cell(row.get(c)))}</td>" for c in cols) + "</tr>" for row in rows]
        body.append("</table>")
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>Online report</title>"
            "<style>body{font-family:sans-serif} td,th{padding:2px 6px;text-align:left}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def render(r: dict[str, Any], fmt: str) -> str:
    return {"table": render_text, "csv": render_csv, "json": render_json, "html": render_html}[fmt](r)
