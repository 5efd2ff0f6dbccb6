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
    for _, stratum, size, inclusion in drawn:
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
