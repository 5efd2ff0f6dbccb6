"""The HTML report opened in headless Chromium: it renders (screenshot of a plausible size) and the
page text has the system names and the section headings. Skipped only where chromium is missing."""

from __future__ import annotations

import base64
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_report_cli import load, make_dataset
from tests.conftest import invoke

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def html_report(runner, sqlite_db, tmp_path) -> Path:
    make_dataset(tmp_path, seed=5)
    load(runner, sqlite_db, tmp_path)
    out = tmp_path / "report.html"
    result = invoke(runner, sqlite_db, "report", "--format", "html", "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def test_html_is_self_contained(html_report):
    text = html_report.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text  # nothing fetched from the network
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(images) >= 6  # metrics, two per-query differences, coverage, grades, agreement
    for img in images:
        w, h = png_size(base64.b64decode(img))
        assert w > 300 and h > 150
    assert "Warning:</strong> unsafe comparison" in text  # this data set has many unjudged documents


def test_the_holes_warning_states_the_fact_and_only_the_command_line_renderers_advise(runner, sqlite_db, html_report):
    # issue 32: the HTML report (also the web page /lead/report) and the JSON hold no CLI advice in
    # Markdown backticks; the terminal and Markdown reports add what to run
    import json

    text = html_report.read_text(encoding="utf-8")
    assert "are pending adjudication" in text and "unsafe comparison" in text
    assert "`" not in text and "ndcg-labeling adjudicate" not in text and "ndcg-labeling tasks create" not in text
    data = json.loads(invoke(runner, sqlite_db, "report", "--format", "json").stdout)
    holes = [h["text"] for h in data["headline"] if "pending adjudication" in h["text"]]
    assert len(holes) == 1 and "`" not in holes[0]
    hint = "adjudicate the pending items with `ndcg-labeling adjudicate list`"
    table = invoke(runner, sqlite_db, "report")
    assert table.exit_code == 0 and "hint: " + hint in " ".join(table.stdout.split())
    markdown = invoke(runner, sqlite_db, "report", "--format", "md").stdout
    assert "> **Hint:** " + hint in markdown


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_renders_in_headless_chromium(html_report, tmp_path):
    profile = tmp_path / "profile"
    shot = tmp_path / "shot.png"
    url = html_report.resolve().as_uri()
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1200,2000",
                    url], check=True, capture_output=True, timeout=120)
    assert shot.exists()
    data = shot.read_bytes()
    assert png_size(data) == (1200, 2000)
    assert len(data) > 30_000  # a blank page compresses to a few kB
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url], check=True,
                         capture_output=True, timeout=120, text=True).stdout
    text = re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", dom))
    for name in ("alpha", "beta", "gamma"):
        assert name in text
    for heading in ("Headline (ndcg@10)", "Metrics per query type", "Difference to the baseline alpha",
                    "Queries that moved", "Label quality", "Judged@10 coverage", "Grade distribution", "Agreement",
                    "Notes"):
        assert heading in text
    # the headline comes first, with its warnings and a statement per comparison
    assert text.index("Headline (ndcg@10)") < text.index("Metrics per query type")
    assert "overall: beta vs alpha on ndcg@10" in text or "overall: beta beats alpha" in text or \
        "overall: beta loses to alpha" in text
    assert "of the scored top-10 positions (system, query, rank) are pending adjudication" in text  # many holes
    assert "beta vs alpha on ndcg@10: the 10 largest losses" in text and "documents that changed places" in text
    assert 'alt="per-query difference beta vs alpha"' in dom
    assert "Krippendorff" in dom or "Agreement is not shown" in text


# --- edge cases of issue 11.3: one query per type, identical scores, metrics above 1, odd system names ------


def _edge_result(sqlite_db, metrics=("ndcg@10", "dcg@10", "p@10")):
    from ndcg_labeling.db.session import session_scope
    from ndcg_labeling.scoring.report import ReportOptions, build_report
    from tests.scoring.test_report import write

    # nav: one query; info: three queries that every system scores the same (identical scores);
    # labels up to 3 with exponential gain put dcg@10 far above 1
    queries = {"n1": "nav", "i1": "info", "i2": "info", "i3": "info"}
    labels = {q: {f"{q}a": 3, f"{q}b": 2, f"{q}c": 3} for q in queries}
    runs = {name: {q: [(f"{q}a", 1), (f"{q}b", 2), (f"{q}c", 3)] for q in queries}
            for name in ("$\\foo$", "b$x$_{1}", "plain")}
    runs["plain"]["n1"] = [("n1b", 1), ("n1a", 2)]
    write(sqlite_db, queries=queries, labels=labels, runs=runs)
    with session_scope(sqlite_db.engine) as session:
        return build_report(session=session, options=ReportOptions(metrics=metrics, baseline="plain"))


