"""``ndcg-labeling demo`` end to end into a temporary folder: files, sensible numbers, fresh-db rule.

The demo data were designed (data/make_demo_data.py) so that bm25 is best on navigational queries,
dense on informational and long-tail ones and hybrid on transactional ones; the checks below are
about those design facts and about the hidden truth, not numbers copied from an earlier run.
"""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import invoke

DATA = Path(__file__).resolve().parents[1] / "data"
# One xdist worker runs this module: the demo (a module fixture) runs once per run, not once per worker.
pytestmark = pytest.mark.xdist_group("demo")


def summary(path: Path) -> dict[tuple[str, str, str], float]:
    with open(path, encoding="utf-8") as fh:
        return {(r["system"], r["query_type"], r["metric"]): float(r["value"]) for r in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory) -> tuple[Path, object]:
    from typer.testing import CliRunner

    out = tmp_path_factory.mktemp("demo")
    result = invoke(CliRunner(), None, "demo", "--out", str(out))
    return out, result


@pytest.mark.slow
def test_demo_writes_report_and_database(demo_out):
    out, result = demo_out
    assert result.exit_code == 0, result.output
    assert (out / "demo.db").exists() and (out / "report.html").stat().st_size > 50_000
    assert sorted(p.name for p in (out / "tasks").iterdir()) == [f"{g}.csv" for g in ("ana", "ben", "chloe", "dev", "emma")]
    text = result.stdout
    assert "agreement per query type" in text and "ndcg@10 per query type" in text
    for qtype in ("navigational", "informational", "transactional", "long-tail"):
        assert qtype in text


@pytest.mark.slow
def test_demo_numbers_follow_the_design(demo_out):
    out, result = demo_out
    s = summary(out / "report.csv")
    best = {qt: max(("bm25", "dense", "hybrid"), key=lambda sys_: s[(sys_, qt, "ndcg@10")])
            for qt in ("navigational", "informational", "transactional", "long-tail")}
    assert best["navigational"] == "bm25"
    assert best["transactional"] == "hybrid"
    assert best["long-tail"] in ("dense", "hybrid") and best["informational"] in ("dense", "hybrid")
    assert s[("dense", "long-tail", "ndcg@10")] > s[("bm25", "long-tail", "ndcg@10")] + 0.2
    # pooled at depth 10 from every system: the top 10 are fully judged
    assert all(s[(sys_, "all", "judged@10")] == 1.0 for sys_ in ("bm25", "dense", "hybrid"))


