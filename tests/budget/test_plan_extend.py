"""``plan --budget N --batch B`` against what extending B to N judgments gives: the planned half-widths set
against 1.96 x the standard deviation of infNDCG@10 over many simulated designs of that batch.

A batch keeps the strata of its first round (``tasks extend`` draws in ``batch.strata_edges``); a small first
round gets one stratum per query. The plan used to draw each budget in the strata a new batch of that size
would get (finer, with the top ranks nearly all judged at half the pool), and so promised intervals 3 to 5
times narrower than the extended batch gives (docs/budget.md "Planning a budget")."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from dl_world import real_world
from sqlalchemy import select

from ndcg_labeling.budget.estimators import difference_halfwidth, inferred_ndcg, system_means
from ndcg_labeling.budget.plan import expected_halfwidths
from ndcg_labeling.budget.pool import Pool
from ndcg_labeling.budget.strategies import design_edges, inclusion_probabilities, select_next, stratum_ids
from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.demo.quality import read_truth
from ndcg_labeling.demo.run import DATA_DIR
from ndcg_labeling.labels.tasks.budgeted import batch_pool
from tests.conftest import invoke


@dataclass(frozen=True)
class Extended:
    """Over many simulated batches: 1.96 x the standard deviation of each system's mean infNDCG@10
    (``spread``) and of its difference from system 0 (``spread_diff``), and the mean of the half-widths
    ``report --estimator inferred`` prints for them (``reported``, ``reported_diff``)."""

    spread: np.ndarray
    spread_diff: np.ndarray
    reported: np.ndarray
    reported_diff: np.ndarray


def extended(pool: Pool, oracle: np.ndarray, first: int, budget: int, designs: int, seed: int) -> Extended:
    """``designs`` batches whose first round of ``first`` pairs is graded and then extended to ``budget``
    pairs as ``tasks extend`` does it (the first round's strata, ``select_next`` seeing the grades), graded
    from ``oracle``."""
    edges = design_edges(pool, first)
    strata = stratum_ids(pool, edges)
    estimates, half, half_diff = [], [], []
    for d in range(designs):
        rng = np.random.default_rng([seed, d])
        grades = np.full(pool.n_pairs, np.nan)
        for n in (first, budget - first):
            picks = select_next(pool, "sample", n, grades, rng=rng, edges=edges)
            grades[picks] = oracle[picks]
        est = inferred_ndcg(pool, grades, inclusion_probabilities(strata, ~np.isnan(grades)), strata)
        means, hw = system_means(est)
        estimates.append(means)
        half.append(hw)
        half_diff.append([difference_halfwidth(est, s, 0) for s in range(1, pool.n_systems)])
    e = np.array(estimates)
    return Extended(spread=1.96 * e.std(axis=0, ddof=1), spread_diff=1.96 * (e[:, 1:] - e[:, :1]).std(axis=0, ddof=1),
                    reported=np.mean(half, axis=0), reported_diff=np.mean(half_diff, axis=0))


def test_planned_widths_of_an_extended_batch_match_its_spread():
    """DL19's six real runs, every grade known: a first round of two pairs per query (one stratum per
    query) extended to half the pool. The widths planned in the batch's strata are 0.91-0.97 times 1.96
    standard deviations of the estimates over 120 such batches (differences 0.97-1.06) and 1.00-1.01 times
    the mean of the half-widths the report gives them (differences 0.99-1.01); planned as a new batch of
    that size would be, 0.33-0.38 times the spread."""
    w = real_world("dl19")
    first, budget = 2 * w.pool.n_queries, w.pool.n_pairs // 2
    edges = design_edges(w.pool, first)
    assert edges == (1,) and design_edges(w.pool, budget) != edges
    ext = extended(w.pool, w.oracle, first, budget, designs=120, seed=7)
    planned, planned_diff = expected_halfwidths(w.pool, [budget], w.oracle, repeats=10, edges=edges)
    ratio, ratio_diff = planned[0] / ext.spread, planned_diff[0, 1:] / ext.spread_diff
    assert 0.8 <= ratio.min() and ratio.max() <= 1.2, ratio
    assert 0.8 <= ratio_diff.min() and ratio_diff.max() <= 1.2, ratio_diff
    assert np.all(np.abs(planned[0] / ext.reported - 1) <= 0.05), planned[0] / ext.reported
    assert np.all(np.abs(planned_diff[0, 1:] / ext.reported_diff - 1) <= 0.05), planned_diff[0, 1:] / ext.reported_diff
    # the design matters here: the strata a new batch of this size would get promise far narrower intervals
    fresh, _ = expected_halfwidths(w.pool, [budget], w.oracle, repeats=10)
    assert (fresh[0] / ext.spread).max() < 0.6


def grade_from_truth(db, name: str, truth: dict[tuple[str, str], int]) -> None:
    """Every open assignment of the batch graded with the true relevance of the demo set (0 where none)."""
    with session_scope(db.engine) as session:
        rows = session.execute(select(m.Assignment.id, m.Assignment.grader_id, m.BatchItem.query_id,
                                      m.BatchItem.document_id, m.Query.external_id, m.Document.external_id)
                               .join(m.BatchItem, m.BatchItem.id == m.Assignment.item_id)
                               .join(m.Query, m.Query.id == m.BatchItem.query_id)
                               .join(m.Document, m.Document.id == m.BatchItem.document_id)
                               .join(m.GradingBatch, m.GradingBatch.id == m.Assignment.batch_id)
                               .where(m.GradingBatch.name == name, m.Assignment.status == "open")).all()
        for aid, grader, qid, did, q_ext, d_ext in rows:
            session.add(m.Judgment(grader_id=grader, query_id=qid, document_id=did, scale="0-3", batch=name,
                                   grade=truth.get((q_ext, d_ext), 0)))
            session.get(m.Assignment, aid).status = "done"


def test_plan_batch_gives_the_widths_of_extending_it(runner, sqlite_db):
    """Through the CLI on the demo set (40 queries, 3 runs, 771 pairs pooled to depth 20, graded from
    data/truth.csv): a sampled batch of 80 pairs (one stratum per query), graded; ``plan --budget 480
    --batch`` against 120 simulated extensions of it to 480 pairs with the true grades.

    Measured: the planned half-widths are 1.09-1.11 times the mean of those the report gives (differences
    1.40-1.49) and 0.66-0.79 times 1.96 standard deviations of the estimates (differences 0.72-0.80). The
    plan completes the 691 ungraded pairs from the 80 grades of the first round, drawn by rank band across
    queries: a prior, pessimistic here for the differences; from the true grades it gives 1.00-1.02 of the
    reported widths (differences 1.00-1.01). Before the plan drew in the batch's strata: 0.16-0.21 of the
    reported widths (differences 0.33-0.47), the ±0.01 it printed where ``report --estimator inferred`` gave ±0.05."""
    db = sqlite_db
    for what in ("queries", "documents", "graders"):
        assert invoke(runner, db, "import", what, str(DATA_DIR / f"{what}.csv")).exit_code == 0
    for system in ("bm25", "dense", "hybrid"):
        imported = invoke(runner, db, "import", "run", str(DATA_DIR / "runs" / f"{system}.run"), "--system", system)
        assert imported.exit_code == 0, imported.output
    truth = read_truth(DATA_DIR)
    args = ["--scale", "0-3", "--depth", "20", "--overlap", "1", "--graders", "ana,ben,chloe,dev,emma"]
    created = invoke(runner, db, "tasks", "create", "b", *args, "--seed", "4", "--strategy", "sample", "--budget", "80")
    assert "strategy sample: 80 of 771 pooled pairs" in created.stdout, created.output
    grade_from_truth(db, "b", truth)
    with session_scope(db.engine) as session:
        batch = session.execute(select(m.GradingBatch).where(m.GradingBatch.name == "b")).scalar_one()
        assert batch.strata_edges == [1]
        _, queries, pool = batch_pool(batch, session=session)
        q_ext = dict(session.execute(select(m.Query.id, m.Query.external_id)).all())
        d_ext = dict(session.execute(select(m.Document.id, m.Document.external_id)).all())
    oracle = np.array([truth.get((q_ext[queries[int(q)]], d_ext[int(c)]), 0)
                       for q, c in zip(pool.query, pool.code, strict=True)], dtype=np.float64)
    result = invoke(runner, db, "plan", "--budget", "480", "--batch", "b", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["system"], r["budget"], r["pool_pairs"]) for r in rows] == [
        ("bm25", 480, 771), ("dense", 480, 771), ("hybrid", 480, 771)]
    ext = extended(pool, oracle, 80, 480, designs=120, seed=11)
    planned = np.array([r["halfwidth"] for r in rows])
    planned_diff = np.array([r["diff_halfwidth"] for r in rows[1:]])
    # what the report will print: the plan's promise
    ratio, ratio_diff = planned / ext.reported, planned_diff / ext.reported_diff
    assert 0.8 <= ratio.min() and ratio.max() <= 1.25, ratio
    assert 0.8 <= ratio_diff.min() and ratio_diff.max() <= 1.6, ratio_diff
    # against the spread of the estimates: with the jackknife variance (issue 48) the differences' plan from
    # 80 first-round grades is pessimistic, 1.17-1.29 times the spread (it was 0.72-0.80 with the
    # linearised variance, which fell short at 12 pairs a query); the bound, loosened to 1.35 for that, is
    # back at 1.25 with the second pass's intervals (floor where a run shows nothing, bias allowance)
    ratio, ratio_diff = planned / ext.spread, planned_diff / ext.spread_diff
    assert 0.6 <= ratio.min() and ratio.max() <= 1.25, ratio
    assert 0.6 <= ratio_diff.min() and ratio_diff.max() <= 1.25, ratio_diff
    # the same plan from the true grades: the report's widths
    exact, exact_diff = expected_halfwidths(pool, [480], oracle, edges=(1,))
    ratio, ratio_diff = exact[0] / ext.reported, exact_diff[0, 1:] / ext.reported_diff
    assert np.all(np.abs(ratio - 1) <= 0.05) and np.all(np.abs(ratio_diff - 1) <= 0.05), (ratio, ratio_diff)
