"""Served lists rebuilt per ``request_id`` (documents in ``position`` order) and scored.

A request is a run of consecutive rows with one ``request_id`` (the rows come ordered by request, then
position); its rank ``r`` (1-based) is the row's place in the request, gaps in ``position`` closing up.
A request has one arm and one query (else the log is refused), and its time is its smallest ``ts``.

NDCG and DCG are the metrics engine's (:mod:`ndcg_labeling.metrics.dcg`: a running sum over ranks,
then a division by the ideal DCG of the query precomputed from the label store), so a list
scored alone (the live path) and in a batch of a million (the report) give the same bits; the tests
check them against pytrec_eval and against :func:`ndcg_labeling.metrics.compute_metrics`. Other
registry metrics go through :func:`~ndcg_labeling.metrics.compute_metrics` (report only).
Unjudged documents count as not relevant (gain 0); the ideal list is every judged label of the query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.metrics import dcg as _dcg

F = NDArray[np.float64]
I = NDArray[np.int64]  # noqa: E741
#: families scored by the exact kernel here (and so the ones the live path keeps)
EXACT_FAMILIES = ("ndcg", "dcg")


@dataclass
class ServedLists:
    """Requests as runs of rows: request ``i`` is rows ``start[i]:start[i+1]`` (``start`` has n+1 items)."""

    start: I
    rank: I  # per row: 1-based rank inside its request

    @property
    def n(self) -> int:
        return int(self.start.size - 1)

    def lengths(self) -> I:
        return np.diff(self.start)


def rebuild(request_id: NDArray[Any], position: I, arm: NDArray[Any], query_id: NDArray[Any],
            source: NDArray[Any] | None = None) -> ServedLists:
    """The served lists of rows ordered by request then position; refuses a request served twice at one
    position, or with two arms or two queries (naming the request and its file)."""
    n = int(position.size)
    if n == 0:
        return ServedLists(np.zeros(1, np.int64), np.zeros(0, np.int64))
    new = np.ones(n, bool)
    new[1:] = request_id[1:] != request_id[:-1]
    start = np.append(np.flatnonzero(new), n).astype(np.int64)
    req = np.cumsum(new) - 1
    rank = np.arange(n, dtype=np.int64) - start[req] + 1
    same = ~new[1:]
    for what, values in (("position", position), ("arm", arm), ("query_id", query_id)):
        clash = same & (values[1:] == values[:-1]) if what == "position" else same & (values[1:] != values[:-1])
        if clash.any():
            j = int(np.flatnonzero(clash)[0]) + 1
            where = f"{source[j]}: " if source is not None else ""
            problem = (f"two documents at position {int(position[j])}" if what == "position"
                       else f"two values of {what} ({values[j - 1]!r}, {values[j]!r})")
            raise NdcgLabelingError(f"{where}request {request_id[j]!r}: {problem} in one served list")
    return ServedLists(start, rank)


def ideal_dcg(query_labels: list[F], k: int | None, gain: str) -> F:
    """The ideal DCG at cut-off ``k`` (None: all) of each query from all its judged labels."""
    width = max((lab.size for lab in query_labels), default=0)
    mat = np.full((len(query_labels), width), np.nan)
    for i, lab in enumerate(query_labels):
        mat[i, :lab.size] = lab
    return _dcg.ideal_dcg(mat, k, gain)


def ranked_matrix(lists: ServedLists, values: F, k: int | None, fill: float = np.nan) -> F:
    """(n, width) matrix of per-row ``values`` in rank order, ``fill`` past a list's end; width = the
    longest list, cut at ``k``."""
    longest = int(lists.lengths().max()) if lists.n else 0
    width = longest if k is None else min(longest, k)
    out = np.full((lists.n, width), fill)
    keep = lists.rank <= width
    req = np.repeat(np.arange(lists.n), lists.lengths())
    out[req[keep], lists.rank[keep] - 1] = values[keep]
    return out


def exact_scores(family: str, k: int | None, labels_ranked: F, idcg: F, gain: str) -> F:
    """NDCG or DCG at ``k`` of each row of ``labels_ranked`` (labels in rank order, NaN unjudged);
    ``idcg`` per row (NDCG: 0 where the ideal DCG is 0)."""
    dcg = _dcg.dcg(_dcg.gains(labels_ranked if k is None else labels_ranked[:, :k], gain))
    if family == "dcg":
        return dcg
    with np.errstate(invalid="ignore", divide="ignore"):
        out: F = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)
    return out


def registry_scores(metric: Any, labels_ranked: F, present: NDArray[np.bool_], ideal_rows: F, gain: str,
                    relevant_threshold: float) -> F:
    """Any registry metric of each row: ``labels_ranked`` (NaN unjudged), ``present`` (a document at
    this rank), ``ideal_rows`` every judged label of the row's query (NaN padding)."""
    from ndcg_labeling.metrics import compute_metrics

    width = labels_ranked.shape[1]
    scores = np.tile(-np.arange(1, width + 1, dtype=np.float64), (labels_ranked.shape[0], 1))
    scores[~present] = np.nan
    values = compute_metrics([metric], scores, labels_ranked, ideal_labels=ideal_rows, gain=gain,
                             relevant_threshold=relevant_threshold)[metric.name]
    return np.asarray(values, dtype=np.float64)
