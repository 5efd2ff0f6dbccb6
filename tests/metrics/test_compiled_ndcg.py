"""The compiled NDCG kernel (metrics/_kernels.py) against the NumPy reference (metrics/_core.py).

``batch_ndcg`` with integer cut-offs takes the compiled kernel under a numba plan; ``compute_metrics``
with other metrics takes the NumPy reference (one ranking, then per-metric sums). Both must give the
same numbers bit for bit (the same sums in the same order, gains from the same functions) and the
same errors. The ranking itself is checked against NumPy's stable argsort, the definition it implements.
"""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeling.metrics import _core, _kernels, batch_ndcg, rank_order
from ndcg_labeling.metrics import compute_metrics as _compute_metrics

pytestmark = pytest.mark.skipif(not _kernels.numba_available(), reason="numba kernels not available")


def _messy(seed: int, n: int = 400, width: int = 37) -> tuple[np.ndarray, np.ndarray]:
    """Heavy score ties, padding, -inf scores, unjudged labels; some rows fractional or large labels."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 8, (n, width)).astype(float)
    scores[rng.random(scores.shape) < 0.25] = np.nan
    scores[rng.random(scores.shape) < 0.03] = -np.inf
    scores[::17] = np.nan  # empty rows
    labels = rng.integers(0, 5, (n, width)).astype(float)
    labels[rng.random(labels.shape) < 0.2] = np.nan
    labels[::5] += np.round(rng.random((len(labels[::5]), width)), 2)  # fractional (consensus means)
    labels[3::11, 0] = 40.0  # above the counted levels
    return scores, labels


def _general(scores, labels, ks, gain, empty, ideal=None):
    k_max = max(ks)
    r = _core.prepare("f", scores, labels, k_max=k_max, ideal_labels=ideal)
    return np.column_stack([_core.ndcg_from_ranking(r, k, gain, empty) for k in ks])


@pytest.mark.parametrize("gain", ["exponential", "linear"])
@pytest.mark.parametrize("empty", ["zero", "nan"])
def test_compiled_equals_general_path_bit_for_bit(gain, empty):
    scores, labels = _messy(1)
    ks = [1, 3, 5, 10, 20, 64]
    compiled = _core.compiled_ndcg("f", scores, labels, ks, gain, empty)
    assert compiled is not None
    np.testing.assert_array_equal(compiled, _general(scores, labels, ks, gain, empty))
    rng = np.random.default_rng(2)
    ideal = np.where(rng.random((len(scores), 45)) < 0.7, rng.integers(0, 5, (len(scores), 45)), np.nan)
    ideal[::4] += 0.5
    compiled = _core.compiled_ndcg("f", scores, labels, ks, gain, empty, ideal)
    assert compiled is not None
    np.testing.assert_array_equal(compiled, _general(scores, labels, ks, gain, empty, ideal))


def test_compiled_path_applies_only_where_it_can():
    scores, labels = _messy(3, n=20)
    assert _core.compiled_ndcg("f", scores, labels, [None], "exponential", "zero") is None
    assert _core.compiled_ndcg("f", scores, labels, [65], "exponential", "zero") is None
    assert _core.compiled_applies([10, 64])
    assert not _core.compiled_applies([65]) and not _core.compiled_applies([None])
    # batch_ndcg gives the same numbers on either side of the limit.
    wide = np.random.default_rng(4).random((50, 200))
    wide_labels = np.random.default_rng(5).integers(0, 4, (50, 200)).astype(float)
    np.testing.assert_array_equal(batch_ndcg(wide, wide_labels, [64, 65])[:, 0], batch_ndcg(wide, wide_labels, 64))


@pytest.mark.parametrize("ideal", [False, True])
def test_compiled_and_general_paths_report_the_same_bad_label(ideal):
    scores, labels = _messy(6, n=50)
    labels = np.nan_to_num(labels, nan=1.0)
    labels[30, 7] = -2.0
    labels[41, 2] = np.inf
    ideal_labels = np.ones((50, 12)) if ideal else None
    with pytest.raises(ValueError) as compiled:
        _core.compiled_ndcg("batch_ndcg", scores, labels, [10], "linear", "zero", ideal_labels)
    with pytest.raises(ValueError) as general:
        _general(scores, labels, [10], "linear", "zero", ideal_labels)
    assert str(compiled.value) == str(general.value).replace("f:", "batch_ndcg:")
    if ideal:
        labels[30, 7] = 1.0
        labels[41, 2] = 1.0
        ideal_labels[9, 11] = -1.0  # type: ignore[index]
        with pytest.raises(ValueError, match=r"batch_ndcg: ideal_labels must be non-negative, got -1 at row 9, column 11"):
            _core.compiled_ndcg("batch_ndcg", scores, labels, [10], "linear", "zero", ideal_labels)


@pytest.mark.parametrize("width", [2, 12, 50, 130])
@pytest.mark.parametrize("k", [1, 3, 8, 9, 10, 16, 17, 33, 64])
def test_compiled_ranking_by_counting_and_by_insertion_match_the_general_path(width, k):
    """Equal scores (so more than 64 candidates in wide rows: the insertion), many distinct (the
    counted ranks), -inf and inf scores, fractional and large labels (the ideal by insertion)."""
    rng = np.random.default_rng(width * 1000 + k)
    for distinct in (1, 3, 1000):
        scores = rng.integers(0, distinct, (80, width)).astype(float)
        scores[rng.random(scores.shape) < 0.1] = np.nan
        scores[rng.random(scores.shape) < 0.03] = -np.inf
        scores[rng.random(scores.shape) < 0.03] = np.inf
        labels = rng.integers(0, 4, (80, width)).astype(float)
        labels[rng.random(labels.shape) < 0.1] = np.nan
        labels[::3] += 0.25
        labels[1::7, 0] = 35.0
        for gain in ("exponential", "linear"):
            compiled = _core.compiled_ndcg("f", scores, labels, [k, 1], gain, "nan")
            assert compiled is not None
            np.testing.assert_array_equal(compiled, _general(scores, labels, [k, 1], gain, "nan"))


@pytest.mark.parametrize("width", [1, 3, 9, 10, 19, 20, 21, 50, 131])
@pytest.mark.parametrize("k", [1, 2, 5, 7, 10, 64, 65])
def test_ranking_is_the_stable_sort_by_score_descending(width, k):
    rng = np.random.default_rng(width * 100 + k)
    scores = rng.integers(0, 5, (60, width)).astype(float) + rng.choice([0.0, 0.5], (60, width))
    scores[rng.random(scores.shape) < 0.2] = np.nan
    scores[rng.random(scores.shape) < 0.05] = -np.inf
    scores[rng.random(scores.shape) < 0.05] = np.inf
    got = rank_order(scores, k)
    valid = ~np.isnan(scores)
    for i in range(len(scores)):
        cols = np.flatnonzero(valid[i])
        want = cols[np.argsort(-scores[i, cols], kind="stable")][: min(k, width)]
        row = got[i]
        np.testing.assert_array_equal(row[: len(want)], want, err_msg=f"row {i}")
        assert (row[len(want):] == -1).all()


def test_cpu_tensors_take_the_compiled_kernels_by_default(monkeypatch):
    torch = pytest.importorskip("torch")
    from ndcg_labeling.metrics import _torch

    def torch_path(*args, **kwargs):
        raise AssertionError("CPU tensors went through torch's own sort")

    monkeypatch.setattr(_torch, "prepare_torch", torch_path)
    rng = np.random.default_rng(9)
    scores, labels = rng.random((50, 12)), rng.integers(0, 4, (50, 12)).astype(float)
    ts = torch.tensor(scores, dtype=torch.float32, requires_grad=True)
    tl = torch.tensor(labels, dtype=torch.float32)
    got = _compute_metrics(["ndcg", "map@5"], ts, tl)
    assert got["ndcg"].dtype == torch.float32 and not got["ndcg"].requires_grad
    np.testing.assert_allclose(got["map@5"].numpy(), _compute_metrics(["map@5"], scores, labels)["map@5"], atol=1e-6)
    compiled = batch_ndcg(ts, tl, [3, 5])
    assert compiled.dtype == torch.float32 and tuple(compiled.shape) == (50, 2)
    np.testing.assert_allclose(compiled.numpy(), batch_ndcg(scores, labels, [3, 5]), atol=1e-6)


def test_tensors_numpy_cannot_view_take_the_torch_path():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    scores, labels = rng.random((30, 8)), rng.integers(0, 3, (30, 8)).astype(float)
    want = batch_ndcg(scores, labels, 3)
    got = batch_ndcg(torch.tensor(scores, dtype=torch.bfloat16), torch.tensor(labels), 3)
    assert got.dtype == torch.bfloat16
    # bfloat16 rounds the scores (new ties, so a different order in a few rows) and the results.
    assert np.mean(np.abs(got.float().numpy() - want) < 1e-2) > 0.8
    negated = torch._neg_view(torch.tensor(-scores))  # a tensor with the negative bit set
    np.testing.assert_allclose(batch_ndcg(negated, torch.tensor(labels), 3).numpy(), want, atol=1e-12)


@pytest.mark.parametrize("width", [50, 63, 64, 130, 300])
def test_compiled_level_counts_and_candidate_bits_match_the_general_path(width):
    """The hot kernel counts labels 0-7 a byte each (rows of up to 255 columns) and finds the candidates
    63 columns at a time: rows past those widths, labels 8-31 (counted by the general helper), ties
    of a few candidates (the stable count) and distinct scores (the vectorised count) all agree, for
    the ideal from the row's labels and from ``ideal_labels``."""
    rng = np.random.default_rng(width)
    scores = rng.random((120, width))
    scores[::4] = np.round(scores[::4], 1)  # equal scores among the candidates
    scores[1::9, :] = np.nan  # nothing to rank
    labels = rng.integers(0, 8, (120, width)).astype(float)
    labels[2::5] += 8.0  # levels 8-15: not counted by byte
    labels[rng.random(labels.shape) < 0.1] = np.nan
    ideal = rng.integers(0, 4, (120, 20)).astype(float)
    for ks in ([10], [1, 5, 10, 16], [33]):
        for gain in ("exponential", "linear"):
            for ideal_labels in (None, ideal):  # the ideal_labels kernel shares the ranking steps
                compiled = _core.compiled_ndcg("f", scores, labels, ks, gain, "nan", ideal_labels)
                assert compiled is not None
                np.testing.assert_array_equal(compiled, _general(scores, labels, ks, gain, "nan", ideal_labels))


