"""Derived labels rank systems as the true labels do (Kendall tau >= 0.8, scipy), and the
implicit-feedback NDCG point: with 0/1 labels the product's NDCG equals trec_eval's (pytrec_eval) on
binary qrels, i.e. the ideal DCG is the sum of the first R discounts (R relevant documents)."""

from __future__ import annotations

import numpy as np
import pytest
from behavior_sim import N_DOCS, N_QUERIES, simulate_pbm
from scipy.stats import kendalltau

from ndcg_labeling.behavior.click_models import pbm
from ndcg_labeling.behavior.counts import cells_from_impressions
from ndcg_labeling.behavior.grades import DEFAULT_THRESHOLDS, map_scores
from ndcg_labeling.metrics import batch_ndcg

QUALITY = (0.2, 0.6, 1.0, 1.6, 2.5)  # how strongly each simulated system's score follows the true grade


def system_scores(truth: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """``(queries, 10)`` scores of 5 systems over each query's 10 documents: quality * grade + N(0, 1)."""
    grades = truth.reshape(N_QUERIES, N_DOCS).astype(float)
    return [q * grades + rng.normal(0.0, 1.0, grades.shape) for q in QUALITY]


def test_five_systems_rank_alike_under_derived_and_true_labels():
    log = simulate_pbm(1_000_000, seed=8)
    derived = map_scores(pbm(cells_from_impressions(log.pair, log.position, log.clicked)).score,
                         DEFAULT_THRESHOLDS["pbm"]["0-3"])
    systems = system_scores(log.truth, np.random.default_rng(4))
    true_labels = log.truth.reshape(N_QUERIES, N_DOCS).astype(float)
    ours = derived.reshape(N_QUERIES, N_DOCS).astype(float)
    under_truth = [float(np.mean(batch_ndcg(s, true_labels, 10))) for s in systems]
    under_derived = [float(np.mean(batch_ndcg(s, ours, 10))) for s in systems]
    assert np.argsort(under_truth).tolist() == [0, 1, 2, 3, 4]  # the simulation's order, for the record
    tau = kendalltau(under_truth, under_derived).statistic
    assert tau >= 0.8


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_ndcg_equals_trec_eval_on_binary_qrels(seed):
    import pytrec_eval

    rng = np.random.default_rng(seed)
    n_q, n_d = 30, 25
    labels = (rng.random((n_q, n_d)) < 0.3).astype(float)  # 0/1 implicit feedback (clicked or not)
    labels[0] = 0.0  # a query without any relevant document
    scores = rng.normal(size=(n_q, n_d))
    qrels = {f"q{i}": {f"d{j}": int(labels[i, j]) for j in range(n_d)} for i in range(n_q)}
    run = {f"q{i}": {f"d{j}": float(scores[i, j]) for j in range(n_d)} for i in range(n_q)}
    peer = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    for gain in ("linear", "exponential"):  # 2**1 - 1 == 1: both gains agree on binary labels
        ours = batch_ndcg(scores, labels, 10, gain=gain, empty="zero")
        np.testing.assert_allclose(ours, [peer[f"q{i}"]["ndcg_cut_10"] for i in range(n_q)], rtol=0, atol=1e-12)
    # the ideal DCG of R relevant documents is the sum of the first R discounts
    r = labels[1].sum()
    order = np.argsort(-scores[1], kind="stable")[:10]
    dcg = sum(labels[1, j] / np.log2(i + 2) for i, j in enumerate(order))
    ideal = sum(1 / np.log2(i + 2) for i in range(int(min(r, 10))))
    assert ours[1] == pytest.approx(dcg / ideal, abs=1e-12)
