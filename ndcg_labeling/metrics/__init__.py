"""Pure, array-in / array-out ranking metrics: NDCG and its companions, over a batch of queries.

Every function takes 2-D ``scores`` and ``labels`` (queries x list length; NaN scores pad ragged
lists, NaN labels are unjudged) and returns one value per query - or, for a sequence of cut-offs,
one column per cut-off from a single sort. NumPy arrays in, NumPy out; torch tensors in, tensors out
on the same device. This package imports numpy only (numba and torch load on first use).

>>> import numpy as np
>>> from ndcg_labeling.metrics import batch_ndcg
>>> float(batch_ndcg(np.array([[5.0, 4, 3, 2, 1]]), np.array([[3, 0, 2, 3, 1]]), k=5)[0])  # doctest: +ELLIPSIS
0.8916...
"""

from __future__ import annotations

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
from ndcg_labeling.metrics.registry import Metric, compute_metrics, known_metrics, parse_metric

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
    "weighted_ndcg",
]