def test_html_renders_one_query_per_type_identical_scores_and_dcg(sqlite_db):
    from ndcg_labeling.reports import render_html

    result = _edge_result(sqlite_db)
    page = render_html(result)  # crashed before: yerr < 0 (float32 intervals) and mathtext on "$\foo$"
    assert "$\\foo$" in page and "b$x$_{1}" in page
    assert len(re.findall(r'src="data:image/png;base64,', page)) >= 3
    dcg = result.summary[result.summary["metric"] == "dcg@10"]
    assert (dcg["value"] > 1).all()  # the subject of the y-axis rule below


def test_intervals_contain_the_mean_in_float64(sqlite_db):
    import numpy as np

    result = _edge_result(sqlite_db)
    s = result.summary
    assert s["ci_low"].dtype == np.float64 and s["ci_high"].dtype == np.float64
    assert ((s["ci_low"] <= s["value"]) & (s["value"] <= s["ci_high"])).all()
    one = s[(s["query_type"] == "nav")]  # a single query: the interval is the value itself
    assert (one["ci_low"] == one["value"]).all() and (one["ci_high"] == one["value"]).all()
    c = result.comparisons
    assert ((c["diff_ci_low"] <= c["diff"]) & (c["diff"] <= c["diff_ci_high"])).all()


def test_csv_and_json_carry_the_float64_bounds(sqlite_db):
    import csv
    import io
    import json

    from ndcg_labeling.reports import render_csv, render_json

    result = _edge_result(sqlite_db)
    rows = list(csv.DictReader(io.StringIO(render_csv(result))))
    expected = result.summary.set_index(["system", "query_type", "metric"])
    for row in rows:
        want = expected.loc[(row["system"], row["query_type"], row["metric"])]
        assert float(row["ci_low"]) == float(want["ci_low"]) and float(row["ci_high"]) == float(want["ci_high"])
    data = json.loads(render_json(result))
    for (system, qtype, metric), want in expected.iterrows():
        got = data["results"][system][qtype][metric]
        assert got["ci_low"] == float(want["ci_low"]) and got["ci_low"] <= got["value"] <= got["ci_high"]


def test_y_axis_follows_the_data():
    import numpy as np

    from ndcg_labeling.reports.html import y_top

    bounded = {"a": (np.array([0.4, 0.9]), np.array([0.3, 0.8]), np.array([0.5, 1.0]))}
    assert y_top(bounded) == 1.05
    dcg = {"a": (np.array([4.2, 7.5]), np.array([3.9, 7.1]), np.array([4.6, 7.9]))}
    assert y_top(dcg) >= 7.9


def test_wtl_counts_the_same_metric_in_every_format(sqlite_db):
    from rich.console import Console

    from ndcg_labeling.reports import render_html, render_markdown, render_table

    result = _edge_result(sqlite_db, metrics=("p@10", "dcg@10", "ndcg@10"))
    console = Console(record=True, width=200)
    render_table(result, console)
    terminal = console.export_text()
    for text in (terminal, render_markdown(result), render_html(result)):
        assert "W/T/L ndcg@10" in text and "W/T/L p@10" not in text


def test_metric_axis_follows_the_data_within_the_metric_range():
    import numpy as np

    from ndcg_labeling.reports.html import y_range

    high = {"a": (np.array([0.86, 0.97]), np.array([0.81, 0.95]), np.array([0.9, 1.0]))}
    bottom, top = y_range("ndcg@10", high)
    assert 0.7 < bottom < 0.81 and 1.0 <= top <= 1.02  # not from 0: values between 0.8 and 1 are told apart
    dcg = {"a": (np.array([4.2, 7.5]), np.array([3.9, 7.1]), np.array([4.6, 7.9]))}
    bottom, top = y_range("dcg@10", dcg)
    assert bottom < 3.9 and top > 7.9  # dcg is not clipped at 1
    low = {"a": (np.array([0.02, 0.1]), np.array([0.0, 0.05]), np.array([0.04, 0.2]))}
    assert y_range("p@10", low)[0] == 0.0  # never below the metric's own range


def test_every_plot_names_its_y_axis(sqlite_db, monkeypatch):
    # issue 45: the report's plots had no y-axis labels
    from ndcg_labeling.reports import html as report_html
    from ndcg_labeling.reports import render_html

    seen: list[tuple[str, str]] = []
    real_png = report_html.png

    def keep_labels(fig) -> str:  # noqa: ANN001
        seen.extend((ax.get_title(), ax.get_ylabel()) for ax in fig.axes if ax.get_visible())
        return real_png(fig)

    monkeypatch.setattr(report_html, "png", keep_labels)
    render_html(_edge_result(sqlite_db), agreement=[{"scope": "nav", "alpha": 0.4}, {"scope": "all", "alpha": 0.5}])
    assert len(seen) >= 6 and all(label for _, label in seen), seen
    assert ("ndcg@10", "ndcg@10, mean over queries") in seen
    assert ("Krippendorff's alpha (ordinal) per query type", "alpha (1 = full agreement)") in seen
