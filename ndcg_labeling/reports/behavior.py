"""Rendering ``implicit derive``'s result (its ``as_dict()``): table text, csv, json, html with a plot.

The html page draws the position bias curve as an inline SVG (no script, no external file); every
text from the data is escaped.
"""

from __future__ import annotations

import csv
import html
import io
import json
from datetime import datetime
from typing import Any


def _window_text(window: dict[str, Any]) -> str:
    """The log's span in the window, and the decay's reference time; an ``as_of`` before the newest
    impression says that the later ones were not used."""
    first, last, as_of = window.get("first_ts"), window.get("last_ts"), window.get("as_of")
    text = f"{first} .. {last}, as of {as_of}"
    if as_of is not None and last is not None and datetime.fromisoformat(as_of) < datetime.fromisoformat(last):
        text += " (impressions after it not used)"
    return text


def _summary(r: dict[str, Any]) -> list[tuple[str, Any]]:
    window = r["window"]
    half = window.get("half_life_s")
    return [("grader", r["grader"]), ("model", r["model"]), ("scale", r["scale"]),
            ("impressions", r["n_impressions"]), ("pairs", r["n_pairs"]), ("pairs graded", r["pairs_graded"]),
            ("pairs left out", f"{r['pairs_left_out']} ({r['pairs_left_out_few_impressions']} with fewer than "
                               f"{r['min_impressions']} impressions, {r['pairs_left_out_no_score']} without a score)"),
            ("cut points", ", ".join(f"{t:.4g}" for t in r["thresholds"]) + f" ({r['thresholds_source']})"),
            ("window", _window_text(window)),
            ("half-life", f"{half / 86400:.4g} days" if half else "none (every impression weighs 1)")]


def render_text(r: dict[str, Any]) -> str:
    """Plain text: the summary, the position curve and the grade distribution."""
    lines = [f"{k}: {v}" for k, v in _summary(r)]
    if r.get("fit"):
        f = r["fit"]
        lines.append(f"fit to batch {f['batch']}: {f['n_fit_pairs']} pairs fitted (kappa {f['kappa_fit']}), "
                     f"{f['n_held_out_pairs']} held-out pairs of {f['n_held_out_queries']} queries: "
                     f"quadratic-weighted kappa {f['kappa_held_out']}")
    lines += ["", f"position bias ({r['position_bias_kind']})", "position  value"]
    lines += [f"{i:>8}  {'-' if v is None else f'{v:.4f}'}" for i, v in enumerate(r["position_bias"], start=1)]
    total = max(1, sum(r["grade_distribution"].values()))
    lines += ["", "grade distribution", "grade  pairs  share"]
    lines += [f"{g:>5}  {n:>5}  {n / total:.3f}" for g, n in r["grade_distribution"].items()]
    return "\n".join(lines) + "\n"


def render_csv(r: dict[str, Any]) -> str:
    """Long csv ``section,key,value``: summary counts, the window, the cut points, one row per position,
    one per grade."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["section", "key", "value"])
    for key in ("n_impressions", "n_pairs", "pairs_graded", "pairs_left_out", "pairs_left_out_few_impressions",
                "pairs_left_out_no_score", "min_impressions", "thresholds_source"):
        w.writerow(["summary", key, r[key]])
    for key, value in r["window"].items():
        w.writerow(["window", key, "" if value is None else value])
    if r.get("fit"):
        w.writerow(["summary", "kappa_held_out", r["fit"]["kappa_held_out"]])
    for i, t in enumerate(r["thresholds"], start=1):
        w.writerow(["cut_point", i, t])
    for i, v in enumerate(r["position_bias"], start=1):
        w.writerow(["position_bias", i, "" if v is None else v])
    for g, n in r["grade_distribution"].items():
        w.writerow(["grade", g, n])
    return buf.getvalue()


def render_json(r: dict[str, Any]) -> str:
    return json.dumps(r, indent=2)


def _svg(values: list[float | None], kind: str) -> str:
    width, height, pad = 480, 240, 40
    pts = [(i, v) for i, v in enumerate(values, start=1) if v is not None]
    if not pts:
        return "<p>no position curve</p>"
    top = max(1.0, max(v for _, v in pts))
    n = max(2, len(values))

    def xy(i: int, v: float) -> tuple[float, float]:
        return pad + (i - 1) * (width - 2 * pad) / (n - 1), height - pad - v / top * (height - 2 * pad)

    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(i, v) for i, v in pts))
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3"><title>position {i}: {v:.4f}</title></circle>'
                   for (i, v), (x, y) in zip(pts, (xy(i, v) for i, v in pts), strict=True))
    ticks = "".join(f'<text x="{xy(i, 0)[0]:.1f}" y="{height - pad + 16}" text-anchor="middle">{i}</text>'
                    for i in range(1, len(values) + 1))
    return (f'<svg role="img" aria-label="position bias" width="{width}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg" font-size="11" font-family="sans-serif">'
            f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#888"/>'
            f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#888"/>'
            f'<text x="{pad - 6}" y="{pad + 4}" text-anchor="end">{top:.2g}</text>'
            f'<text x="{pad - 6}" y="{height - pad + 4}" text-anchor="end">0</text>{ticks}'
            f'<text x="{width / 2}" y="{height - 6}" text-anchor="middle">position</text>'
            f'<polyline points="{path}" fill="none" stroke="#2060c0" stroke-width="2"/>'
            f'<g fill="#2060c0">{dots}</g><text x="{pad}" y="{pad - 10}">{html.escape(kind)}</text></svg>')


def render_html(r: dict[str, Any]) -> str:
    """A self-contained page: summary table, the position bias plot, the grade distribution."""
    e = html.escape
    rows = "".join(f"<tr><th>{e(str(k))}</th><td>{e(str(v))}</td></tr>" for k, v in _summary(r))
    if r.get("fit"):
        f = r["fit"]
        rows += (f"<tr><th>fit to batch</th><td>{e(str(f['batch']))}: held-out quadratic-weighted kappa "
                 f"{e(str(f['kappa_held_out']))} on {f['n_held_out_pairs']} pairs of {f['n_held_out_queries']} "
                 f"queries (fitted on {f['n_fit_pairs']} other pairs)</td></tr>")
    total = max(1, sum(r["grade_distribution"].values()))
    dist = "".join(f"<tr><td>{e(str(g))}</td><td>{n}</td><td>{n / total:.3f}</td></tr>"
                   for g, n in r["grade_distribution"].items())
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>behavior labels: "
            f"{e(r['grader'])}</title><style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}"
            "th,td{padding:2px 10px;text-align:left;border-bottom:1px solid #ddd}</style></head><body>"
            f"<h1>Behavior labels: {e(r['grader'])} ({e(r['model'])})</h1><table>{rows}</table>"
            f"<h2>Position bias</h2>{_svg(r['position_bias'], r['position_bias_kind'])}"
            f"<h2>Grade distribution</h2><table><tr><th>grade</th><th>pairs</th><th>share</th></tr>{dist}</table>"
            "<p>Clicks are not relevance: these grades measure what users did with what they were shown.</p>"
            "</body></html>\n")


def render(r: dict[str, Any], fmt: str) -> str:
    """``fmt`` one of table, csv, json, html."""
    return {"table": render_text, "csv": render_csv, "json": render_json, "html": render_html}[fmt](r)
