"""DCG and NDCG over a batch of ranked lists, and a weighted NDCG over several objectives.

Definitions (ranks ``r`` start at 1, ``rel_r`` is the label of the document at rank ``r``)::

    gain(rel) = 2**rel - 1        (gain="exponential", Burges et al. 2005; the default)
    gain(rel) = rel               (gain="linear", Jarvelin & Kekalainen 2002; trec_eval's ndcg)
    DCG@k     = sum_{r=1..k} gain(rel_r) / log2(r + 1)
    NDCG@k    = DCG@k / IDCG@k

``IDCG@k`` is the DCG@k of the ideal ordering of every judged label of the query: the row's own
labels, or ``ideal_labels`` when given (judged documents the system did not retrieve count, as in
trec_eval). The ideal is cut at ``k`` as well (trec_eval ``ndcg_cut.k``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ndcg_labeling.metrics import _core
from ndcg_labeling.metrics import dcg as _dcg
from ndcg_labeling.metrics._validation import (
    EMPTIES,
    GAINS,
    TIES,
    FloatArray,
    as_2d,
    check_choice,
    check_k,
    check_labels,
    check_rows,
    check_same_shape,
    is_torch,
    k_max,
)

KType = int | Sequence[int] | None


def _stack(xp: Any, columns: list[Any], many: bool) -> Any:
    if not many:
        return columns[0]
    return xp.stack(columns, 1) if xp is not np else np.stack(columns, axis=1)


def batch_dcg(
    scores: Any,
    labels: Any,
    k: KType = 10,
    *,
    gain: str = "exponential",
    ties: str = "ordered",
) -> Any:
    """Discounted cumulative gain of each row: ``sum_{r<=k} gain(rel_r) / log2(r + 1)``.

    Parameters as :func:`batch_ndcg`. Returns shape ``(queries,)`` for an int or None ``k`` and
    ``(queries, len(k))`` for a sequence. Rows without documents give 0.

    Reference: Jarvelin & Kekalainen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS 2002.
    """
    func = "batch_dcg"
    ks, many = check_k(func, k)
    check_choice(func, "gain", gain, GAINS)
    check_choice(func, "ties", ties, TIES)
    if ties == "average":
        dcg, _ = _average_ties(func, scores, labels, ks, gain, None)
        return _back(scores, _stack(np, dcg, many))
    r = _core.prepare(func, scores, labels, k_max=k_max(ks))
    return _stack(r.xp, [_core.dcg_from_ranking(r, kk, gain) for kk in ks], many)


def batch_ndcg(
    scores: Any,
    labels: Any,
    k: KType = 10,
    *,
    gain: str = "exponential",
    ideal_labels: Any = None,
    ties: str = "ordered",
    empty: str = "zero",
) -> Any:
    """Normalised discounted cumulative gain of each row (query): ``DCG@k / IDCG@k``.

    Parameters
    ----------
    scores:
        ``(queries, list length)`` system scores, higher ranks first. NaN marks padding: that
        position holds no document, so lists of different lengths fit in one array.
    labels:
        Same shape: the graded relevance of each document. NaN means unjudged (gain 0). Labels may
        be fractional (a mean of grades); they must be non-negative and finite.
    k:
        A cut-off (int >= 1), a sequence of cut-offs (computed from one sort; result gets one column
        per cut-off), or None for the whole list (and the whole ideal list).
    gain:
        ``"exponential"`` (``2**rel - 1``, Burges 2005) or ``"linear"`` (``rel``, trec_eval).
    ideal_labels:
        Optional ``(queries, any width)`` array, NaN padded, of every judged label of each query,
        retrieved or not: the ideal DCG is computed from it, as trec_eval does. Without it the ideal
        is the row's own labels (the documents present in the list).
    ties:
        ``"ordered"``: equal scores keep their column order (stable sort by score descending).
        ``"average"``: the gain of tied documents is averaged over their positions (McSherry &
        Najork 2008, as scikit-learn ``ndcg_score``); the result does not depend on column order.
    empty:
        Value of a row whose ideal DCG is 0 (no positive label): ``"zero"`` (trec_eval,
        scikit-learn) or ``"nan"`` (to leave it out of a ``nanmean``).

    Returns
    -------
    float64 array of shape ``(queries,)`` or ``(queries, len(k))``; with torch tensors in, a tensor
    on the same device (float dtype of ``scores``, float64 for integer input).

    Raises ``ValueError`` for negative or infinite labels, shapes that differ, ``k < 1`` and unknown
    ``gain`` / ``ties`` / ``empty``. Inputs are not modified.

    References: Jarvelin & Kekalainen, ACM TOIS 20(4) 2002; Burges et al., "Learning to rank using
    gradient descent", ICML 2005; McSherry & Najork, "Computing information retrieval performance
    measures efficiently in the presence of tied scores", ECIR 2008; trec_eval ``m_ndcg_cut.c``.
    """
    func = "batch_ndcg"
    ks, many = check_k(func, k)
    check_choice(func, "gain", gain, GAINS)
    check_choice(func, "ties", ties, TIES)
    check_choice(func, "empty", empty, EMPTIES)
    if ties == "average":
        dcg, idcg = _average_ties(func, scores, labels, ks, gain, ideal_labels)
        cols = []
        for d, i in zip(dcg, idcg, strict=True):
            with np.errstate(invalid="ignore", divide="ignore"):
                cols.append(np.where(i > 0, d / np.where(i > 0, i, 1.0), 0.0 if empty == "zero" else np.nan))
        return _back(scores, _stack(np, cols, many))
    compiled = _core.compiled_ndcg(func, scores, labels, ks, gain, empty, ideal_labels)
    if compiled is not None:
        return compiled if many else compiled[:, 0]
    r = _core.prepare(func, scores, labels, k_max=k_max(ks), ideal_labels=ideal_labels)
    return _stack(r.xp, [_core.ndcg_from_ranking(r, kk, gain, empty) for kk in ks], many)


def weighted_ndcg(
    scores: Any,
    labels: Mapping[str, Any],
    weights: Mapping[str, float] | None = None,
    k: KType = 10,
    *,
    gain: str = "exponential",
    ideal_labels: Mapping[str, Any] | None = None,
    ties: str = "ordered",
    empty: str = "zero",
) -> Any:
    """Weighted sum of per-objective NDCG: ``sum_o weights[o] * NDCG_o@k``.

    ``labels`` maps an objective name (``"relevance"``, ``"freshness"``) to a labels array shaped
    like ``scores``; ``weights`` maps the same names to weights (default: equal weights summing to
    1); ``ideal_labels`` optionally maps names to ideal label arrays. Weights are used as given (not
    renormalised), must be finite and non-negative, and must name exactly the objectives. A row
    whose ideal DCG is 0 for an objective contributes 0 for it (``empty="zero"``) or makes the row
    NaN (``empty="nan"``). Other parameters as :func:`batch_ndcg`; all objectives share one ranking.
    """
    func = "weighted_ndcg"
    if not isinstance(labels, Mapping) or not labels:
        raise ValueError(f"{func}: labels must be a non-empty mapping of objective name to labels, got {type(labels).__name__}")
    names = list(labels)
    if weights is None:
        weights = {name: 1.0 / len(names) for name in names}
    if set(weights) != set(names):
        raise ValueError(
            f"{func}: weights must name exactly the objectives {sorted(names)}, got {sorted(weights)}"
        )
    for name, w in weights.items():
        if not np.isfinite(w) or w < 0:
            raise ValueError(f"{func}: weights must be finite and non-negative, got {w!r} for {name!r}")
    ideal = dict(ideal_labels or {})
    unknown = set(ideal) - set(names)
    if unknown:
        raise ValueError(f"{func}: ideal_labels names objectives not in labels: {sorted(unknown)}")
    total: Any = None
    for name in names:
        part = batch_ndcg(scores, labels[name], k, gain=gain, ideal_labels=ideal.get(name), ties=ties, empty=empty)
        term = part * float(weights[name])
        total = term if total is None else total + term
    return total


def _back(like: Any, values: FloatArray) -> Any:
    """NumPy result of the CPU-only tie-averaging path, as a tensor when a tensor came in."""
    if not is_torch(like):
        return values
    import torch

    dtype = like.dtype if like.is_floating_point() else torch.float64
    return torch.as_tensor(values, device=like.device).to(dtype)


def _to_numpy(x: Any) -> Any:
    if is_torch(x):
        return x.detach().cpu().double().numpy()
    return x


def _average_ties(
    func: str, scores: Any, labels: Any, ks: list[int | None], gain: str, ideal_labels: Any
) -> tuple[list[FloatArray], list[FloatArray]]:
    """DCG with tie-averaged gains (McSherry & Najork 2008) and ideal DCG, one array per cut-off.

    Tied documents share the mean gain of their group, each position keeps its own discount, and
    positions past ``k`` get discount 0 - scikit-learn's ``_tie_averaged_dcg`` computed for all rows
    at once. Runs in NumPy (on the CPU for tensors too).
    """
    s = as_2d(func, "scores", _to_numpy(scores))
    lab = as_2d(func, "labels", _to_numpy(labels))
    check_same_shape(func, s.shape, lab.shape)
    check_labels(func, "labels", np.where(np.isnan(s), np.nan, lab))
    n, m = s.shape
    valid = ~np.isnan(s)
    order = np.argsort(np.where(valid, -s, np.inf), axis=1, kind="stable")
    srt = np.take_along_axis(s, order, 1)
    g = np.where(np.take_along_axis(valid, order, 1), _dcg.gains(np.take_along_axis(lab, order, 1), gain), 0.0)
    # Group ids: a new group starts where the sorted score changes (NaN never equals, so padding
    # positions are groups of one with gain 0).
    starts = np.ones((n, m), dtype=bool)
    if m > 1:
        starts[:, 1:] = srt[:, 1:] != srt[:, :-1]
    gid = np.cumsum(starts.ravel()) - 1
    sums = np.bincount(gid, weights=g.ravel())
    counts = np.bincount(gid)
    avg = (sums / counts)[gid].reshape(n, m)
    if ideal_labels is None:
        ideal_src = np.where(valid, lab, np.nan)
    else:
        ideal_src = as_2d(func, "ideal_labels", _to_numpy(ideal_labels))
        check_rows(func, s.shape, ideal_src.shape)
        check_labels(func, "ideal_labels", ideal_src)
    dcgs = [_dcg.dcg(avg if k is None else avg[:, :k]) for k in ks]
    return dcgs, [_dcg.ideal_dcg(ideal_src, k, gain) for k in ks]
