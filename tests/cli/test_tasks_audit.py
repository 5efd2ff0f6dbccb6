"""``tasks create NAME --audit-of BATCH --judge GRADER --budget N``: the audit of a batch a judge graded in full,
drawn by stratum (query type x judge grade band) with at least two queries per stratum; the stored inclusion
probabilities are the design's (each stratum's 1 / pi sum to its size: the Horvitz-Thompson identity), and the
batch holds every pooled pair of the drawn queries and nothing else. :func:`ndcg_labeling.stats.audit_allocation`
is checked against the brute-force optimum of its objective."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

from ndcg_labeling.stats import audit_allocation
from tests.cli.test_report_ppi import SYSTEMS, _world
from tests.conftest import invoke


def _setup(runner, db, tmp_path: Path, *, judge_docs: int = 16) -> dict:
    w = _world(tmp_path)
    assert invoke(runner, db, "import", "queries", str(tmp_path / "queries.csv")).exit_code == 0
    for s in SYSTEMS:
        assert invoke(runner, db, "import", "run", str(tmp_path / f"{s}.run"), "--system", s).exit_code == 0
    for g, kind in (("llm", "model"), ("ann", "human"), ("bob", "human")):
        assert invoke(runner, db, "graders", "add", g, "--kind", kind).exit_code == 0
    result = invoke(runner, db, "tasks", "create", "b1", "--scale", "0-3", "--depth", "10", "--overlap", "1",
                    "--graders", "ann", "--seed", "1")
    assert result.exit_code == 0, result.output
    rng = np.random.default_rng(0)
    rows = ["query_id,doc_id,grader,grade"] + [f"{q},{q}-d{j:02d},llm,{int(rng.integers(0, 4))}"
                                               for q in w["queries"] for j in range(judge_docs)]
    (tmp_path / "llm.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert invoke(runner, db, "import", "judgments", str(tmp_path / "llm.csv"), "--scale", "0-3").exit_code == 0
    return w


def test_audit_draws_by_stratum_and_records_inclusion(runner, db, tmp_path):
    _setup(runner, db, tmp_path)
    result = invoke(runner, db, "tasks", "create", "audit1", "--audit-of", "b1", "--judge", "llm", "--budget", "8",
                    "--scale", "0-3", "--overlap", "1", "--graders", "ann,bob", "--seed", "5", "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["queries"] == 20 and out["budget"] == 8
    assert len(out["strata"]) == 4  # two query types x two judge bands: 8 // (2 x 2)
    assert all(s["audited"] >= 2 for s in out["strata"]) and sum(s["audited"] for s in out["strata"]) == 8
    with db.engine.connect() as conn:
        drawn = conn.execute(text("SELECT a.query_id, a.stratum, a.stratum_size, a.inclusion FROM audit_samples a "
                                  "JOIN grading_batches b ON b.id = a.batch_id WHERE b.name = 'audit1'")).all()
        in_batch = {q for (q,) in conn.execute(text(
            "SELECT DISTINCT i.query_id FROM batch_items i JOIN grading_batches b ON b.id = i.batch_id "
            "WHERE b.name = 'audit1'"))}
        pairs = conn.execute(text(
            "SELECT count(*) FROM batch_items i JOIN grading_batches b ON b.id = i.batch_id WHERE b.name = 'b1' "
            "AND i.query_id IN (SELECT query_id FROM audit_samples)")).scalar_one()
    assert len(drawn) == 8 and in_batch == {q for q, *_ in drawn} and out["items"] == pairs
    by_stratum: dict[str, float] = {}
    for _, stratum, _size, inclusion in drawn:
        by_stratum[stratum] = by_stratum.get(stratum, 0.0) + 1.0 / inclusion
        assert stratum.split("|")[0] in ("nav", "info") and 0 < inclusion <= 1
    sizes = {s["stratum"]: s["queries"] for s in out["strata"]}
    assert by_stratum == pytest.approx(sizes)  # Horvitz-Thompson: 1 / pi sums to each stratum's size
    assert sum(sizes.values()) == 20


@pytest.mark.parametrize("args,message", [
    (("--budget", "30"), "between 2 and the 20 queries"),
    (("--budget", "1"), "between 2 and the 20 queries"),
    ((), "--audit-of needs --budget"),
    (("--budget", "4", "--depth", "5"), "no --depth"),
    (("--budget", "4", "--scale", "0-4"), "not 0-4"),
])
def test_audit_refusals(runner, sqlite_db, tmp_path, args, message):
    _setup(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "tasks", "create", "a", "--audit-of", "b1", "--judge", "llm", "--overlap", "1",
                    "--graders", "ann", "--scale", "0-3", *args)
    assert result.exit_code != 0 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_audit_refuses_a_batch_the_judge_did_not_grade_in_full(runner, sqlite_db, tmp_path):
    _setup(runner, sqlite_db, tmp_path, judge_docs=12)  # the runs retrieve d12-d15 too
    result = invoke(runner, sqlite_db, "tasks", "create", "a", "--audit-of", "b1", "--judge", "llm", "--budget", "4",
                    "--overlap", "1", "--graders", "ann", "--scale", "0-3")
    assert result.exit_code == 1 and "graded in full" in result.output and "of the" in result.output, result.output


@pytest.mark.parametrize("sizes,spreads,budget", [
    ([5, 9, 4], [0.3, 0.1, 0.45], 8), ([10, 3, 6, 7], [0.2, 0.5, 0.0, 0.25], 10), ([4, 4], [0.1, 0.1], 5)])
def test_allocation_is_the_brute_force_optimum(sizes, spreads, budget):
    got = audit_allocation(np.array(sizes), np.array(spreads), budget)
    n, s = np.array(sizes, dtype=float), np.array(spreads)

    def variance(a):
        a = np.array(a, dtype=float)
        return float(((n * s) ** 2 * (1 / a - 1 / n)).sum())

    feasible = [a for a in itertools.product(*[range(2, k + 1) for k in sizes]) if sum(a) == budget]
    best = min(variance(a) for a in feasible)
    assert got.sum() == budget and (got >= 2).all() and (got <= n).all()
    assert variance(got) == pytest.approx(best, abs=1e-12)


def test_report_weights_the_audit_by_its_inclusion_probabilities(runner, sqlite_db, tmp_path):
    """After an audit batch: people grade the drawn queries; ``report --estimator ppi`` equals ppi_mean with
    weights 1 / inclusion on per-query NDCG@10 computed by pytrec_eval (trec_eval's C code) from the test's own
    grades, and names the audit batch; people's grades of a query the design did not draw are left out."""
    import pytrec_eval

    from ndcg_labeling.stats import ppi_mean

    w = _setup(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "tasks", "create", "audit1", "--audit-of", "b1", "--judge", "llm", "--budget",
                    "8", "--scale", "0-3", "--overlap", "1", "--graders", "ann", "--seed", "5")
    assert result.exit_code == 0, result.output
    with sqlite_db.engine.connect() as conn:
        drawn = dict(conn.execute(text("SELECT q.external_id, a.inclusion FROM audit_samples a JOIN queries q "
                                       "ON q.id = a.query_id")).all())
    judge = {q: {} for q in w["queries"]}
    for line in (tmp_path / "llm.csv").read_text().splitlines()[1:]:
        q, d, _, g = line.split(",")
        judge[q][d] = int(g)
    stray = next(q for q in w["queries"] if q not in drawn)
    human = {q: {d: max(g - 1, 0) for d, g in judge[q].items()} for q in [*drawn, stray]}  # the judge is lenient
    rows = ["query_id,doc_id,grader,grade"] + [f"{q},{d},bob,{g}" for q in human for d, g in human[q].items()]
    (tmp_path / "people.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert invoke(runner, sqlite_db, "import", "judgments", str(tmp_path / "people.csv"), "--scale", "0-3").exit_code == 0
    assert invoke(runner, sqlite_db, "consensus", "--method", "median").exit_code == 0
    result = invoke(runner, sqlite_db, "report", "--estimator", "ppi", "--judge", "llm", "--metric", "ndcg@10",
                    "--gain", "linear", "--by", "none", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["design"] == "audit1" and report["audited"] == 8 and report["queries"] == 20
    assert any("did not draw" in x for x in report["warnings"])
    qs = w["queries"]
    audit = np.array([q in drawn for q in qs])
    weights = np.array([1 / drawn[q] for q in qs if q in drawn])

    def per_query(qrels, s):
        theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"}).evaluate(w["runs"][s])
        return np.array([theirs[q]["ndcg_cut_10"] if q in theirs else 0.0 for q in qs])

    for row in report["rows"]:
        s, base = row["system"], row["baseline"]
        j = per_query(judge, s) - (per_query(judge, base) if base else 0)
        h = per_query({q: human.get(q, {"x": 0}) for q in qs}, s) - (
            per_query({q: human.get(q, {"x": 0}) for q in qs}, base) if base else 0)
        want = ppi_mean(j, h[audit], j[audit], weights=weights, interval="t")
        assert row["estimate"] == pytest.approx(want.estimate, abs=1e-9), (s, base)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((want.ci_low, want.ci_high), abs=1e-9)
        assert (row["human_ci_low"], row["human"]) == pytest.approx((want.human_low, want.human), abs=1e-9)


def test_plan_predicts_audit_widths(runner, sqlite_db, tmp_path):
    w = _setup(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "plan", "--judge", "llm", "--audit", "5")
    assert result.exit_code == 1 and "consensus" in result.output, result.output  # no people's labels yet
    rows = ["query_id,doc_id,grader,grade"] + [f"{q},{q}-d{j:02d},bob,{(i + j) % 4}"
                                               for i, q in enumerate(w["queries"][:6]) for j in range(16)]
    (tmp_path / "people.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert invoke(runner, sqlite_db, "import", "judgments", str(tmp_path / "people.csv"), "--scale", "0-3").exit_code == 0
    assert invoke(runner, sqlite_db, "consensus", "--method", "median").exit_code == 0
    result = invoke(runner, sqlite_db, "plan", "--judge", "llm", "--audit", "6", "--audit", "15", "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert len(out) == 2 * (len(SYSTEMS) + len(SYSTEMS) - 1) and {r["audited_so_far"] for r in out} == {6}
    for first, second in zip(out[::2], out[1::2], strict=True):
        assert (first["audit"], second["audit"]) == (6, 15)
        assert second["ppi_halfwidth"] < first["ppi_halfwidth"] and second["human_halfwidth"] < first["human_halfwidth"]
    table = invoke(runner, sqlite_db, "plan", "--judge", "llm", "--audit", "10")
    assert table.exit_code == 0 and "predicted PPI interval widths from 6 audited queries" in table.stdout
    for args, message in ((("--judge", "llm", "--audit", "2"), "at least 3"), (("--audit", "5", "--mde", "0.1"),
                          "--audit does not go with"), (("--judge", "llm", "--audit", "5", "--mde", "0.1"),
                          "--mde does not go with --judge")):
        bad = invoke(runner, sqlite_db, "plan", *args)
        assert bad.exit_code != 0 and message in bad.output, (args, bad.output)


def test_deleting_an_audit_batch_deletes_its_draw(runner, db, tmp_path):
    _setup(runner, db, tmp_path)
    result = invoke(runner, db, "tasks", "create", "audit1", "--audit-of", "b1", "--judge", "llm", "--budget", "4",
                    "--scale", "0-3", "--overlap", "1", "--graders", "ann")
    assert result.exit_code == 0, result.output
    result = invoke(runner, db, "tasks", "delete", "audit1")
    assert result.exit_code == 0, result.output
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM audit_samples")).scalar_one() == 0
