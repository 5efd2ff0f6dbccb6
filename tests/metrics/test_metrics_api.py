"""Hand-checked values, edge cases, validation messages and the package's import purity."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from ndcg_labeling.metrics import (
    Metric,
    _kernels,
    batch_average_precision,
    batch_dcg,
    batch_mrr,
    batch_ndcg,
    batch_precision,
    batch_recall,
    compute_metrics,
    judged_at_k,
    parse_metric,
    weighted_ndcg,
)

RANKED = np.array([[5.0, 4.0, 3.0, 2.0, 1.0]])  # scores that keep the given order


def test_hand_checked_values():
    labels = np.array([[3, 0, 2, 3, 1]])
    # exponential: DCG = 7 + 0 + 3/2 + 7/log2(5) + 1/log2(6); ideal 3,3,2,1,0.
    dcg = 7 + 3 / 2 + 7 / math.log2(5) + 1 / math.log2(6)
    idcg = 7 + 7 / math.log2(3) + 3 / 2 + 1 / math.log2(5)
    assert dcg / idcg == pytest.approx(0.89169, abs=5e-6)
    assert batch_ndcg(RANKED, labels, 5)[0] == pytest.approx(0.89169, abs=5e-6)
    assert batch_ndcg(RANKED, labels, 5, gain="linear")[0] == pytest.approx(0.89806, abs=5e-6)
    assert batch_dcg(RANKED, labels, 5)[0] == pytest.approx(dcg, abs=1e-12)
    # Mixing gains (exponential DCG over linear ideal) is the popular article's 0.425 mistake.
    assert batch_ndcg(RANKED, labels, 5)[0] != pytest.approx(0.425, abs=0.01)


def test_perfect_reversed_and_empty_rows():
    assert batch_ndcg(RANKED, np.array([[3, 2, 1, 0, 0]]), 5)[0] == 1.0
    worst = batch_ndcg(RANKED[:, :4], np.array([[0, 1, 2, 3]]), None)[0]
    assert 0.0 < worst < 1.0
    zeros = np.zeros((1, 5))
    assert batch_ndcg(RANKED, zeros, 5)[0] == 0.0
    assert math.isnan(batch_ndcg(RANKED, zeros, 5, empty="nan")[0])
    assert math.isnan(batch_average_precision(RANKED, zeros, empty="nan")[0])
    assert batch_recall(RANKED, zeros, 5)[0] == 0.0


def test_integer_fractional_and_nan_labels():
    ints = batch_ndcg(RANKED.astype(int), np.array([[1, 0, 2, 0, 0]]), 3, gain="linear")
    floats = batch_ndcg(RANKED, np.array([[1.0, 0.0, 2.0, 0.0, 0.0]]), 3, gain="linear")
    assert ints[0] == floats[0] and 0 < ints[0] < 1
    frac = batch_ndcg(RANKED, np.array([[0.5, 2.5, 0.0, 0.0, 0.0]]), 5)
    assert frac[0] == pytest.approx((2**0.5 - 1 + (2**2.5 - 1) / math.log2(3)) / ((2**2.5 - 1) + (2**0.5 - 1) / math.log2(3)))
    # NaN label = unjudged = gain 0 (and not in the ideal).
    with_nan = batch_ndcg(RANKED, np.array([[np.nan, 1.0, 0.0, 0.0, 0.0]]), 5, gain="linear")
    assert with_nan[0] == pytest.approx(1 / math.log2(3))


def test_padding_and_ties_ordered():
    scores = np.array([[np.nan, 2.0, np.nan, 1.0]])
    labels = np.array([[3.0, 0.0, 3.0, 1.0]])  # labels under padding are ignored
    assert batch_ndcg(scores, labels, 2, gain="linear")[0] == pytest.approx(1 / math.log2(3))
    # Equal scores keep column order.
    tied = np.array([[1.0, 1.0, 1.0]])
    assert batch_mrr(tied, np.array([[0, 0, 1]]), 3)[0] == pytest.approx(1 / 3)
    assert batch_mrr(tied, np.array([[0, 1, 0]]), 3)[0] == pytest.approx(1 / 2)


def test_companion_edge_cases():
    labels = np.array([[0, 1, 0, 2]])
    scores = RANKED[:, :4]
    assert batch_precision(scores, labels, 10)[0] == pytest.approx(2 / 10)  # divides by k, as trec_eval
    assert batch_precision(scores, labels, None)[0] == pytest.approx(2 / 4)
    assert batch_mrr(scores, labels, 1)[0] == 0.0
    assert batch_mrr(scores, labels, 2)[0] == 0.5
    assert batch_average_precision(scores, labels)[0] == pytest.approx((1 / 2 + 2 / 4) / 2)
    # AP and recall divide by every relevant judged document, retrieved or not.
    ideal = np.array([[0, 1, 0, 2, 3, np.nan]])
    assert batch_average_precision(scores, labels, ideal_labels=ideal)[0] == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert batch_recall(scores, labels, 2, ideal_labels=ideal)[0] == pytest.approx(1 / 3)
    assert batch_precision(scores, labels, 4, relevant_threshold=2)[0] == pytest.approx(1 / 4)
    judged = judged_at_k(np.array([[3.0, 2.0, 1.0, np.nan]]), np.array([[1.0, np.nan, 0.0, 5.0]]), [2, 10])
    np.testing.assert_allclose(judged, [[0.5, 2 / 3]])
    assert math.isnan(judged_at_k(np.full((1, 2), np.nan), np.zeros((1, 2)), 5, empty="nan")[0])


def test_k_shapes_and_one_sort_for_many_cutoffs():
    rng = np.random.default_rng(3)
    scores, labels = rng.random((50, 20)), rng.integers(0, 4, (50, 20))
    many = batch_ndcg(scores, labels, [1, 5, 10])
    assert many.shape == (50, 3)
    for j, k in enumerate([1, 5, 10]):
        np.testing.assert_array_equal(many[:, j], batch_ndcg(scores, labels, k))
    assert batch_ndcg(scores, labels, 10).shape == (50,)
    assert batch_ndcg(scores[0], labels[0], 10).shape == (1,)  # 1-D is one query
    np.testing.assert_array_equal(batch_ndcg(scores, labels, 100), batch_ndcg(scores, labels, None))


def test_inputs_are_not_modified():
    rng = np.random.default_rng(4)
    scores, labels = rng.random((20, 8)), rng.integers(0, 3, (20, 8)).astype(float)
    scores[0, 3] = np.nan
    labels[1, 2] = np.nan
    ideal = np.concatenate([labels, np.ones((20, 2))], axis=1)
    copies = scores.copy(), labels.copy(), ideal.copy()
    batch_ndcg(scores, labels, 5, ideal_labels=ideal, ties="average")
    compute_metrics(["ndcg@3", "map", "judged@5"], scores, labels, ideal_labels=ideal)
    for before, after in zip(copies, (scores, labels, ideal), strict=True):
        np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: batch_ndcg(RANKED, [[1, -1, 0, 0, 0]]), "batch_ndcg: labels must be non-negative, got -1 at row 0, column 1"),
        (lambda: batch_ndcg(RANKED, [[1, np.inf, 0, 0, 0]]), "batch_ndcg: labels must be finite, got inf at row 0, column 1"),
        (lambda: batch_ndcg(RANKED, [[1, 0]]), "batch_ndcg: scores and labels must have the same shape, got scores (1, 5) and labels (1, 2)"),
        (lambda: batch_ndcg(RANKED, RANKED, 0), "batch_ndcg: k must be >= 1, got 0"),
        (lambda: batch_ndcg(RANKED, RANKED, [5, -1]), "batch_ndcg: k must be >= 1, got -1"),
        (lambda: batch_ndcg(RANKED, RANKED, gain="log"), "batch_ndcg: gain must be one of 'exponential', 'linear', got 'log'"),
        (lambda: batch_ndcg(RANKED, RANKED, ties="random"), "batch_ndcg: ties must be one of 'ordered', 'average', got 'random'"),
        (lambda: batch_ndcg(RANKED, RANKED, empty="one"), "batch_ndcg: empty must be one of 'zero', 'nan', got 'one'"),
        (lambda: batch_ndcg(RANKED, RANKED, ideal_labels=[[1, -2]]), "batch_ndcg: ideal_labels must be non-negative, got -2 at row 0, column 1"),
        (lambda: batch_ndcg(RANKED, RANKED, ideal_labels=np.ones((2, 3))), "batch_ndcg: ideal_labels must have one row per query, got scores (1, 5) and ideal_labels (2, 3)"),
        (lambda: batch_mrr(RANKED, RANKED, 0), "batch_mrr: k must be >= 1, got 0"),
        (lambda: batch_ndcg(RANKED, [[1, 0, 0, 0, -1]], ties="average"), "batch_ndcg: labels must be non-negative, got -1 at row 0, column 4"),
    ],
)
def test_validation_messages(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_registry():
    m = parse_metric("NDCG@10")
    assert isinstance(m, Metric) and (m.name, m.k) == ("ndcg@10", 10)
    assert parse_metric("map").k is None
    assert parse_metric("P@5").name == "p@5"
    assert parse_metric("recip_rank").name == "mrr"
    rng = np.random.default_rng(5)
    scores, labels = rng.random((30, 15)), rng.integers(0, 4, (30, 15))
    np.testing.assert_array_equal(m(scores, labels, gain="linear"), batch_ndcg(scores, labels, 10, gain="linear"))
    np.testing.assert_array_equal(parse_metric("recall@20")(scores, labels), batch_recall(scores, labels, 20))
    np.testing.assert_array_equal(parse_metric("judged@10")(scores, labels), judged_at_k(scores, labels, 10))
    got = compute_metrics(["mrr@10", "p@5", "map@100"], scores, labels, relevant_threshold=2)
    assert list(got) == ["mrr@10", "p@5", "map@100"]
    np.testing.assert_array_equal(got["p@5"], batch_precision(scores, labels, 5, relevant_threshold=2))
    with pytest.raises(ValueError, match=r"unknown metric 'ndcg10'; known metrics: dcg, judged, map, mrr, ndcg, p, recall"):
        parse_metric("ndcg10")
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        parse_metric("ndcg@0")


def test_weighted_ndcg():
    rng = np.random.default_rng(6)
    scores = rng.random((40, 10))
    rel, fresh = rng.integers(0, 4, (40, 10)), rng.integers(0, 2, (40, 10))
    got = weighted_ndcg(scores, {"relevance": rel, "freshness": fresh}, weights={"relevance": 0.7, "freshness": 0.3}, k=5)
    want = 0.7 * batch_ndcg(scores, rel, 5) + 0.3 * batch_ndcg(scores, fresh, 5)
    np.testing.assert_allclose(got, want, atol=1e-15)
    with pytest.raises(ValueError, match="weights must name exactly the objectives"):
        weighted_ndcg(scores, {"relevance": rel}, weights={"fresh": 1.0})


def test_numpy_fallback_gives_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 6, (300, 40)).astype(float)  # ties: order must be stable in both
    scores[rng.random(scores.shape) < 0.2] = np.nan
    scores[0, :3] = -np.inf
    labels = rng.integers(0, 4, (300, 40)).astype(float)
    names = ["ndcg@5", "ndcg@10", "ndcg", "map", "mrr@10", "p@10", "recall@100", "judged@10"]
    compiled = compute_metrics(names, scores, labels)
    monkeypatch.setattr(_kernels, "_compile", lambda: None)  # numba not there: the NumPy reference
    fallback = compute_metrics(names, scores, labels)
    for name in names:
        np.testing.assert_allclose(compiled[name], fallback[name], atol=1e-12, err_msg=name)


def test_import_loads_neither_pandas_nor_sqlalchemy_nor_numba():
    code = (
        "import sys, ndcg_labeling.metrics as m\n"
        "bad = [x for x in ('pandas', 'sqlalchemy', 'numba', 'torch') if x in sys.modules]\n"
        "print(','.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"loaded at import: {proc.stdout.strip()} {proc.stderr}"
