"""The loop on real BM25 rankings: tantivy indexes the demo documents behind an Elasticsearch-shaped
``_search``; ``snapshot take`` -> ``tasks create --from-snapshot`` -> grades by file (from the demo's
truth) -> ``consensus`` -> ``report``, whose NDCG@5 of the snapshot matches pytrec_eval's on the same
labels; then ``report --gate`` on snapshots (run names holding '@' and ':'): a re-take of the same engine
passes, an engine answering BM25's ranks 36-40 (worst first) fails (exit 3)."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest
from fake_engines import FakeEngine, serving
from sqlalchemy import text
from tantivy_engine import DATA, bm25_search

from tests.conftest import invoke

pytest.importorskip("tantivy")
pytrec_eval = pytest.importorskip("pytrec_eval")
DEPTH = 5


def _rows(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def grade_by_file(runner, db, batch: str, out) -> None:
    """Export ana's items, grade each by the demo's truth (0 where it has none) and import the file."""
    assert invoke(runner, db, "tasks", "export", batch, "--grader", "ana", "--out", str(out)).exit_code == 0
    qid = {r["text"]: r["query_id"] for r in _rows("queries.csv")}
    did = {(r["title"], r["body"]): r["doc_id"] for r in _rows("documents.csv")}
    truth = {(r["query_id"], r["doc_id"]): r["relevance"] for r in _rows("truth.csv")}
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    frame["grade"] = [truth.get((qid[q], did[(t, b)]), "0") for q, t, b in zip(frame["query"], frame["title"],
                                                                                 frame["body"], strict=True)]
    frame.to_csv(out, index=False)
    result = invoke(runner, db, "tasks", "import", str(out), "--grader", "ana")
    assert result.exit_code == 0, result.output


def take(runner, db, config: str) -> str:
    result = invoke(runner, db, "snapshot", "take", config, "--depth", str(DEPTH), "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["snapshot"]


def test_snapshot_pool_grade_report_and_gate_on_real_bm25(sqlite_db, runner, tmp_path, template_file):
    db = sqlite_db
    for kind, name in (("queries", "queries.csv"), ("documents", "documents.csv")):
        assert invoke(runner, db, "import", kind, str(DATA / name)).exit_code == 0
    assert invoke(runner, db, "graders", "add", "ana").exit_code == 0
    search = bm25_search()
    with serving(FakeEngine("elasticsearch", search=search)) as good, \
            serving(FakeEngine("elasticsearch", search=lambda q, k: search(q, 40)[-k:][::-1])) as tail:
        for name, engine in (("bm25", good), ("tail", tail)):
            assert invoke(runner, db, "snapshot", "config", "add", name, "--kind", "elasticsearch", "--url",
                          engine.url, "--index", "docs", "--template", template_file("elasticsearch")).exit_code == 0
        first, again, worst = take(runner, db, "bm25"), take(runner, db, "bm25"), take(runner, db, "tail")
    assert ":" in first and "@" in first and first != again

    # pool exactly the unjudged pairs of the snapshot, grade them by file, make the labels
    made = invoke(runner, db, "tasks", "create", "b1", "--from-snapshot", first, "--scale", "0-3", "--overlap", "1",
                  "--graders", "ana", "--seed", "1")
    assert made.exit_code == 0, made.output
    grade_by_file(runner, db, "b1", tmp_path / "b1.csv")
    assert invoke(runner, db, "consensus", "--method", "median", "--min-graders", "1").exit_code == 0
    nothing = invoke(runner, db, "tasks", "create", "b2", "--from-snapshot", again, "--scale", "0-3", "--overlap",
                     "1", "--graders", "ana")
    assert nothing.exit_code == 1 and "every pair" in nothing.stderr  # the same engine brought nothing new

    # the report's per-query NDCG@5 of the snapshot is trec_eval's (linear gain) on the stored labels
    report = invoke(runner, db, "report", "--system", first, "--per-query", "--gain", "linear", "--metric", "ndcg@5",
                    "--format", "csv", "--empty", "zero")
    assert report.exit_code == 0, report.output
    ours = {r["query_id"]: float(r["value"]) for r in csv.DictReader(report.stdout.splitlines())}
    with db.engine.connect() as conn:
        labels = conn.execute(text("SELECT q.external_id, d.external_id, c.value FROM consensus_labels c JOIN queries q "
                                   "ON q.id = c.query_id JOIN documents d ON d.id = c.document_id")).all()
        ranked = conn.execute(text("SELECT q.external_id, d.external_id, r.rank FROM ranking_entries r JOIN systems s "
                                   "ON s.id = r.system_id JOIN queries q ON q.id = r.query_id JOIN documents d ON "
                                   "d.id = r.document_id WHERE s.name = :n"), {"n": first}).all()
    qrels: dict[str, dict[str, int]] = {}
    for q, d, v in labels:
        qrels.setdefault(q, {})[d] = int(v)
    run: dict[str, dict[str, float]] = {}
    for q, d, rank in ranked:
        run.setdefault(q, {})[d] = float(DEPTH + 1 - rank)  # the stored order, without ties
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5"}).evaluate(run)
    assert set(ours) == set(theirs) and len(ours) >= 30
    for q, measures in theirs.items():
        assert ours[q] == pytest.approx(measures["ndcg_cut_5"], abs=1e-9), q

    # the gate on snapshots: the same engine again passes; BM25's ranks 36-40 are a significant drop
    same = invoke(runner, db, "report", "--gate", "ndcg@5", "--baseline", first, "--system", again, "--quiet")
    assert same.exit_code == 0, same.output
    assert invoke(runner, db, "tasks", "create", "b3", "--from-snapshot", worst, "--scale", "0-3", "--overlap", "1",
                  "--graders", "ana").exit_code == 0
    grade_by_file(runner, db, "b3", tmp_path / "b3.csv")
    assert invoke(runner, db, "consensus", "--method", "median", "--min-graders", "1").exit_code == 0
    worse = invoke(runner, db, "report", "--gate", "ndcg@5", "--baseline", first, "--system", worst, "--quiet")
    assert worse.exit_code == 3, worse.output
    assert worst in worse.output and "gate failed" in worse.output