@pytest.mark.slow
def test_demo_consensus_recovers_the_hidden_truth(demo_out):
    # the median of 3 graders should agree with the true relevance far more often than chance (0.25)
    import sqlite3

    out, _ = demo_out
    truth = {}
    with open(DATA / "truth.csv", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            truth[(r["query_id"], r["doc_id"])] = int(r["relevance"])
    con = sqlite3.connect(out / "demo.db")
    rows = con.execute("SELECT q.external_id, d.external_id, c.value FROM consensus_labels c "
                       "JOIN queries q ON q.id = c.query_id JOIN documents d ON d.id = c.document_id").fetchall()
    con.close()
    assert len(rows) > 400
    hits = np.mean([truth.get((q, d), 0) == v for q, d, v in rows])
    assert hits > 0.7


def test_demo_refuses_a_database_with_data(runner, sqlite_db, tmp_path):
    (tmp_path / "q.csv").write_text("query_id,text,query_type\nq1,hello,nav\n", encoding="utf-8")
    assert invoke(runner, sqlite_db, "import", "queries", str(tmp_path / "q.csv")).exit_code == 0
    before = sqlite_db.counts()
    result = invoke(runner, sqlite_db, "demo", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: the database {sqlite_db.url} is not empty (table queries has rows)")
    assert sqlite_db.counts() == before


@pytest.mark.slow
def test_demo_shows_grader_quality_and_a_judge_calibration(demo_out):
    out, result = demo_out
    text = result.stdout
    assert "grader quality on gold items" in text and "calibration of the simulated judge llm-judge" in text
    dev_row = next(line for line in text.splitlines() if line.strip().startswith("dev ") and "False" in line)
    assert dev_row  # the random grader is untrusted
    assert "verdict: do not use llm-judge for long-tail" in text
    assert "without the untrusted ones" in text and (out / "quality.db").exists()


@pytest.mark.slow
def test_demo_prints_the_headline_and_caveats_after_the_tables(demo_out):
    """What a lead decides from: every headline line of `report` over the demo's database (the JSON
    report's own headline) and the label-quality table, after the metric tables."""
    import json

    from typer.testing import CliRunner

    out, result = demo_out
    report = invoke(CliRunner(), None, "report", "--format", "json", "--db", f"sqlite:///{out / 'demo.db'}")
    assert report.exit_code == 0, report.output
    headline = json.loads(report.stdout)["headline"]
    assert headline
    text = " ".join(result.stdout.split())
    tables_end = text.index("ndcg@10 per query type")
    for item in headline:
        assert " ".join(item["text"].split()) in text[tables_end:], item["text"]
    assert text.index("headline (", tables_end) > tables_end
    assert "label quality behind the numbers" in text[tables_end:]


# -- one statistical story per comparison (issue 45) ------------------------------------------------------
PAIRS = [(scope, system) for scope in ("informational", "long-tail", "navigational", "transactional", "all")
         for system in ("dense", "hybrid")]


def _excludes_zero(interval: str) -> bool:
    lo, hi = (float(x) for x in interval.strip("[]").split(","))
    return lo > 0 or hi < 0


def _story(headline: str, table_row: tuple[str, str, str], scope: str, system: str) -> None:
    """The headline line and the table row of one pair show one interval and one p-value, and the star
    (or the verdict) agrees with the interval."""
    star, interval, p = table_row
    found = re.findall(rf"{'overall' if scope == 'all' else scope}: {system} (?:beats|loses to|vs) bm25 on "
                       rf"ndcg@10[^\[]*?(?:by )?[+-][\d.]+ (\[[^\]]+\]), p ([<=]) ([\d.]+)", headline)
    assert len(found) == 1, (scope, system, found)
    h_interval, op, h_p = found[0]
    assert h_interval == interval, (scope, system, h_interval, interval)
    assert (op == "<" and p == "<0.001" and h_p == "0.001") or h_p == p, (scope, system, h_p, p)
    assert (star == "*") == _excludes_zero(interval), (scope, system, star, interval)
    assert (star == "*") == (p == "<0.001" or float(p) < 0.05)
    # the best system's line does not test the same pair again
    best = re.findall(rf"{'overall' if scope == 'all' else scope}: {system} is best[^;]*; [^:]*?bm25 \(([^)]*)\)",
                      headline)
    assert all("p " not in b and "p=" not in b for b in best), best
    # nor when the baseline is best and this system the runner-up (navigational in the demo)
    best = re.findall(rf"{'overall' if scope == 'all' else scope}: bm25 is best[^;]*; [^(]*?{system}\b(.*?\))",
                      headline)
    assert all("p " not in b and "p=" not in b for b in best), best


@pytest.mark.slow
def test_demo_terminal_shows_one_p_value_per_comparison(demo_out):
    _out, result = demo_out
    text = re.sub(r"\s+", " ", result.stdout)
    assert "p rand" not in text and "Bonferroni" in text
    headline = text[text.index("headline (ndcg@10"):]
    rows = {}
    for scope, system in PAIRS:
        found = re.findall(rf" {scope} {system} [+-][\d.]+(\*?) (\[[^\]]+\]) (<?[\d.]+) \d+/\d+/\d+", text)
        assert len(found) == 1, (scope, system, found)  # one row, one interval, one p
        rows[(scope, system)] = found[0]
        _story(headline, found[0], scope, system)
    # the design of the demo: hybrid's lead on transactional queries is not detectable at n = 10
    assert rows[("transactional", "hybrid")][0] == ""


@pytest.mark.slow
def test_demo_html_shows_one_p_value_per_comparison(demo_out):
    out, _result = demo_out
    page = (out / "report.html").read_text(encoding="utf-8")
    section = page[page.index("<h2>Difference to the baseline"):]
    section = section[: section.index("</table>")]
    header = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th>(.*?)</th>", section)]
    col = header.index("ndcg@10")
    headline = re.sub(r"<[^>]+>", " ", page[page.index('<section class="headline">'):])
    headline = re.sub(r"\s+", " ", html.unescape(headline))
    for tr in re.findall(r"<tr>(.*?)</tr>", section)[1:]:
        cells = [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", c))).strip()
                 for c in re.findall(r"<td>(.*?)</td>", tr)]
        scope, system = cells[0], cells[1]
        m = re.fullmatch(r"[+-][\d.]+(\*?) (\[[^\]]+\]) \(p (<?[\d.]+)\)", cells[col])
        assert m, cells[col]
        assert cells[col].count("p ") == 1
        _story(headline, m.groups(), scope, system)