@pytest.mark.parametrize("ideal", [False, True])
def test_compiled_parallel_build_takes_every_chunk_once(ideal):
    """The parallel build's threads take row chunks from a shared counter: every row is computed, and
    the values equal the serial build's bit for bit (more rows than chunks, and fewer)."""
    from ndcg_labeling import backend

    rng = np.random.default_rng(21)
    for n in (3, 1000, 20_000):
        scores = rng.random((n, 40))
        scores[rng.random(scores.shape) < 0.1] = np.nan
        labels = rng.integers(0, 4, (n, 40)).astype(float)
        ideal_labels = labels[:, :25] if ideal else None
        got = {}
        for setting in ("numba,parallel=on", "numba,parallel=off"):
            with backend.using(setting):
                got[setting] = _core.compiled_ndcg("f", scores, labels, [3, 10], "exponential", "nan", ideal_labels)
        np.testing.assert_array_equal(got["numba,parallel=on"], got["numba,parallel=off"])
        np.testing.assert_array_equal(got["numba,parallel=on"], _general(scores, labels, [3, 10], "exponential", "nan",
                                                                         ideal_labels))


def test_kernels_stay_inside_their_arrays(tmp_path):
    """With numba's bounds checks on (a fresh build in its own cache), both builds of the kernel run the
    inputs that reach every edge, among them an ideal list wider than the scores (the label pass once read
    the scores row at the ideal's columns, past its end) and fewer columns than the lane pass's 32, and
    give the NumPy reference's values."""
    import os
    import subprocess
    import sys

    code = """
import numpy as np
from ndcg_labeling import backend
from ndcg_labeling.metrics import batch_ndcg
rng = np.random.default_rng(5)
for n, width, ideal_width in ((60, 10, 40), (60, 40, 12), (30, 70, 70), (20, 3, 0)):
    s = rng.integers(0, 6, (n, width)).astype(float)
    s[rng.random(s.shape) < 0.2] = np.nan
    lab = rng.integers(0, 4, (n, width)).astype(float)
    lab[::4] += 0.5
    ideal = rng.integers(0, 4, (n, ideal_width)).astype(float)
    for given in (None, ideal):
        with backend.using("numpy"):
            ref = batch_ndcg(s, lab, [1, 5, 10], ideal_labels=given)
        for spec in ("numba,parallel=off", "numba,parallel=on"):
            with backend.using(spec):
                got = batch_ndcg(s, lab, [1, 5, 10], ideal_labels=given)
            assert np.array_equal(got, ref), (spec, n, width, ideal_width)
print("ok")
"""
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
