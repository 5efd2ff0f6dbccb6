"""Metric names such as ``ndcg@10`` parsed into callables, and several metrics from one sort.

Grammar: ``family`` or ``family@k`` with ``k`` an integer >= 1; no ``@k`` means the whole list.
Families (aliases in brackets): ``ndcg``, ``dcg``, ``mrr`` [``rr``, ``recip_rank``], ``map``
[``ap``], ``p`` [``precision``], ``recall``, ``judged``, and trec_eval's other measures under their
lower-case names (``bpref``, ``infap``, ``rprec``, ``success@k``, ``relative_p@k``, ``set_f``, ``rbp``...,
see :data:`TREC_FAMILIES`). Names are case-insensitive. trec_eval's own names are one grammar with
these: ``ndcg_cut.10`` is ``ndcg@10``, ``P.5`` is ``p@5``, ``infAP`` is ``infap``
(:mod:`ndcg_labeling.metrics.trec_measures` holds the mapping).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ndcg_labeling.metrics import _core, _trec_gains, _trec_kernels, trec_measures
from ndcg_labeling.metrics._trec_kernels import RankedLists
from ndcg_labeling.metrics._validation import (
    EMPTIES,
    GAINS,
    FloatArray,
    Ranking,
    check_choice,
    check_threshold,
    is_torch,
    k_max,
)

# Each family's kernel over one Ranking: (ranking, k, gain, relevant threshold, empty) -> per-query values
# (the public function of each: batch_ndcg, batch_dcg, batch_mrr, batch_average_precision, batch_precision,
# batch_recall, judged_at_k).
REGISTRY: dict[str, Callable[[Ranking, int | None, str, float, str], Any]] = {
    "ndcg": lambda r, k, gain, t, empty: _core.ndcg_from_ranking(r, k, gain, empty),
    "dcg": lambda r, k, gain, t, empty: _core.dcg_from_ranking(r, k, gain),
    "mrr": lambda r, k, gain, t, empty: _core.mrr_from_ranking(r, k, t, empty),
    "map": lambda r, k, gain, t, empty: _core.average_precision_from_ranking(r, k, t, empty),
    "p": lambda r, k, gain, t, empty: _core.precision_from_ranking(r, k, t, empty),
    "recall": lambda r, k, gain, t, empty: _core.recall_from_ranking(r, k, t, empty),
    "judged": lambda r, k, gain, t, empty: _core.judged_from_ranking(r, k, empty),
}
ALIASES = {"rr": "mrr", "recip_rank": "mrr", "ap": "map", "precision": "p"}

# trec_eval measures the registry reaches through trec_measures: registry family -> whether it takes @k.
_NOT_REGISTRY = {"runid", "relstring", "num_q", "gm_map", "gm_bpref", "iprec_at_recall", "Rprec_mult",
                 *trec_measures.JUDGMENT_GROUP_FAMILIES, *trec_measures.PREFERENCE_FAMILIES}
TREC_FAMILIES: dict[str, bool] = {
    trec_measures.REGISTRY_NAMES.get(fam, fam.lower()): spec.kind == "cut_long"
    for fam, spec in trec_measures.FAMILIES.items() if fam not in _NOT_REGISTRY
}
for _own in REGISTRY:
    TREC_FAMILIES.pop(_own, None)

_NAME = re.compile(r"^\s*([a-z0-9_]+)\s*(?:@\s*(\d+))?\s*$")


def known_metrics() -> list[str]:
    """The metric families, for messages and help texts: the registry's own, then trec_eval's."""
    return [*sorted(REGISTRY), *sorted(TREC_FAMILIES)]


@dataclass(frozen=True)
class Metric:
    """A parsed metric name: ``family`` (canonical), cut-off ``k`` (None: whole list), and ``name``."""

    family: str
    k: int | None

    @property
    def name(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"

    def __call__(
        self,
        scores: Any,
        labels: Any,
        *,
        ideal_labels: Any = None,
        gain: str = "exponential",
        relevant_threshold: float = 1.0,
        empty: str = "zero",
    ) -> Any:
        """The metric for each row; see :func:`compute_metrics` for the parameters."""
        return compute_metrics([self], scores, labels, ideal_labels=ideal_labels, gain=gain,
                               relevant_threshold=relevant_threshold, empty=empty)[self.name]


def parse_metric(name: str | Metric) -> Metric:
    """Parse ``"ndcg@10"``, ``"map"``, ``"P@5"``, ``"bpref"``, or trec_eval's ``"ndcg_cut.10"``,
    ``"P.5"``... into a :class:`Metric`.

    Raises ``ValueError`` naming the known metrics for an unknown family, and for ``k < 1``.
    """
    if isinstance(name, Metric):
        return name
    if not isinstance(name, str):
        raise ValueError(f"parse_metric: metric name must be a string like 'ndcg@10', got {name!r}")
    m = _NAME.match(name.lower())
    family = ALIASES.get(m.group(1), m.group(1)) if m else ""
    if m is None or (family not in REGISTRY and family not in TREC_FAMILIES):
        trec = _from_trec_name(name)
        if trec is not None:
            return trec
        raise ValueError(
            f"parse_metric: unknown metric {name!r}; known metrics: {', '.join(known_metrics())} "
            "(optionally with @k, e.g. ndcg@10), or a trec_eval name such as ndcg_cut.10"
        )
    k = None if m.group(2) is None else int(m.group(2))
    if k is not None and k < 1:
        raise ValueError(f"parse_metric: k must be >= 1, got {k} in {name!r}")
    if family in TREC_FAMILIES and TREC_FAMILIES[family] and k is None:
        raise ValueError(f"parse_metric: {family} needs a cut-off, e.g. {family}@10")
    if family in TREC_FAMILIES and not TREC_FAMILIES[family] and k is not None:
        raise ValueError(f"parse_metric: {family} takes no cut-off, got {name!r}")
    return Metric(family, k)


def _from_trec_name(name: str) -> Metric | None:
    """A trec_eval measure name with one output column, as a registry metric (None: not one)."""
    try:
        columns = trec_measures.parse_measures([name]).columns()
    except ValueError:
        return None
    if len(columns) != 1 or columns[0].family in _NOT_REGISTRY:
        return None
    if trec_measures.FAMILIES[columns[0].family].kind in ("p_pair", "p_double") and columns[0].name != columns[0].family:
        return None  # parameters the registry has no place for (gains, utility weights)
    family, _, k = trec_measures.registry_name(columns[0]).partition("@")
    return Metric(ALIASES.get(family, family), int(k) if k else None)


def compute_metrics(
    names: Iterable[str | Metric],
    scores: Any,
    labels: Any,
    *,
    ideal_labels: Any = None,
    gain: str = "exponential",
    relevant_threshold: float = 1.0,
    empty: str = "zero",
) -> dict[str, Any]:
    """Several metrics from one sort: ``{metric name: per-query values}`` (in the order given).

    ``gain`` applies to ndcg and dcg; ``relevant_threshold`` to mrr, map, p and recall; ``empty`` as
    in the individual functions. Ties keep column order (``ties="ordered"``).

    Labels: NaN is a document without a judgment; a negative label is what trec_eval makes of it, for
    every family: never relevant (at any threshold, 0 included), outside R and the ideal DCG, gain 0,
    not counted by ``judged@k``, skipped by bpref and infAP. A threshold <= 0 makes every label >= 0
    relevant (trec_eval's ``-l 0``).
    """
    metrics = [parse_metric(n) for n in names]
    if not metrics:
        raise ValueError("compute_metrics: names must name at least one metric")
    check_choice("compute_metrics", "gain", gain, GAINS)
    check_choice("compute_metrics", "empty", empty, EMPTIES)
    t = check_threshold("compute_metrics", relevant_threshold)
    if any(mt.family in TREC_FAMILIES for mt in metrics):
        return _with_trec_families(metrics, scores, labels, ideal_labels, gain, t, empty)
    labels, ideal_labels = _negative_as_unjudged(labels), _negative_as_unjudged(ideal_labels)
    if all(mt.family == "ndcg" for mt in metrics):
        compiled = _core.compiled_ndcg("compute_metrics", scores, labels, [mt.k for mt in metrics], gain, empty,
                                       ideal_labels)
        if compiled is not None:
            return {mt.name: compiled[:, j] for j, mt in enumerate(metrics)}
    r = _core.prepare("compute_metrics", scores, labels, k_max=k_max([mt.k for mt in metrics]),
                      ideal_labels=ideal_labels)
    return {mt.name: REGISTRY[mt.family](r, mt.k, gain, t, empty) for mt in metrics}


def _negative_as_unjudged(labels: Any) -> Any:
    """``labels`` with each finite negative label as NaN. For the registry's own families that is
    exactly what trec_eval means by a negative label ("in the pool, not judged"): never relevant at
    any threshold, outside R and the ideal DCG, gain 0, and not judged (trec_eval's ``unj`` and
    ``-J`` count it as unjudged, so ``judged@k`` does not count it). Anything that is not a numeric
    array is passed on for the kernels' own messages; -inf stays refused."""
    if labels is None:
        return None
    if is_torch(labels):
        import torch

        negative = (labels < 0) & torch.isfinite(labels)
        if not bool(negative.any()):
            return labels
        return torch.where(negative, torch.full_like(labels, float("nan"), dtype=torch.float64), labels.double())

    try:
        arr = np.asarray(labels, dtype=np.float64)
    except (TypeError, ValueError):
        return labels
    with np.errstate(invalid="ignore"):
        negative = (arr < 0) & np.isfinite(arr)
    return np.where(negative, np.nan, arr) if negative.any() else labels


def _with_trec_families(metrics: list[Metric], scores: Any, labels: Any, ideal_labels: Any, gain: str, t: float,
                        empty: str) -> dict[str, Any]:
    """:func:`compute_metrics` when a trec_eval family is asked: those through
    :func:`compute_on_lists` (NaN labels unjudged, negative labels judged but never relevant, ties in
    column order), the others as usual."""
    own = [mt for mt in metrics if mt.family not in TREC_FAMILIES]
    out = compute_metrics(own, scores, labels, ideal_labels=ideal_labels, gain=gain, relevant_threshold=t,
                          empty=empty) if own else {}
    lists = trec_measures.ranked_lists_from_scores(np.asarray(scores, dtype=np.float64),
                                                   np.asarray(labels, dtype=np.float64), ideal_labels)
    out.update(compute_on_lists([mt for mt in metrics if mt.family in TREC_FAMILIES], lists, gain=gain,
                                relevant_threshold=t, empty=empty))
    return {mt.name: out[mt.name] for mt in metrics}


def compute_on_lists(names: Iterable[str | Metric], lists: RankedLists, *, gain: str = "exponential",
                     relevant_threshold: float = 1.0, empty: str = "zero") -> dict[str, FloatArray]:
    """Registry metrics over ranked relevance lists: the ranked-list engine of ``eval`` and ``report``.

    ``lists`` holds each query's labels in rank order and its judgments per label (trec_eval's join,
    or ``report``'s stored rankings with every labelled document of the query), so the ideal DCG and R
    count every judgment, retrieved or not. The values are trec_eval's (``ndcg@10`` is ``ndcg_cut.10``;
    exponential gain is trec_eval's NDCG over the gains ``2^label - 1``) with the parameters and the
    ``empty`` rule of :func:`compute_metrics`: a query without a positive ideal gain (ndcg), without a
    relevant judgment (mrr, map, p, recall; trec_eval's measures) or without a ranked document
    (judged) gets 0 or NaN. ``judged@k`` is the share of the first ``min(k, ranked)`` documents that
    are judged (label >= 0).
    """
    metrics = [parse_metric(n) for n in names]
    check_choice("compute_on_lists", "gain", gain, GAINS)
    check_choice("compute_on_lists", "empty", empty, EMPTIES)
    t = check_threshold("compute_on_lists", relevant_threshold)
    if lists.rel.shape[1] == 0:  # no ranked document at all: one column of padding
        lists = RankedLists(np.full((lists.n, 1), np.nan), lists.num_ret, lists.levels, lists.level_counts)
    own = [mt for mt in metrics if mt.family in REGISTRY]
    out: dict[str, FloatArray] = {}
    if own:  # the library's kernels over the lists: one engine for batch_ndcg, report and eval
        r = _trec_gains.ranking(lists, k_max([mt.k for mt in own]), "compute_on_lists")
        out = {mt.name: REGISTRY[mt.family](r, mt.k, gain, t, empty) for mt in own}
    ctx = _trec_kernels.Context(lists, t)
    for mt in metrics:
        if mt.family not in REGISTRY:
            value = _on_lists(ctx, mt)
            out[mt.name] = value if empty == "zero" else np.where(ctx.num_rel > 0, value, np.nan)
    return {mt.name: out[mt.name] for mt in metrics}


def _on_lists(ctx: Any, mt: Metric) -> FloatArray:
    """One trec_eval family over ``ctx``'s lists (empty: 0)."""
    col = trec_measures.trec_column_for(mt.family, mt.k)
    if col is None:  # pragma: no cover - parse_metric admits only families that have one
        raise ValueError(f"compute_on_lists: no trec_eval measure for {mt.name!r}")
    return np.asarray(trec_measures.compute([col], ctx.lists, relevance_level=ctx.relevance_level)[col.name])
