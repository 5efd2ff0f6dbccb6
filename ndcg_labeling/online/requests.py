"""Impression rows -> one :class:`~ndcg_labeling.online.sums.RequestValues` entry per served list.

The same function serves the report (all rows at once) and the live path (the rows of the requests a
POST touched): every per-request figure depends on that request's rows only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling.engines.online_duckdb import ImpressionRows
from ndcg_labeling.online.lists import (
    EXACT_FAMILIES,
    exact_scores,
    ideal_dcg,
    ranked_matrix,
    rebuild,
    registry_scores,
)
from ndcg_labeling.online.sums import RequestValues

F = NDArray[np.float64]
NO_TYPE = "(no type)"


def cluster_keys(rows: ImpressionRows, start: NDArray[np.int64], by: str) -> NDArray[Any]:
    """Cluster of each request: ``user``, ``session``, ``request``, or ``auto`` (user when the log has
    user_id, else session when it has session_id, else the request); a missing id -> the request."""
    first = start[:-1]
    req = rows.request_id[first]
    col = {"user": rows.user_id, "session": rows.session_id, "request": None}.get(by)
    if by == "auto":
        col = rows.user_id if rows.user_id is not None else rows.session_id
    if col is None:
        return np.asarray(["r:" + str(r) for r in req], dtype=object)
    vals = col[first]
    return np.asarray([("r:" + str(r)) if v is None else ("c:" + str(v)) for v, r in zip(vals, req, strict=True)],
                      dtype=object)


def _reduce_present(values: F, start: NDArray[np.int64], how: str) -> F:
    ok = np.isfinite(values)
    counts = np.add.reduceat(ok.astype(np.int64), start[:-1]) if start.size > 1 else np.zeros(0, np.int64)
    if start.size <= 1:
        return np.zeros(0)
    if how == "max":
        best = np.maximum.reduceat(np.where(ok, values, -np.inf), start[:-1])
        return np.where(counts > 0, best, np.nan)
    total = np.add.reduceat(np.where(ok, values, 0.0), start[:-1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)


def request_values(rows: ImpressionRows, row_labels: F, query_types: Mapping[str, str | None],
                   ideal_labels: Mapping[str, F], metric: Any, *, gain: str = "exponential",
                   relevant_threshold: float = 1.0, cluster_by: str = "auto",
                   idcg: Mapping[str, float] | None = None) -> RequestValues:
    """Score every served list of ``rows`` (ordered by request, then position) with ``metric`` (a parsed
    registry metric); ``row_labels`` per row (NaN unjudged); ``ideal_labels`` every judged label per
    query (or ``idcg``, the ideal DCG per judged query); ``query_types`` per query id (missing or None:
    :data:`NO_TYPE`). A request whose query is in neither has ``labelled`` 0 and scores 0."""
    lists = rebuild(rows.request_id, rows.position, rows.arm, rows.query_id, rows.source)
    first = lists.start[:-1]
    queries = rows.query_id[first]
    k = metric.k
    labels_ranked = ranked_matrix(lists, row_labels, k)
    if metric.family in EXACT_FAMILIES and idcg is not None:
        row_idcg = np.fromiter((idcg.get(q, 0.0) for q in queries), dtype=np.float64, count=lists.n)
        scores = exact_scores(metric.family, k, labels_ranked, row_idcg, gain)
    elif metric.family in EXACT_FAMILIES:
        uniq, inv = np.unique(queries.astype(str), return_inverse=True) if lists.n else (np.zeros(0, str), np.zeros(0, int))
        idcg_q = ideal_dcg([np.asarray(ideal_labels.get(q, np.zeros(0)), np.float64) for q in uniq], k, gain)
        scores = exact_scores(metric.family, k, labels_ranked, idcg_q[inv] if lists.n else np.zeros(0), gain)
    else:
        present = ranked_matrix(lists, np.ones(len(rows)), k, fill=0.0) > 0
        width = max((np.asarray(ideal_labels.get(q, np.zeros(0))).size for q in queries), default=0)
        ideal_rows = np.full((lists.n, max(width, 1)), np.nan)
        for i, q in enumerate(queries):
            lab = np.asarray(ideal_labels.get(q, np.zeros(0)), np.float64)
            ideal_rows[i, :lab.size] = lab
        scores = registry_scores(metric, labels_ranked, present, ideal_rows, gain, relevant_threshold)
    # a query without any label scores 0 here; whether its requests count in the metric's mean is the
    # reader's choice (``unjudged`` of :func:`~ndcg_labeling.online.sums.figures`), kept by ``labelled``
    known = idcg if idcg is not None else ideal_labels
    labelled = np.fromiter((q in known for q in queries), dtype=bool, count=lists.n)
    scores = np.where(labelled, np.asarray(scores, np.float64), 0.0)
    in_cut = lists.rank <= (k if k is not None else np.iinfo(np.int64).max)
    judged = np.isfinite(row_labels) & in_cut
    starts = lists.start[:-1]
    nonempty = lists.n > 0
    return RequestValues(
        arm=rows.arm[first], query_type=np.asarray([query_types.get(q) or NO_TYPE for q in queries], dtype=object),
        ts=np.minimum.reduceat(rows.ts, starts) if nonempty else np.zeros(0),
        cluster=cluster_keys(rows, lists.start, cluster_by), metric=np.asarray(scores, np.float64),
        judged=np.add.reduceat(judged.astype(np.int64), starts) if nonempty else np.zeros(0, np.int64),
        scored=np.add.reduceat(in_cut.astype(np.int64), starts) if nonempty else np.zeros(0, np.int64),
        clicked=(np.maximum.reduceat(rows.clicked, starts) > 0).astype(np.int64) if nonempty else np.zeros(0, np.int64),
        converted=_reduce_present(rows.converted, lists.start, "max"),
        watch=_reduce_present(rows.watch_ratio, lists.start, "mean"), labelled=labelled.astype(np.int64))
