"""One sort per call: rank the documents once, then compute any number of metrics at any cut-offs.

:func:`prepare` validates the arrays and returns a :class:`Ranking` - the labels in rank order for
the top ``K`` positions and the ideal labels in descending order - held as NumPy arrays, or as torch
tensors when torch tensors came in. The ``*_from_ranking`` functions are the per-metric kernels:
a few vectorised operations on ``(queries, K)`` arrays written once for both backends (``xp`` is
``numpy`` or ``torch``; both spell ``where``, ``isnan``, ``nan_to_num``, ``exp2`` alike).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling import backend
from ndcg_labeling.metrics import _kernels
from ndcg_labeling.metrics import dcg as _dcg
from ndcg_labeling.metrics._validation import (
    FloatArray,
    Ranking,
    as_2d,
    check_bad_columns,
    check_labels,
    check_rows,
    check_same_shape,
    is_torch,
)


def prepare(
    func: str,
    scores: Any,
    labels: Any,
    *,
    k_max: int | None,
    ideal_labels: Any = None,
) -> Ranking:
    """Validate and sort. ``k_max`` None means the whole list (and the whole ideal list)."""
    if is_torch(scores) or is_torch(labels) or is_torch(ideal_labels):
        from ndcg_labeling.metrics import _torch

        view = _cpu_view(_torch, scores, labels, ideal_labels)
        if view is None:
            return _torch.prepare_torch(func, scores, labels, k_max=k_max, ideal_labels=ideal_labels)
        dtype, (s_np, lab_np, ideal_np) = view
        return _torch.ranking_as_tensors(prepare(func, s_np, lab_np, k_max=k_max, ideal_labels=ideal_np), dtype)
    s = as_2d(func, "scores", scores)
    lab = as_2d(func, "labels", labels)
    check_same_shape(func, s.shape, lab.shape)
    n, width = s.shape
    k_rank = width if k_max is None else max(1, min(k_max, width))
    if ideal_labels is None:
        ideal_src, mask, ideal_name = lab, s, "labels"
    else:
        ideal_src = as_2d(func, "ideal_labels", ideal_labels)
        check_rows(func, s.shape, ideal_src.shape)
        check_labels(func, "labels", lab)
        mask, ideal_name = None, "ideal_labels"
    ideal_width = ideal_src.shape[1]
    k_id = max(1, ideal_width if k_max is None else min(k_max, ideal_width))
    order = rank_top_k(s, k_rank)
    present = order >= 0
    ranked = np.where(present, np.take_along_axis(lab, np.where(present, order, 0), axis=1), np.nan)
    if mask is not None:
        ideal_src = np.where(np.isnan(mask), np.nan, ideal_src)
    check_labels(func, ideal_name, ideal_src)
    ideal = _top_k_values(ideal_src, k_id)

    def n_relevant(threshold: float) -> FloatArray:
        with np.errstate(invalid="ignore"):
            rel = ideal_src >= threshold
        counts: FloatArray = rel.sum(axis=1).astype(np.float64)
        return counts

    return Ranking(np, ranked, present, ideal, n_relevant, _dcg.log2_ranks(max(k_rank, ideal.shape[1])), width, func)


def _cpu_view(torch_module: Any, scores: Any, labels: Any, ideal_labels: Any) -> Any:
    """NumPy views of CPU tensors when the policy routes them through the array kernels (the
    default: zero-copy, about 15x faster than torch's own sort on the CPU), else None."""
    if not backend.tensors_via_kernels():
        return None
    return torch_module.cpu_numpy_view(scores, labels, ideal_labels)


def compiled_applies(ks: list[int | None]) -> bool:
    """Whether NDCG at the cut-offs ``ks`` can take the compiled kernel: every one an int up to
    :data:`~ndcg_labeling.metrics._kernels.MAX_K` (``None``, the whole list, needs a full sort)."""
    return all(k is not None and k <= _kernels.MAX_K for k in ks)


def compiled_ndcg(
    func: str, scores: Any, labels: Any, ks: list[int | None], gain: str, empty: str, ideal_labels: Any = None
) -> Any:
    """NDCG at the cut-offs ``ks`` from the compiled kernel, shape ``(queries, len(ks))``.

    The same values as ``prepare`` + :func:`ndcg_from_ranking` (to 1e-12). None where it does not
    apply - torch tensors routed to torch, a cut-off of None or above ``MAX_K``, a NumPy plan (see
    :mod:`ndcg_labeling.backend`), no rows - and the caller takes the NumPy reference.
    """
    if not compiled_applies(ks):
        return None
    if is_torch(scores) or is_torch(labels) or is_torch(ideal_labels):
        from ndcg_labeling.metrics import _torch

        view = _cpu_view(_torch, scores, labels, ideal_labels)
        if view is None:
            return None
        dtype, (s_np, lab_np, ideal_np) = view
        values = compiled_ndcg(func, s_np, lab_np, ks, gain, empty, ideal_np)
        return None if values is None else _torch.as_tensor(values, dtype)
    s = as_2d(func, "scores", scores)
    lab = as_2d(func, "labels", labels)
    check_same_shape(func, s.shape, lab.shape)
    n, width = s.shape
    plan = backend.plan(s.size)
    if n == 0 or not plan.numba:
        return None
    k_max = max(k for k in ks if k is not None)
    k_rank = max(1, min(k_max, width))
    ideal, k_id = None, k_rank
    if ideal_labels is not None:
        ideal = as_2d(func, "ideal_labels", ideal_labels)
        check_rows(func, s.shape, ideal.shape)
        check_labels(func, "labels", lab)
        k_id = max(1, min(k_max, ideal.shape[1]))
    result = _kernels.ndcg(s, lab, ideal, np.array(ks, dtype=np.int64), k_rank, k_id, gain == "exponential",
                           0.0 if empty == "zero" else float("nan"), plan)
    if result is None:  # numba could not be loaded: the NumPy reference
        return None
    out, bad = result
    check_bad_columns(func, "labels" if ideal is None else "ideal_labels", lab if ideal is None else ideal, bad)
    return out


def rank_top_k(scores: FloatArray, k: int) -> npt.NDArray[np.int64]:
    """Column indices of the ``k`` best scores per row: stable (equal scores in column order), NaN
    scores (padding) left out, ``-1`` past the end."""
    n, m = scores.shape
    valid = ~np.isnan(scores)
    order = np.argsort(np.where(valid, -scores, np.inf), axis=1, kind="stable")
    # A real score of -inf and padding share the key +inf: a second stable pass puts padding last.
    order = np.take_along_axis(order, np.argsort(~np.take_along_axis(valid, order, 1), axis=1, kind="stable"), 1)
    order = np.where(np.take_along_axis(valid, order, 1), order, -1)
    out = np.full((n, k), -1, dtype=np.int64)
    out[:, : min(k, m)] = order[:, :k]
    return out


def _top_k_values(values: FloatArray, k: int) -> FloatArray:
    """The ``k`` largest non-NaN values per row, descending, ``0`` past the end."""
    srt = -np.sort(-np.nan_to_num(values, nan=0.0), axis=1)
    out = np.zeros((values.shape[0], k), dtype=np.float64)
    out[:, : min(k, values.shape[1])] = srt[:, :k]
    return out


def _gain(xp: Any, x: Any, gain: str) -> Any:
    if gain == "linear":
        return x
    # NumPy: the engine's gain (libm's pow for fractional labels, as the compiled kernel)
    return xp.exp2(x) - 1.0 if xp is not np else _dcg.exp_gain(x)


def _cut(k: int | None, available: int) -> int:
    return available if k is None else min(k, available)


def _fill(xp: Any, ok: Any, num: Any, den: Any, empty: str) -> Any:
    """``num / den`` where ``ok``; 0 or NaN elsewhere (never a division by zero)."""
    safe = xp.where(ok, den, 1.0 + 0.0 * den)
    value = num / safe
    return xp.where(ok, value, (0.0 if empty == "zero" else float("nan")) + 0.0 * value)


def dcg_from_ranking(r: Ranking, k: int | None, gain: str) -> Any:
    kk = _cut(k, r.k_ranked)
    g = _gain(r.xp, r.xp.nan_to_num(r.ranked[:, :kk], nan=0.0), gain)
    return _rank_by_rank(r, g / r.log2_ranks[:kk])


def ideal_dcg_from_ranking(r: Ranking, k: int | None, gain: str) -> Any:
    ki = _cut(k, r.k_ideal)
    return _rank_by_rank(r, _gain(r.xp, r.ideal[:, :ki], gain) / r.log2_ranks[:ki])


def _rank_by_rank(r: Ranking, terms: Any) -> Any:
    """Each row's sum added rank by rank, as :func:`ndcg_labeling.metrics.dcg.running_sum` and the
    compiled kernel add it: the same bits."""
    if r.xp is np:
        return _dcg.running_sum(terms)
    if terms.shape[1] == 0:
        return terms.sum(1)
    # torch: the same left-to-right sum, one column at a time (CUDA's cumsum over a row of ten took 5.8 ms
    # for 1M rows on an H200, 37% of batch_ndcg; benchmarks/bench_cuda.py)
    total = terms[:, 0]
    for j in range(1, terms.shape[1]):
        total = total + terms[:, j]
    return total


def ndcg_from_ranking(r: Ranking, k: int | None, gain: str, empty: str) -> Any:
    dcg = dcg_from_ranking(r, k, gain)
    idcg = ideal_dcg_from_ranking(r, k, gain)
    return _fill(r.xp, idcg > 0, dcg, idcg, empty)


def _f(r: Ranking, x: Any) -> Any:
    """``x`` (bool or int) in the ranking's float dtype (torch's ``* 1.0`` would give float32)."""
    return x.astype(np.float64) if r.xp is np else x.to(r.ranked.dtype)


def _relevant(r: Ranking, k: int | None, threshold: float) -> Any:
    kk = _cut(k, r.k_ranked)
    return _f(r, r.ranked[:, :kk] >= threshold)  # NaN (unjudged, missing) compares False


def mrr_from_ranking(r: Ranking, k: int | None, threshold: float, empty: str) -> Any:
    rel = _relevant(r, k, threshold)
    xp = r.xp
    if rel.shape[1] == 0:
        rr = rel.sum(1)
    else:
        first = _f(r, rel.argmax(1))
        rr = xp.where(rel.sum(1) > 0, 1.0 / (first + 1.0), 0.0 * first)
    return _fill(xp, r.n_relevant(threshold) > 0, rr, 1.0 + 0.0 * rr, empty)


def average_precision_from_ranking(r: Ranking, k: int | None, threshold: float, empty: str) -> Any:
    rel = _relevant(r, k, threshold)
    xp = r.xp
    ranks = xp.arange(1, rel.shape[1] + 1, dtype=rel.dtype, **_device(r, rel))
    precision_at = rel.cumsum(1) / ranks
    n_rel = r.n_relevant(threshold)
    terms = precision_at * rel  # NumPy: added rank by rank, as trec_eval's m_map.c (the ranked-list engine)
    return _fill(xp, n_rel > 0, _dcg.running_sum(terms) if xp is np else terms.sum(1), n_rel, empty)


def precision_from_ranking(r: Ranking, k: int | None, threshold: float, empty: str) -> Any:
    rel = _relevant(r, k, threshold)
    hits = rel.sum(1)
    if k is None:
        den = _f(r, r.present.sum(1))
    else:
        den = 0.0 * hits + float(k)  # trec_eval: divide by k even when the list is shorter
    value = _fill(r.xp, den > 0, hits, den, "zero")
    return _fill(r.xp, r.n_relevant(threshold) > 0, value, 1.0 + 0.0 * value, empty)


def recall_from_ranking(r: Ranking, k: int | None, threshold: float, empty: str) -> Any:
    rel = _relevant(r, k, threshold)
    return _fill(r.xp, r.n_relevant(threshold) > 0, rel.sum(1), r.n_relevant(threshold), empty)


def judged_from_ranking(r: Ranking, k: int | None, empty: str) -> Any:
    kk = _cut(k, r.k_ranked)
    judged = _f(r, (~r.xp.isnan(r.ranked[:, :kk])).sum(1))
    shown = _f(r, r.present[:, :kk].sum(1))
    return _fill(r.xp, shown > 0, judged, shown, empty)


def _device(r: Ranking, like: Any) -> dict[str, Any]:
    return {"device": like.device} if r.xp is not np else {}
