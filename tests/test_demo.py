"""``ndcg-labeling demo`` end to end into a temporary folder: files, sensible numbers, fresh-db rule.

The demo data were designed (data/make_demo_data.py) so that bm25 is best on navigational queries,
dense on informational and long-tail ones and hybrid on transactional ones; the checks below are
about those design facts and about the hidden truth, not numbers copied from an earlier run.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import invoke

DATA = Path(__file__).resolve().parents[1] / "data"


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
