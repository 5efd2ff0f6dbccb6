"""The kernels against real peers: pytrec_eval (trec_eval), scikit-learn and ranx - never against
numbers copied from our own output."""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeling.metrics import (
    batch_average_precision,
    batch_mrr,
    batch_ndcg,
    batch_precision,
    batch_recall,
    compute_metrics,
    numba_available,
)

pytrec_eval = pytest.importorskip("pytrec_eval")


def _trec(data, measures):
    evaluator = pytrec_eval.RelevanceEvaluator(data.qrels, measures)
    result = evaluator.evaluate(data.run)
    qids = [f"q{i}" for i in range(data.scores.shape[0])]
    return {m: np.array([result[q][m] for q in qids]) for m in next(iter(result.values()))}


def test_ndcg_matches_pytrec_eval_per_query(ragged):
    ref = _trec(ragged, {"ndcg_cut.5,10,20", "ndcg"})
    ours = batch_ndcg(ragged.scores, ragged.labels, [5, 10, 20], gain="linear", ideal_labels=ragged.ideal)
    assert ours.shape == (2000, 3)
    for j, k in enumerate([5, 10, 20]):
        np.testing.assert_allclose(ours[:, j], ref[f"ndcg_cut_{k}"], rtol=0, atol=1e-9)
    full = batch_ndcg(ragged.scores, ragged.labels, None, gain="linear", ideal_labels=ragged.ideal)
    np.testing.assert_allclose(full, ref["ndcg"], rtol=0, atol=1e-9)
    # The judged-but-unretrieved documents matter: without them the numbers differ.
    own_ideal = batch_ndcg(ragged.scores, ragged.labels, 10, gain="linear")
    assert np.abs(own_ideal - ref["ndcg_cut_10"]).max() > 0.01


def test_companions_match_pytrec_eval_per_query(ragged):
    ref = _trec(ragged, {"map", "map_cut.10", "P.5,10,50", "recip_rank", "recall.5,20"})
    kw = {"ideal_labels": ragged.ideal}
    np.testing.assert_allclose(batch_average_precision(ragged.scores, ragged.labels, None, **kw), ref["map"], atol=1e-9)
    np.testing.assert_allclose(batch_average_precision(ragged.scores, ragged.labels, 10, **kw), ref["map_cut_10"], atol=1e-9)
    p = batch_precision(ragged.scores, ragged.labels, [5, 10, 50], **kw)
    for j, k in enumerate([5, 10, 50]):  # 50 > list width 30: P divides by k anyway
        np.testing.assert_allclose(p[:, j], ref[f"P_{k}"], atol=1e-9)
    np.testing.assert_allclose(batch_mrr(ragged.scores, ragged.labels, None, **kw), ref["recip_rank"], atol=1e-9)
    r = batch_recall(ragged.scores, ragged.labels, [5, 20], **kw)
    np.testing.assert_allclose(r[:, 0], ref["recall_5"], atol=1e-9)
    np.testing.assert_allclose(r[:, 1], ref["recall_20"], atol=1e-9)
    # relevant_threshold is trec_eval's -l.
    ref2 = pytrec_eval.RelevanceEvaluator(ragged.qrels, {"map"}, relevance_level=3).evaluate(ragged.run)
    ours2 = batch_average_precision(ragged.scores, ragged.labels, None, relevant_threshold=3, **kw)
    np.testing.assert_allclose(ours2, [ref2[f"q{i}"]["map"] for i in range(2000)], atol=1e-9)


def test_compute_metrics_matches_individual_calls(ragged):
    got = compute_metrics(["ndcg@10", "map", "p@5", "mrr", "recall@20"], ragged.scores, ragged.labels,
                          ideal_labels=ragged.ideal, gain="linear")
    ref = _trec(ragged, {"ndcg_cut.10", "map", "P.5", "recip_rank", "recall.20"})
    for ours, theirs in [("ndcg@10", "ndcg_cut_10"), ("map", "map"), ("p@5", "P_5"), ("mrr", "recip_rank"),
                         ("recall@20", "recall_20")]:
        np.testing.assert_allclose(got[ours], ref[theirs], atol=1e-9)


def test_average_ties_match_sklearn_with_heavy_ties():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(1)
    n, m = 300, 12
    scores = rng.integers(0, 3, size=(n, m)).astype(float)  # 3 distinct scores over 12 documents
    labels = rng.integers(0, 4, size=(n, m)).astype(float)
    labels[:5] = 0.0  # all-irrelevant rows: sklearn gives 0
    for k in (3, 5, None):
        ours = batch_ndcg(scores, labels, k, gain="linear", ties="average")
        ref = np.array([sklearn_metrics.ndcg_score(labels[i : i + 1], scores[i : i + 1], k=k) for i in range(n)])
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    ordered = batch_ndcg(scores, labels, 5, gain="linear")
    averaged = batch_ndcg(scores, labels, 5, gain="linear", ties="average")
    assert np.abs(ordered - averaged).max() > 0.01


@pytest.mark.xdist_group("ranx")  # ranx compiles its numba code once per process: with the quality pipeline's ranx test
def test_ndcg_matches_ranx(ragged):
    numba_available()  # loads numba with the coverage<7 work-around before ranx imports it
    ranx = pytest.importorskip("ranx")
    n = 300
    qrels_dict = {q: {d: v for d, v in ragged.qrels[q].items() if v > 0} or {"none": 0}
                  for q in list(ragged.qrels)[:n]}
    run_dict = {q: ragged.run[q] for q in list(ragged.run)[:n]}
    qrels, run = ranx.Qrels(qrels_dict), ranx.Run(run_dict)
    # ranx orders queries by id, as strings.
    order = sorted(range(n), key=lambda i: f"q{i}")
    for metric, gain in [("ndcg@10", "linear"), ("ndcg_burges@10", "exponential")]:
        ref = np.asarray(ranx.evaluate(qrels, run, metric, return_mean=False, make_comparable=True))
        ours = batch_ndcg(ragged.scores[:n], ragged.labels[:n], 10, gain=gain, ideal_labels=ragged.ideal[:n])
        np.testing.assert_allclose(ours[order], ref, rtol=0, atol=1e-9)
