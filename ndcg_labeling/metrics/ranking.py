"""Binary-relevance companions of NDCG: MRR, average precision, precision, recall, judged@k.

Conventions shared with :func:`ndcg_labeling.metrics.batch_ndcg`: 2-D ``scores`` and ``labels``
(queries x list length), NaN scores are padding, NaN labels are unjudged (never relevant), equal
scores keep column order, ``k`` is an int, a sequence of ints (one column each, one sort) or None
(whole list). A document is relevant when its label is ``>= relevant_threshold`` (default 1, as
trec_eval's ``-l 1``). The number of relevant judged documents ``R`` of a query comes from
``ideal_labels`` when given (every judged document, retrieved or not, as trec_eval) and from the
row's own labels otherwise.

``empty`` decides the value of a query with ``R == 0``: ``"zero"`` (trec_eval) or ``"nan"``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling.metrics import _core, _validation
from ndcg_labeling.metrics._validation import EMPTIES, Ranking, as_2d, check_choice, check_k, check_threshold
from ndcg_labeling.metrics.ndcg import _stack

KType = int | Sequence[int] | None


def _run(
    func: str,
    kernel: Callable[[Ranking, int | None, float, str], Any],
    scores: Any,
    labels: Any,
    k: KType,
    ideal_labels: Any,
    relevant_threshold: float,
    empty: str,
) -> Any:
    ks, many = check_k(func, k)
    check_choice(func, "empty", empty, EMPTIES)
    t = check_threshold(func, relevant_threshold)
    r = _core.prepare(func, scores, labels, k_max=_validation.k_max(ks), ideal_labels=ideal_labels)
    return _stack(r.xp, [kernel(r, kk, t, empty) for kk in ks], many)


def batch_mrr(
    scores: Any,
    labels: Any,
    k: KType = 10,
    *,
    ideal_labels: Any = None,
    relevant_threshold: float = 1.0,
    empty: str = "zero",
) -> Any:
    """Reciprocal rank of the first relevant document within the top ``k``: ``1 / rank``, else 0.

    The mean over queries is MRR. A query with no relevant judged document gets ``empty``.
    Reference: Voorhees, TREC-8 QA track report (1999); trec_eval ``recip_rank`` (``k=None``).
    """
    return _run("batch_mrr", _core.mrr_from_ranking, scores, labels, k, ideal_labels, relevant_threshold, empty)


def batch_average_precision(
    scores: Any,
    labels: Any,
    k: KType = None,
    *,
    ideal_labels: Any = None,
    relevant_threshold: float = 1.0,
    empty: str = "zero",
) -> Any:
    """Average precision: ``sum_{r<=k, rel_r} P@r / R`` with ``R`` the relevant judged documents.

    The denominator is every relevant judged document of the query, retrieved in the top ``k`` or
    not (trec_eval ``map`` for ``k=None``, ``map_cut.k`` otherwise), so missing relevant documents
    count as precision 0. The mean over queries is MAP. ``R == 0`` gives ``empty``.
    Reference: trec_eval ``m_map.c``; Manning, Raghavan & Schutze, IR book ch. 8 (2008).
    """
    return _run(
        "batch_average_precision", _core.average_precision_from_ranking, scores, labels, k, ideal_labels,
        relevant_threshold, empty,
    )


def batch_precision(
    scores: Any,
    labels: Any,
    k: KType = 10,
    *,
    ideal_labels: Any = None,
    relevant_threshold: float = 1.0,
    empty: str = "zero",
) -> Any:
    """Precision at ``k``: relevant documents in the top ``k`` divided by ``k``.

    The divisor is ``k`` even when the list is shorter (trec_eval ``P.k``: missing positions count as
    non-relevant). With ``k=None`` the divisor is the list length. ``R == 0`` gives ``empty``
    (the default "zero" matches trec_eval, whose P is 0 there).
    Reference: trec_eval ``m_P.c``.
    """
    return _run("batch_precision", _core.precision_from_ranking, scores, labels, k, ideal_labels, relevant_threshold, empty)


def batch_recall(
    scores: Any,
    labels: Any,
    k: KType = 10,
    *,
    ideal_labels: Any = None,
    relevant_threshold: float = 1.0,
    empty: str = "zero",
) -> Any:
    """Recall at ``k``: relevant documents in the top ``k`` divided by ``R``, all relevant judged ones.

    ``R == 0`` gives ``empty`` (trec_eval reports 0). Reference: trec_eval ``m_recall.c``.
    """
    return _run("batch_recall", _core.recall_from_ranking, scores, labels, k, ideal_labels, relevant_threshold, empty)


def judged_at_k(scores: Any, labels: Any, k: KType = 10, *, empty: str = "zero") -> Any:
    """Share of the top ``k`` documents that carry a label (label not NaN).

    The divisor is the number of documents actually in the top ``k`` (``min(k, list length)``), so a
    short, fully judged list scores 1. A row without documents gives ``empty``. Use it next to
    NDCG: unjudged documents count as gain 0, and a low judged@k says the NDCG is a lower bound.
    Reference: Sakai, "Alternatives to bpref", SIGIR 2007 (condensed lists); ir_measures ``Judged@k``.
    """
    func = "judged_at_k"
    ks, many = check_k(func, k)
    check_choice(func, "empty", empty, EMPTIES)
    r = _core.prepare(func, scores, labels, k_max=_validation.k_max(ks))
    return _stack(r.xp, [_core.judged_from_ranking(r, kk, empty) for kk in ks], many)


def rank_order(scores: Any, k: int | None = None) -> npt.NDArray[np.int64]:
    """The ranking every metric here uses: per row, the columns of the ``k`` best scores, best first.

    Score descending, equal scores in column order (stable), NaN scores (padding) left out; ``-1``
    fills the positions past the end of a short row. ``k=None`` ranks the whole row. Shape
    ``(queries, k)`` (``k`` capped at the row length). NumPy only.
    """
    func = "rank_order"
    s = as_2d(func, "scores", scores)
    ks, many = check_k(func, k)
    if many:
        raise ValueError(f"rank_order: k must be an int or None, got {k!r}")
    width = s.shape[1]
    kk = width if ks[0] is None else min(ks[0], width)
    return _core.rank_top_k(s, max(kk, 1))[:, :kk]
