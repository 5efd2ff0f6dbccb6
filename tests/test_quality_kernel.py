"""The quality kernel against its peers: kappa and the confusion matrix against scikit-learn, tau-b
against scipy, the gold statistics against a plain per-grader loop; and the gold gaps' rules."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion

from ndcg_labeling.quality import (
    TRUSTED,
    UNDECIDED,
    UNTRUSTED,
    confusion_matrix,
    gold_gaps,
    gold_quality,
    kendall_tau_b,
    rank_positions,
    weighted_kappa,
)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weights", ["quadratic", "linear"])
def test_weighted_kappa_and_confusion_equal_sklearn(seed, weights):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    top = int(rng.choice([3, 4]))
    a = rng.integers(0, top + 1, n)
    b = np.clip(a + rng.integers(-2, 3, n), 0, top) if seed % 2 else rng.integers(0, top + 1, n)
    values = list(range(top + 1))
    assert weighted_kappa(a, b, values, weights=weights) == pytest.approx(
        cohen_kappa_score(a, b, labels=values, weights=weights), abs=1e-12)
    np.testing.assert_array_equal(confusion_matrix(a, b, values), sk_confusion(a, b, labels=values))


def test_unweighted_kappa_equals_sklearn_and_undefined_kappa_is_nan():
    a, b = [0, 1, 2, 2, 3, 1], [0, 2, 2, 2, 3, 0]
    assert weighted_kappa(a, b, range(4), weights="none") == pytest.approx(cohen_kappa_score(a, b, labels=range(4)))
    assert np.isnan(weighted_kappa([2, 2, 2], [2, 2, 2], range(4)))
    assert np.isnan(weighted_kappa([], [], range(4)))


def test_kappa_refuses_grades_outside_the_categories():
    with pytest.raises(ValueError, match="weighted_kappa|confusion_matrix"):
        weighted_kappa([0, 5], [0, 1], range(4))


@pytest.mark.parametrize("seed", range(8))
def test_kendall_tau_b_equals_scipy_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 25))
    x = rng.integers(0, 5, n).astype(float) if seed % 2 else rng.normal(size=n)
    y = x + rng.normal(0, 1, n) if seed % 3 else rng.integers(0, 3, n).astype(float)
    expected = kendalltau(x, y).statistic
    got = kendall_tau_b(x, y)
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_kendall_tau_b_edge_cases():
    assert np.isnan(kendall_tau_b([1.0], [2.0]))
    assert np.isnan(kendall_tau_b([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="kendall_tau_b"):
        kendall_tau_b([1.0, np.nan], [1.0, 2.0])


def test_rank_positions_best_first_ties_share_the_best_rank():
    np.testing.assert_array_equal(rank_positions([0.5, 0.7, 0.5, 0.1]), [2, 1, 2, 4])


def _loop_quality(grader, answer, expected, n_graders, min_accuracy, min_gold, max_drop):
    """The definitions, one grader at a time, in plain Python."""
    out = []
    for g in range(n_graders):
        a = [x for gg, x in zip(grader, answer, strict=True) if gg == g]
        e = [x for gg, x in zip(grader, expected, strict=True) if gg == g]
        n = len(a)
        err = [x - y for x, y in zip(a, e, strict=True)]
        acc = sum(v == 0 for v in err) / n if n else float("nan")
        half = n // 2
        first = sum(v == 0 for v in err[:half]) / half if half else float("nan")
        second = sum(v == 0 for v in err[n - half:]) / half if half else float("nan")
        trusted = UNDECIDED if n < min_gold else (TRUSTED if acc >= min_accuracy else UNTRUSTED)
        out.append({"n": n, "acc": acc, "within": sum(abs(v) <= 1 for v in err) / n if n else float("nan"),
                    "mae": sum(abs(v) for v in err) / n if n else float("nan"),
                    "bias": sum(err) / n if n else float("nan"), "trusted": trusted, "first": first,
                    "second": second, "flag": bool(half and (second - first) < -max_drop)})
    return out


@pytest.mark.parametrize("seed", range(5))
def test_gold_quality_matches_the_definitions(seed):
    rng = np.random.default_rng(seed)
    n_graders = 5
    n = int(rng.integers(0, 80))
    grader = rng.integers(0, n_graders, n)
    expected = rng.integers(0, 4, n)
    answer = np.where(rng.random(n) < 0.6, expected, rng.integers(0, 4, n))
    q = gold_quality(grader, answer, expected, n_graders, min_accuracy=0.7, min_gold=5, max_drop=0.2)
    for g, ref in enumerate(_loop_quality(grader.tolist(), answer.tolist(), expected.tolist(), n_graders, 0.7, 5, 0.2)):
        assert q.n_gold[g] == ref["n"]
        for name, key in (("accuracy", "acc"), ("within_one", "within"), ("mae", "mae"), ("bias", "bias"),
                          ("accuracy_first", "first"), ("accuracy_second", "second")):
            np.testing.assert_allclose(getattr(q, name)[g], ref[key], equal_nan=True)
        assert q.trusted[g] == ref["trusted"]
        assert bool(q.drift_flagged[g]) == ref["flag"]


def test_gold_quality_flags_a_drop_and_rejects_bad_arguments():
    # grader 0: 6 right then 6 wrong -> drift -1, flagged; grader 1: 3 answers, undecided
    grader = [0] * 12 + [1] * 3
    expected = [2] * 15
    answer = [2] * 6 + [0] * 6 + [2, 2, 2]
    q = gold_quality(grader, answer, expected, 2)
    assert q.drift[0] == -1.0 and q.drift_flagged[0] and q.trusted[0] == UNTRUSTED
    assert q.trusted[1] == UNDECIDED and q.accuracy[1] == 1.0
    with pytest.raises(ValueError, match="gold_quality: min_accuracy"):
        gold_quality(grader, answer, expected, 2, min_accuracy=1.5)
    with pytest.raises(ValueError, match="gold_quality: grader codes"):
        gold_quality([3], [1], [1], 2)


@pytest.mark.parametrize("seed", range(10))
def test_gold_gaps_never_touch_and_follow_the_query_blocks(seed):
    rng = np.random.default_rng(seed)
    blocks = rng.integers(1, 6, size=int(rng.integers(1, 12)))
    item_query = np.repeat(np.arange(blocks.size), blocks)  # the grader's items, query by query
    n = item_query.size
    n_gold = int(rng.integers(0, n + 2))
    gold_query = np.where(rng.random(n_gold) < 0.5, rng.integers(0, blocks.size, n_gold), 1000 + np.arange(n_gold))
    gaps = gold_gaps(item_query, gold_query, rng)
    assert len(set(gaps.tolist())) == n_gold  # one gold item per gap: never two in a row
    assert gaps.min(initial=0) >= 0 and gaps.max(initial=0) <= n
    edges = {0, n} | {i for i in range(1, n) if item_query[i] != item_query[i - 1]}
    for k, (gap, q) in enumerate(zip(gaps.tolist(), gold_query.tolist(), strict=True)):
        taken = set(gaps[:k].tolist())
        if q < 1000:
            allowed = {i for i in range(n + 1) if (i < n and item_query[i] == q) or (i > 0 and item_query[i - 1] == q)}
        else:
            allowed = edges
        if allowed - taken:  # a free gap of the right kind was left: it took one
            assert gap in allowed, (k, gap, q)


def test_gold_gaps_refuses_more_gold_than_gaps():
    with pytest.raises(ValueError, match="gold_gaps"):
        gold_gaps([1, 1], [5, 6, 7, 8], np.random.default_rng(0))
