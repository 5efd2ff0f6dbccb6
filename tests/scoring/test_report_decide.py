"""What the report tells a lead: label-quality caveats, the queries that moved and the headline.

Peers: the test's own bookkeeping of the data it wrote (which items have a grade spread above 1,
which top-10 documents have no label), the ``krippendorff`` package for alpha per query type,
pytrec_eval (trec_eval's C code) for the per-query scores behind the moved queries, and the demo's
hidden truth (``data/truth.csv``, never imported by the tool) for the headline's ordering.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import krippendorff
import numpy as np
import pytest
import pytrec_eval

from tests.cli.test_report_cli import SYSTEMS, TYPES, load, make_dataset
from tests.conftest import invoke

DATA = Path(__file__).resolve().parents[2] / "data"


def judgments(tmp_path: Path) -> dict[tuple[str, str], dict[str, int]]:
    out: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    with open(tmp_path / "judgments.csv", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            out[(r["query_id"], r["doc_id"])][r["grader"]] = int(r["grade"])
    return out


def test_caveats_match_the_data(runner, db, tmp_path):
    data = make_dataset(tmp_path, seed=5)
    load(runner, db, tmp_path)
    grades = judgments(tmp_path)
    scored = {q for q, rel in data["qrels"].items() if max(rel.values()) >= 1}
    report = json.loads(invoke(runner, db, "report", "--format", "json", "--metric", "ndcg@10").stdout)
    cv = report["caveats"]
    assert cv["k"] == 10 and cv["untrusted_graders"] is None
    by_type = cv["by_query_type"]

    # pending adjudication: consensus flags a spread (max - min) above 1
    flagged = {key for key, g in grades.items() if max(g.values()) - min(g.values()) > 1 and key[0] in scored}
    assert flagged
    for qt in TYPES:
        assert by_type[qt]["pending"] == sum(1 for q, _ in flagged if data["qtype"][q] == qt)
        assert by_type[qt]["items"] == sum(len(data["qrels"][q]) for q in scored if data["qtype"][q] == qt)
    assert by_type["all"]["pending"] == len(flagged)

    # top-10 holes: retrieved documents without a label, over every system's scored lists
    rows = unjudged = pending = 0
    for s in SYSTEMS:
        for q, docs in data["runs"][s].items():
            if q not in scored:
                continue
            top = sorted(docs, key=lambda d: -docs[d])[:10]
            rows += len(top)
            unjudged += sum(d not in data["qrels"][q] for d in top)
            pending += sum((q, d) in flagged for d in top)
    assert (by_type["all"]["top_k_rows"], by_type["all"]["top_k_unjudged"], by_type["all"]["top_k_pending"]) == (
        rows, unjudged, pending)

    # alpha per query type (ordinal, the 0-3 domain) from the krippendorff package
    for qt in TYPES:
        items = [g for (q, _), g in grades.items() if data["qtype"][q] == qt]
        matrix = np.array([[g.get(r, np.nan) for g in items] for r in ("ann", "bob", "cid")], dtype=float)
        peer = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
        assert by_type[qt]["alpha"] == pytest.approx(peer, abs=1e-9)
    warnings = [h["text"] for h in report["headline"] if h["kind"] == "warning"]
    share = (unjudged + pending) / rows
    assert any(f"{share:.1%} of the scored top-10 positions" in w for w in warnings)
    # positions are counted as positions, and the queue's items as items (issue 30: 212 positions, 98 items)
    assert any(f"{pending:,} positions; {len(flagged):,} items in the adjudication queue" in w for w in warnings)

    # adjudicating one flagged item takes it off the pending count
    q, d = sorted(flagged)[0]
    assert invoke(runner, db, "adjudicate", "set", q, d, "2", "--adjudicator", "lead").exit_code == 0
    again = json.loads(invoke(runner, db, "report", "--format", "json", "--metric", "ndcg@10").stdout)
    assert again["caveats"]["by_query_type"]["all"]["pending"] == len(flagged) - 1


def test_moved_queries_match_trec_eval(runner, sqlite_db, tmp_path):
    data = make_dataset(tmp_path, seed=11)
    load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "report", "--format", "json", "--gain", "linear", "--empty", "zero",
                    "--missing", "skip", "--metric", "ndcg@10", "--baseline", "alpha")
    assert result.exit_code == 0, result.output
    moved = json.loads(result.stdout)["moved"]
    assert set(moved) == {"beta", "gamma"}
    evaluator = pytrec_eval.RelevanceEvaluator(data["qrels"], {"ndcg_cut"})
    base = {q: v["ndcg_cut_10"] for q, v in evaluator.evaluate(data["runs"]["alpha"]).items()}
    for s in ("beta", "gamma"):
        other = {q: v["ndcg_cut_10"] for q, v in evaluator.evaluate(data["runs"][s]).items()}
        diffs = {q: other[q] - base[q] for q in set(base) & set(other)}
        gains = sorted((d for d in diffs.values() if d > 1e-12), reverse=True)[:10]
        losses = sorted(d for d in diffs.values() if d < -1e-12)[:10]
        assert [e["diff"] for e in moved[s]["gains"]] == pytest.approx(gains, abs=1e-9)
        assert [e["diff"] for e in moved[s]["losses"]] == pytest.approx(losses, abs=1e-9)
        for entry in moved[s]["gains"] + moved[s]["losses"]:
            q = entry["query_id"]
            assert entry["diff"] == pytest.approx(diffs[q], abs=1e-9)
            assert entry["baseline_value"] == pytest.approx(base[q], abs=1e-9)
            assert entry["text"] == f"text of {q}" and entry["query_type"] == data["qtype"][q]
            rank_b = {d: r for r, d in enumerate(sorted(data["runs"]["alpha"][q], key=lambda d: -data["runs"]["alpha"][q][d])[:10], 1)}
            rank_s = {d: r for r, d in enumerate(sorted(data["runs"][s][q], key=lambda d: -data["runs"][s][q][d])[:10], 1)}
            changed = {d for d in set(rank_b) | set(rank_s) if rank_b.get(d) != rank_s.get(d)}
            listed = {d["document_id"] for d in entry["documents"]}
            assert listed <= changed and (listed == changed or len(listed) == 10)
            for d in entry["documents"]:
                doc = d["document_id"]
                assert (d["rank_baseline"], d["rank_system"]) == (rank_b.get(doc), rank_s.get(doc))
                assert d["label"] == data["qrels"][q].get(doc)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> str:
    from typer.testing import CliRunner

    out = tmp_path_factory.mktemp("demo")
    result = invoke(CliRunner(), None, "demo", "--out", str(out))
    assert result.exit_code == 0, result.output
    return f"sqlite:///{out / 'demo.db'}"


def true_ndcg() -> dict[str, dict[str, float]]:
    """ndcg@10 per (query group, system) against the hidden truth, exponential gain (2^rel - 1 as the
    integer relevance of trec_eval's linear gain)."""
    truth: dict[str, dict[str, int]] = defaultdict(dict)
    with open(DATA / "truth.csv", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            truth[r["query_id"]][r["doc_id"]] = 2 ** int(r["relevance"]) - 1
    with open(DATA / "queries.csv", encoding="utf-8") as fh:
        qtype = {r["query_id"]: r["query_type"] for r in csv.DictReader(fh)}
    evaluator = pytrec_eval.RelevanceEvaluator(dict(truth), {"ndcg_cut"})
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for s in ("bm25", "dense", "hybrid"):
        run: dict[str, dict[str, float]] = defaultdict(dict)
        for line in (DATA / "runs" / f"{s}.run").read_text(encoding="utf-8").splitlines():
            q, _, d, _, score, _ = line.split()
            run[q][d] = float(score)
        scores = evaluator.evaluate(dict(run))
        for group in ["all", *sorted(set(qtype.values()))]:
            out[group][s] = float(np.mean([v["ndcg_cut_10"] for q, v in scores.items() if group in ("all", qtype[q])]))
    return out


@pytest.mark.slow
def test_headline_on_the_demo_names_the_true_ordering(runner, demo_db):
    truth = true_ndcg()
    assert max(truth["all"], key=truth["all"].get) == "hybrid"  # the design, by the hidden truth
    assert max(truth["navigational"], key=truth["navigational"].get) == "bm25"
    result = runner.invoke(__import__("ndcg_labeling.cli", fromlist=["app"]).app,
                           ["report", "--format", "json", "--db", demo_db])
    assert result.exit_code == 0, result.output
    headline = json.loads(result.stdout)["headline"]
    best = {h["query_type"]: h for h in headline if h["kind"] == "best"}
    assert best["all"]["system"] == "hybrid" and best["all"]["ahead"] is True
    assert best["navigational"]["system"] == "bm25" and best["navigational"]["ahead"] is True
    assert best["all"]["text"].startswith("overall: hybrid is best on ndcg@10")
    # nothing the headline states as detectable contradicts the truth
    for h in headline:
        t = truth.get(h["query_type"] or "")
        if h["kind"] == "best" and h["ahead"]:
            assert t[h["system"]] > t[h["runner_up"]], h["text"]
        if h["kind"] == "best" and h["ahead"] is False:
            assert max(t, key=t.get) in (h["system"], h["runner_up"]) or max(t.values()) - t[h["system"]] < 0.02
        if h["kind"] in ("better", "worse"):
            sign = 1 if h["kind"] == "better" else -1
            assert sign * (t[h["system"]] - t[h["baseline"]]) > 0, h["text"]
    overall = [h for h in headline if h["query_type"] == "all" and h["system"] == "hybrid" and h["kind"] != "best"]
    assert overall[0]["kind"] == "better" and overall[0]["text"].startswith("overall: hybrid beats bm25 on ndcg@10 by +")
    # the demo's labels are noisy and many items await adjudication: the headline warns
    warnings = [h["text"] for h in headline if h["kind"] == "warning"]
    assert any("Krippendorff's alpha is below 0.667" in w for w in warnings)
    assert any("pending adjudication" in w for w in warnings)
    # and the terminal/markdown formats start with the same headline
    md = runner.invoke(__import__("ndcg_labeling.cli", fromlist=["app"]).app,
                       ["report", "--format", "md", "--db", demo_db]).stdout
    assert md.index("## Headline (ndcg@10)") < md.index("## Mean per query type")
    assert "- overall: hybrid is best on ndcg@10" in md and "## Label quality" in md and "## Queries that moved" in md
