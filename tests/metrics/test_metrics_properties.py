"""Properties that must hold for every input (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ndcg_labeling.metrics import batch_ndcg, compute_metrics


def _lists(min_len: int) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """Three queries of equal length: scores (with ties) and labels (graded, fractional, unjudged)."""
    return st.integers(min_len, 12).flatmap(
        lambda m: st.tuples(
            arrays(np.float64, (3, m), elements=st.sampled_from([0.0, 1.0, 2.5, -3.0]) | st.floats(-1e3, 1e3)),
            arrays(np.float64, (3, m), elements=st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5, np.nan])),
        )
    )


labels_st = _lists(1)
SETTINGS = settings(max_examples=100, deadline=None)


@SETTINGS
@given(labels_st, st.sampled_from(["exponential", "linear"]), st.sampled_from([1, 3, 10, None]),
       st.sampled_from(["ordered", "average"]))
def test_ndcg_is_between_zero_and_one(data, gain, k, ties):
    scores, labels = data
    values = batch_ndcg(scores, labels, k, gain=gain, ties=ties)
    assert np.all((values >= 0.0) & (values <= 1.0 + 1e-12))


@SETTINGS
@given(_lists(2), st.data())
def test_moving_a_more_relevant_document_up_never_lowers_ndcg(data, draw):
    _, labels = data
    m = labels.shape[1]
    ranked = np.tile(-np.arange(m, dtype=float), (1, 1))  # column j is at rank j + 1
    labels = labels[:1]
    a, b = sorted(draw.draw(st.lists(st.integers(0, m - 1), min_size=2, max_size=2, unique=True)))
    if not np.nan_to_num(labels[0, b]) > np.nan_to_num(labels[0, a]):
        return
    swapped = labels.copy()  # the more relevant document (rank b + 1) trades places with rank a + 1
    swapped[0, a], swapped[0, b] = labels[0, b], labels[0, a]
    for gain in ("exponential", "linear"):
        for k in (1, 2, 5, None):
            before = batch_ndcg(ranked, labels, k, gain=gain)[0]
            after = batch_ndcg(ranked, swapped, k, gain=gain)[0]
            assert after >= before - 1e-12


@SETTINGS
@given(labels_st, st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_padding_columns_change_nothing(data, n_pad, seed):
    scores, labels = data
    rng = np.random.default_rng(seed)
    m = scores.shape[1]
    cols = np.sort(rng.choice(m + n_pad, size=m, replace=False))
    padded_s = np.full((3, m + n_pad), np.nan)
    padded_l = np.where(rng.random((3, m + n_pad)) < 0.5, 3.0, np.nan)  # labels under padding are ignored
    padded_s[:, cols] = scores
    padded_l[:, cols] = labels
    names = ["ndcg@3", "ndcg", "map", "mrr@5", "p@2", "recall@4", "judged@3"]
    plain = compute_metrics(names, scores, labels)
    padded = compute_metrics(names, padded_s, padded_l)
    for name in names:
        np.testing.assert_allclose(padded[name], plain[name], atol=1e-12, err_msg=name)
    np.testing.assert_allclose(batch_ndcg(padded_s, padded_l, 3, ties="average"),
                               batch_ndcg(scores, labels, 3, ties="average"), atol=1e-12)
