"""Pure, array-in / array-out ranking metrics: NDCG and its companions, over a batch of queries.

Every function takes 2-D ``scores`` and ``labels`` (queries x list length; NaN scores pad ragged
lists, NaN labels are unjudged) and returns one value per query - or, for a sequence of cut-offs,
one column per cut-off from a single sort. NumPy arrays in, NumPy out; torch tensors in, tensors out
on the same device. This package imports numpy only (numba and torch load on first use). Which
code computes a call (NumPy, or numba's serial or parallel build) is the policy of
:mod:`ndcg_labeling.backend` (``NDCG_LABELING_BACKEND``), decided by the call's size.

>>> import numpy as np
>>> from ndcg_labeling.metrics import batch_ndcg
>>> float(batch_ndcg(np.array([[5.0, 4, 3, 2, 1]]), np.array([[3, 0, 2, 3, 1]]), k=5)[0])  # doctest: +ELLIPSIS
0.8916...
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ndcg_labeling.metrics._kernels import numba_available
    from ndcg_labeling.metrics.ndcg import batch_dcg, batch_ndcg, weighted_ndcg
    from ndcg_labeling.metrics.ranking import (
        batch_average_precision,
        batch_mrr,
        batch_precision,
        batch_recall,
        judged_at_k,
        rank_order,
    )
    from ndcg_labeling.metrics.registry import (
        Metric,
        compute_metrics,
        known_metrics,
        parse_metric,
    )

# Names load their module on first use: ``eval`` imports ``trec_measures`` alone, without the NDCG
# kernels, the registry and the backend policy (about 20 ms of a 50k-line ``eval``).
_HOMES = {
    "numba_available": "_kernels",
    "batch_dcg": "ndcg", "batch_ndcg": "ndcg", "weighted_ndcg": "ndcg",
    "batch_average_precision": "ranking", "batch_mrr": "ranking", "batch_precision": "ranking",
    "batch_recall": "ranking", "judged_at_k": "ranking", "rank_order": "ranking",
    "Metric": "registry", "compute_metrics": "registry", "known_metrics": "registry", "parse_metric": "registry",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Metric",
    "batch_average_precision",
    "batch_dcg",
    "batch_mrr",
    "batch_ndcg",
    "batch_precision",
    "batch_recall",
    "compute_metrics",
    "judged_at_k",
    "known_metrics",
    "numba_available",
    "parse_metric",
    "rank_order",
    "warm_up",
    "weighted_ndcg",
]


def warm_up(names: Iterable[str | Metric] | None = None) -> bool:
    """Load the compiled NDCG kernel now, so the first large call does not wait for numba (about a
    second in a fresh process; seconds the very first time, before the on-disk cache is filled).

    Meant to overlap other work (a command reading its files can run it on a thread). It changes no
    decision: which calls use the compiled kernel is the backend policy's (see
    :mod:`ndcg_labeling.backend`); under ``numpy`` it loads nothing. ``names`` (metric names) are
    checked only: one kernel serves every NDCG cut-off. Returns whether the kernel is loaded.
    Raises ``ValueError`` for an unknown metric name.
    """
    from ndcg_labeling.metrics import _kernels
    from ndcg_labeling.metrics.registry import parse_metric

    for name in names or ():
        parse_metric(name)
    return _kernels.warm_up_kernels()
