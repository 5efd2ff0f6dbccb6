"""torch tensors in, tensors out on the same device, same numbers as NumPy (CPU here)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ndcg_labeling import backend
from ndcg_labeling.metrics import (
    batch_average_precision,
    batch_dcg,
    batch_ndcg,
    compute_metrics,
    judged_at_k,
    weighted_ndcg,
)

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, params=["via-numpy", "torch-ops"])
def cpu_path(request):
    """Every test twice: CPU tensors through the compiled NumPy kernels (the default), and through
    torch's own operations (the path tensors on a GPU take)."""
    route = "kernels" if request.param == "via-numpy" else "torch"
    with backend.using(dataclasses.replace(backend.policy(), tensors=route)):
        yield request.param


def _data():
    rng = np.random.default_rng(8)
    scores = rng.integers(0, 8, (400, 25)).astype(float)  # ties: both sorts are stable
    scores[rng.random(scores.shape) < 0.05] = -np.inf  # real scores, ranked before the padding
    scores[rng.random(scores.shape) < 0.05] = np.inf
    scores[rng.random(scores.shape) < 0.15] = np.nan
    labels = rng.integers(0, 4, (400, 25)).astype(float)
    labels[rng.random(labels.shape) < 0.1] = np.nan
    ideal = np.concatenate([np.where(np.isnan(scores), np.nan, labels), rng.integers(0, 4, (400, 5))], axis=1)
    return scores, labels, ideal


@pytest.mark.parametrize(("dtype", "tol"), [("float64", 1e-12), ("float32", 1e-5)])
def test_torch_matches_numpy(dtype, tol):
    scores, labels, ideal = _data()
    tdt = getattr(torch, dtype)
    ts, tl, ti = (torch.tensor(x, dtype=tdt) for x in (scores, labels, ideal))
    names = ["ndcg@5", "ndcg", "map", "mrr@10", "p@10", "recall@20", "judged@10", "dcg@3"]
    ref = compute_metrics(names, scores, labels, ideal_labels=ideal)
    got = compute_metrics(names, ts, tl, ideal_labels=ti)
    for name in names:
        assert isinstance(got[name], torch.Tensor) and got[name].dtype == tdt and got[name].device == ts.device
        np.testing.assert_allclose(got[name].numpy(), ref[name], rtol=tol, atol=tol, err_msg=name)
    many = batch_ndcg(ts, tl, [3, 10], gain="linear")
    assert tuple(many.shape) == (400, 2)
    np.testing.assert_allclose(many.numpy(), batch_ndcg(scores, labels, [3, 10], gain="linear"), atol=tol)
    avg = batch_ndcg(ts, tl, 5, ties="average")
    assert isinstance(avg, torch.Tensor) and avg.dtype == tdt
    np.testing.assert_allclose(avg.numpy(), batch_ndcg(scores, labels, 5, ties="average"), atol=tol)
    np.testing.assert_allclose(batch_dcg(ts, tl, 4).numpy(), batch_dcg(scores, labels, 4), rtol=tol)
    np.testing.assert_allclose(batch_average_precision(ts, tl).numpy(), batch_average_precision(scores, labels), atol=tol)
    np.testing.assert_allclose(judged_at_k(ts, tl, 5).numpy(), judged_at_k(scores, labels, 5), atol=tol)
    w = weighted_ndcg(ts, {"a": tl, "b": tl}, weights={"a": 0.5, "b": 0.5}, k=5)
    np.testing.assert_allclose(w.numpy(), batch_ndcg(scores, labels, 5), atol=tol)


def test_torch_integer_input_and_validation():
    s = torch.tensor([[3, 2, 1]])
    got = batch_ndcg(s, torch.tensor([[0, 1, 2]]), 3, gain="linear")
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), batch_ndcg(np.array([[3, 2, 1]]), np.array([[0, 1, 2]]), 3, gain="linear"))
    with pytest.raises(ValueError, match=r"^batch_ndcg: labels must be non-negative, got -1 at row 0, column 2$"):
        batch_ndcg(s, torch.tensor([[0, 1, -1]]), 3)
    with pytest.raises(ValueError, match=r"same shape, got scores \(1, 3\) and labels \(1, 2\)"):
        batch_ndcg(s, torch.tensor([[0, 1]]), 3)

