"""online.html (``online report --format html``) as a person reads it: the report's stylesheet,
readable headers, plots with axes, ticks and units, p-values as ``< 0.001``, and nothing wider
than a phone outside the tables' scroll boxes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ndcg_labeling.reports.online import render_html
from tests.web.pages import CHROMIUM


def result() -> dict:
    arms = []
    for arm, diff, p in (("control", None, None), ("new", 0.114, 3e-7)):
        arms.append({"query_type": "all", "arm": arm, "measure": "ndcg@10", "n": 1500, "mean": 0.832, "ci_low": 0.826,
                     "ci_high": 0.837, "diff": diff, "diff_low": None if diff is None else 0.101,
                     "diff_high": None if diff is None else 0.127, "p": p, "judged_share": 0.97})
    windows = [{"window_start": f"2026-01-01T{h:02d}:00:00", "window_start_s": 1767225600.0 + 3600 * h, "arm": arm,
                "query_type": "all", "n": 250, "metric": 0.8 + 0.01 * h, "ctr": 0.85, "conversion": 0.19,
                "watch_ratio": None} for h in (0, 6, 12) for arm in ("control", "new")]
    return {"metric": "ndcg@10", "labels": "consensus", "baseline": "control", "n_requests": 3000, "n_rows": 24000,
            "warnings": [], "headline": [{"text": "all: new beats control on ndcg@10 by +0.114, p < 0.001"}],
            "cluster": "request", "arms": arms, "windows": windows, "window": "6h",
            "agreement": [{"arm": "new", "baseline": "control", "metric": "ndcg@10", "measure": "ctr", "n_cells": 12,
                           "tau": 0.18, "ci_low": -0.38, "ci_high": 0.66}]}


def test_online_html_has_the_report_style_readable_headers_axes_and_p_values():
    page = render_html(result())
    assert "<style>" in page and "border-collapse:collapse" in page  # the report's stylesheet
    headers = re.findall(r"<th>(.*?)</th>", page)
    assert headers and not [h for h in headers if "_" in h]  # no query_type, ci_low, n_cells ...
    assert "mean [95% interval]" in headers and "p-value" in headers
    cells = re.findall(r"<td>(.*?)</td>", page)
    assert "&lt; 0.001" in cells and not [c for c in cells if re.fullmatch(r"0\.0+", c)]
    assert "+0.114 [+0.101, +0.127]" in cells
    plots = re.findall(r"(?s)<svg.*?</svg>", page)
    assert len(plots) == 3  # the metric, CTR, conversion (no watch ratio in these windows)
    for svg in plots:
        assert "window start (UTC)" in svg and "2026-01-01 06:00" in svg  # the x axis and its ticks
        ticks = re.findall(r'text-anchor="end">([-\d.]+)</text>', svg)
        assert len(ticks) >= 3  # the y axis's ticks
    assert "% of requests" in plots[1] and ">100</text>" in plots[1]  # CTR in per cent, up to 100


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed")
def test_online_html_fits_a_phone(browser):
    page = browser.new_page(viewport={"width": 390, "height": 900})
    page.set_content(render_html(result()))
    assert page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth") <= 0
    page.close()
