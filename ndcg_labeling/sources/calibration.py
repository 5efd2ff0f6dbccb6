"""``calibrate --judge NAME``: how far an automatic judge (or any grader) can stand in for people.

Two comparisons, overall and per query type:

* **labels**: on the (query, document) pairs both the judge and people labelled, the judge's grade
  against the team's **stored** labels in force (issue 28): the newest adjudication, else the stored
  consensus value (``ndcg-labeling consensus``) rounded to the nearest grade. So the graders that
  ``consensus --exclude-untrusted`` left out are left out here too, and a grader ``graders quality``
  marks untrusted no longer sways the comparison (before issue 28 this was a new median of every
  human grade). Labels a judge filled (``consensus --judge-fills``) never count. Quadratic-weighted
  Cohen's kappa (``kappa``, also ``kappa_quadratic``: the one the gate uses) and unweighted Cohen's
  kappa (``kappa_unweighted``, reported, not gated: a judge often one grade off passes the first and
  fails the second), exact agreement, mean absolute error, the confusion matrix (rows people, columns the
  judge) and n;
* **system ranking**: every stored system scored with ``metric`` (default ndcg@10) once with the human
  labels and once with the judge's, on the same pairs (the other documents count as unjudged, i.e.
  not relevant); Kendall's tau-b between the systems' mean scores under the two, and the largest
  change of a system's rank.

The gate's measures (issue 47; docs/judges.md "Reading the judge gate"), each row: the two kappas and a
**binarized** kappa (relevant = grade >= :data:`RELEVANT_FROM`; unweighted on the two classes), and the
**leniency** (mean of judge - human in grades), each with a 95 % percentile bootstrap interval that
resamples queries (:data:`REPLICATES` resamples, seed 0; none on fewer than :data:`MIN_INTERVAL_QUERIES` queries); **tau_ap** (AP correlation, Yilmaz et al. 2008:
people's order as the truth), Kendall's tau and tau_ap over the top :data:`TOP_SYSTEMS` systems of
people's order, and **per-query tau** (each query's systems under the two labels: mean, standard
deviation and the number of queries where both orders are defined). The verdict still gates on the
quadratic-weighted kappa and tau; a judge whose newest ``judge canary`` failed is refused before anything
is measured, and the report carries the judge's newest canary and self-consistency check
(:mod:`ndcg_labeling.sources.judge_gate`). Each verdict records the model and prompt template hash of
the judge labels it measured: it holds for those only (``consensus --judge-fills`` refuses labels of
another model or prompt).

The statistics are the kernels of :mod:`ndcg_labeling.quality`; the metric is
:func:`ndcg_labeling.metrics.compute_metrics`. Every verdict is stored (:func:`store_verdicts`); the
newest per (judge, query type) gates ``consensus --judge-fills``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import reads
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.agreement import NO_QUERY_TYPE, selection_scale
from ndcg_labeling.labels.lookups import require_grader
from ndcg_labeling.quality import (
    confusion_matrix,
    judge_agreement,
    kendall_tau_b,
    rank_positions,
    tau_ap,
    weighted_kappa,
)
from ndcg_labeling.sources import judge_gate as gate

MIN_KAPPA = 0.6  # "substantial" agreement (Landis and Koch 1977) or better
MIN_TAU = 0.8  # system orders this close count as the same ranking (Voorhees 2000 used 0.9 for qrels sets)
MIN_TYPE_PAIRS = 20  # a query type with this many pairs has a say in the overall verdict
KAPPA_WEIGHTS = "quadratic"  # the weighting of the kappa the gate uses (``kappa``), named wherever it is shown
_SPAN = np.int64(1) << np.int64(31)
RELEVANT_FROM = 2  # binarized kappa: relevant = grade >= 2 (TREC DL's binary cut on its 0-3 scale), on every scale
TOP_SYSTEMS = 5  # the top of the human order where a judge's order fails first (Clarke and Dietz 2024)
MIN_INTERVAL_QUERIES = 5  # fewer queries: no interval (a bootstrap over 2 or 3 queries says nothing)
REPLICATES = 1000  # bootstrap resamples of queries behind each 95 % interval (seed 0: the same data, the same interval)

CALIBRATION_COLUMNS: tuple[str, ...] = (
    "scope", "n", "kappa", "exact_agreement", "mae", "n_queries", "n_systems", "tau", "max_rank_change",
    "max_rank_change_system", "verdict", "kappa_quadratic", "kappa_unweighted",
    # the gate's measures (issue 47), after the columns that were there before
    "kappa_quadratic_low", "kappa_quadratic_high", "kappa_unweighted_low", "kappa_unweighted_high", "kappa_binary",
    "kappa_binary_low", "kappa_binary_high", "leniency", "leniency_low", "leniency_high", "tau_ap", "tau_top5",
    "tau_ap_top5", "query_tau_mean", "query_tau_sd", "query_tau_n",
)  # the csv columns: each new one after the old, so the columns before keep their places
@dataclass
class CalibrationReport:
    judge: str
    batch: str | None
    by: str | None
    metric: str
    scale: str
    rows: list[dict[str, Any]]
    verdicts: list[str] = field(default_factory=list)
    model: str | None = None  # the model and prompt template of the judge labels measured (None: no provenance)
    template_sha256: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)  # the judge's newest canary and recheck

    def as_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "batch": self.batch, "by": self.by, "metric": self.metric, "scale": self.scale,
                "min_kappa": MIN_KAPPA, "kappa_weights": KAPPA_WEIGHTS, "min_tau": MIN_TAU,
                "relevant_from": RELEVANT_FROM, "top_systems": TOP_SYSTEMS, "interval": "95% percentile bootstrap over "
                f"queries, {REPLICATES} resamples", "model": self.model, "template_sha256": self.template_sha256,
                "checks": self.checks, "rows": self.rows, "verdicts": self.verdicts}


@dataclass
class _Pairs:
    """The pairs both labelled: keys (query * span + document), human and judge grades, query types."""

    keys: NDArray[np.int64]
    human: NDArray[np.int64]
    judge: NDArray[np.int64]
    qtype: NDArray[np.str_]
    values: tuple[int, ...]
    scale: str
    judgment_ids: NDArray[np.int64]  # the judge's judgment behind each pair


def _num(value: float) -> float | None:
    return None if math.isnan(value) else round(float(value), 4)


def _stored_human_labels(*, session: Session, scale: str, batch: str | None) -> tuple[NDArray[np.int64],
                                                                                      NDArray[np.int64]]:
    """The team's stored labels in force on ``scale`` (keys query * span + document, sorted; grades):
    the newest adjudication, else the stored consensus value rounded to the nearest grade. Labels a
    judge filled (``consensus --judge-fills``) are not people's and are left out; with ``batch``, only
    that batch's consensus labels (and adjudications of their pairs) count."""
    label = m.ConsensusLabel
    stmt = select(label.query_id, label.document_id, label.value).where(
        label.value.is_not(None), label.filled_by.is_(None), label.scale == scale)
    if batch is not None:
        stmt = stmt.where(label.batch == batch)
    cons = reads.fetch_array(stmt, 3, session=session, dtype=np.float64)
    keys = cons[:, 0].astype(np.int64) * _SPAN + cons[:, 1].astype(np.int64)
    values = np.rint(cons[:, 2]).astype(np.int64)
    rows = reads.effective_label_rows(session=session)  # the one rule of the label in force
    adj_keys = (rows.query * _SPAN + rows.document)[rows.adjudicated]
    adj_values = np.rint(rows.value[rows.adjudicated]).astype(np.int64)
    if batch is not None:
        inside = np.isin(adj_keys, keys)
        adj_keys, adj_values = adj_keys[inside], adj_values[inside]
    keep = ~np.isin(keys, adj_keys)
    keys, values = np.concatenate([keys[keep], adj_keys]), np.concatenate([values[keep], adj_values])
    order = np.argsort(keys, kind="stable")
    return keys[order], values[order]


def _common_pairs(judge: m.Grader, *, batch: str | None, session: Session) -> _Pairs:
    """The team's stored labels (:func:`_stored_human_labels`) and the judge's newest grade on the pairs
    both labelled."""
    scale = selection_scale(session=session, batch=batch, include_models=True, exclude_graders=[])
    human_keys, human_values = _stored_human_labels(session=session, scale=scale.name, batch=batch)
    if human_keys.size == 0:
        raise NotFoundError(f"no stored consensus labels on scale {scale.name}"
                            f"{f' of batch {batch!r}' if batch else ''} to calibrate against: run `ndcg-labeling "
                            f"consensus{f' --batch {batch}' if batch else ''}` first (with --exclude-untrusted to "
                            f"leave out the graders gold items mark untrusted)")
    j = m.Judgment
    # the judge's grades are matched on the batch's pairs, whatever batch (or none) they were imported with
    stmt = select(j.query_id, j.document_id, j.grade, j.id).where(j.grader_id == judge.id, j.scale == scale.name)
    rows = reads.fetch_array(stmt.order_by(j.id), 4, session=session, dtype=np.int64)
    judge_keys = rows[:, 0] * _SPAN + rows[:, 1]
    # the newest grade of each pair: the last in id order
    uniq, last_rev = np.unique(judge_keys[::-1], return_index=True)
    judge_grade = rows[len(rows) - 1 - last_rev, 2]
    common, hi, ji = np.intersect1d(human_keys, uniq, assume_unique=True, return_indices=True)
    if common.size == 0:
        raise NotFoundError(f"no (query, document) labelled both by {judge.name} and by the stored consensus on scale "
                            f"{scale.name}{f' in batch {batch!r}' if batch else ''}: nothing to calibrate")
    qtypes = {qid: (t or NO_QUERY_TYPE) for qid, _ext, t in reads.query_rows(session=session)}
    qtype = np.array([qtypes[int(q)] for q in (common // _SPAN)], dtype=str)
    return _Pairs(keys=common, human=human_values[hi], judge=judge_grade[ji].astype(np.int64),
                  qtype=qtype, values=scale.values, scale=scale.name,
                  judgment_ids=rows[len(rows) - 1 - last_rev, 3][ji].astype(np.int64))


def _per_query_scores(pairs: _Pairs, labels: NDArray[np.int64], rank_rows: NDArray[np.int64],
                      system_ids: list[int], metric: Any, queries: NDArray[np.int64]) -> NDArray[np.float64]:
    """``(systems, queries)`` metric values with ``labels`` on ``pairs.keys`` as qrels (missing list: 0)."""
    from ndcg_labeling.metrics import compute_metrics

    nq = queries.size
    lab_q = pairs.keys // _SPAN
    row_of_lab = np.searchsorted(queries, lab_q)
    width_ideal = int(np.bincount(row_of_lab, minlength=nq).max())
    ideal = np.full((nq, width_ideal), np.nan)
    order = np.argsort(row_of_lab, kind="stable")
    starts = np.searchsorted(row_of_lab[order], np.arange(nq))
    ideal[row_of_lab[order], np.arange(order.size) - starts[row_of_lab[order]]] = labels[order]
    out = np.zeros((len(system_ids), nq))
    for s, sid in enumerate(system_ids):
        rows = rank_rows[rank_rows[:, 0] == sid]
        qrow = np.searchsorted(queries, rows[:, 1])
        keep = queries[np.minimum(qrow, nq - 1)] == rows[:, 1]
        rows, qrow = rows[keep], qrow[keep]
        if rows.size == 0:
            continue
        first = np.r_[0, np.flatnonzero(np.diff(qrow)) + 1]
        pos = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
        width = int(pos.max()) + 1
        scores = np.full((nq, width), np.nan)
        scores[qrow, pos] = width - pos  # the stored rank order
        label_arr = np.full((nq, width), np.nan)
        k = rows[:, 1] * _SPAN + rows[:, 2]
        hit = np.minimum(np.searchsorted(pairs.keys, k), pairs.keys.size - 1)
        found = pairs.keys[hit] == k
        label_arr[qrow[found], pos[found]] = labels[hit[found]]
        values = compute_metrics([metric], scores, label_arr, ideal_labels=ideal, empty="zero")[metric.name]
        out[s] = np.asarray(values, dtype=np.float64)
    return out


def _label_stats(pairs: _Pairs, idx: NDArray[np.int64]) -> dict[str, Any]:
    h, jg = pairs.human[idx], pairs.judge[idx]
    gated = _num(weighted_kappa(h, jg, pairs.values, weights=KAPPA_WEIGHTS))
    gate = judge_agreement(h, jg, pairs.keys[idx] // _SPAN, pairs.values, relevant_from=RELEVANT_FROM,
                           replicates=REPLICATES, seed=0)
    out = {"n": int(idx.size), "kappa": gated, "kappa_quadratic": gated,
            "kappa_unweighted": _num(weighted_kappa(h, jg, pairs.values, weights="none")),
            "exact_agreement": _num(float(np.mean(h == jg))), "mae": _num(float(np.mean(np.abs(h - jg)))),
            "confusion": confusion_matrix(h, jg, pairs.values).tolist(), "grades": list(pairs.values),
            "kappa_quadratic_low": _num(gate.kappa_quadratic_ci[0]), "kappa_quadratic_high": _num(gate.kappa_quadratic_ci[1]),
            "kappa_unweighted_low": _num(gate.kappa_unweighted_ci[0]),
            "kappa_unweighted_high": _num(gate.kappa_unweighted_ci[1]), "kappa_binary": _num(gate.kappa_binary),
            "kappa_binary_low": _num(gate.kappa_binary_ci[0]), "kappa_binary_high": _num(gate.kappa_binary_ci[1]),
            "leniency": _num(gate.leniency), "leniency_low": _num(gate.leniency_ci[0]),
            "leniency_high": _num(gate.leniency_ci[1])}
    if np.unique(pairs.keys[idx] // _SPAN).size < MIN_INTERVAL_QUERIES:
        out.update({k: None for k in out if k.endswith(("_low", "_high"))})
    return out


def _ranking_stats(human: NDArray[np.float64], judge: NDArray[np.float64], cols: NDArray[np.int64],
                   names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"n_queries": int(cols.size), "n_systems": len(names), "tau": None, "max_rank_change": None,
                           "max_rank_change_system": None, "system_means": {}, "tau_ap": None, "tau_top5": None,
                           "tau_ap_top5": None, "query_tau_mean": None, "query_tau_sd": None, "query_tau_n": 0}
    if not names or cols.size == 0:
        return out
    mh, mj = human[:, cols].mean(axis=1), judge[:, cols].mean(axis=1)
    change = np.abs(rank_positions(mh) - rank_positions(mj))
    worst = int(np.argmax(change))
    top = np.argsort(-mh, kind="stable")[:TOP_SYSTEMS]  # the top systems under people's labels
    per_query = np.array([kendall_tau_b(human[:, c], judge[:, c]) for c in cols])
    per_query = per_query[~np.isnan(per_query)]  # a query where every system scores the same has no order
    out.update(tau_ap=_num(tau_ap(mh, mj)), tau_top5=_num(kendall_tau_b(mh[top], mj[top])),
               tau_ap_top5=_num(tau_ap(mh[top], mj[top])),
               query_tau_mean=_num(float(per_query.mean())) if per_query.size else None,
               query_tau_sd=_num(float(per_query.std(ddof=1))) if per_query.size > 1 else None,
               query_tau_n=int(per_query.size))
    out.update(tau=_num(kendall_tau_b(mh, mj)), max_rank_change=int(change[worst]),
               max_rank_change_system=names[worst] if change[worst] > 0 else None,
               system_means={n: {"human": round(float(a), 6), "judge": round(float(b), 6)}
                             for n, a, b in zip(names, mh, mj, strict=True)})
    return out


def _agrees(row: dict[str, Any]) -> bool:
    kappa, tau = row["kappa"], row["tau"]
    return kappa is not None and kappa >= MIN_KAPPA and (tau is None or tau >= MIN_TAU)


def _verdict(judge: str, row: dict[str, Any], failing: list[str] | None = None) -> str:
    """The verdict of a row; the ``all`` row agrees only when no query type with enough pairs
    (``failing``: those that do not agree) says otherwise."""
    kappa, tau, plain = row["kappa"], row["tau"], row.get("kappa_unweighted")
    shown = f"{KAPPA_WEIGHTS}-weighted kappa {kappa:.2f}" if kappa is not None else \
        f"{KAPPA_WEIGHTS}-weighted kappa undefined"
    shown += f" (unweighted {plain:.2f})" if plain is not None else ""
    if tau is not None:  # with few systems tau is coarse (3 systems: one swapped pair is tau 0.33)
        shown += f", tau {tau:.2f} over {row['n_systems']} systems"
    shown += f", n {row['n']}"
    where = "overall" if row["scope"] == "all" else f"on {row['scope']}"
    if _agrees(row) and failing:
        return (f"do not use {judge} overall: it agrees with people on the whole ({shown}) but not on "
                f"{', '.join(failing)} (see the rows per query type)")
    if _agrees(row):
        return f"{judge} agrees with people {where} ({shown})"
    # "at all" read as "never" next to a per-type row that agrees: name the scope instead
    where = "over all query types together" if row["scope"] == "all" else f"for {row['scope']}"
    return f"do not use {judge} {where} ({shown})"


def calibrate(*, session: Session, judge: str, batch: str | None = None, by: str | None = None,
              metric: str = "ndcg@10") -> CalibrationReport:
    """The judge against the human consensus and against the human system ranking (see the module
    docstring): the ``all`` row first, then one row per query type with ``by="query-type"``; a
    verdict per row (quadratic-weighted kappa >= 0.6 and tau >= 0.8, or no systems to rank)."""
    from ndcg_labeling.metrics import parse_metric

    if by not in (None, "query-type"):
        raise NdcgLabelingError(f"--by must be query-type, got {by!r}")
    try:
        parsed = parse_metric(metric)
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    judge_obj = require_grader(judge, session=session)
    gate.require_canary_passed(judge_obj, session=session)
    pairs = _common_pairs(judge_obj, batch=batch, session=session)
    model, template_sha256 = gate.measured_provenance(pairs.judgment_ids, session=session)
    systems = reads.system_ids(session=session)
    names = sorted(systems)
    queries = np.unique(pairs.keys // _SPAN)
    rank_rows = reads.ranking_rows([systems[s] for s in names], parsed.k, session=session) if names else \
        np.empty((0, 3), np.int64)
    ids = [systems[s] for s in names]
    human = _per_query_scores(pairs, pairs.human, rank_rows, ids, parsed, queries)
    judged = _per_query_scores(pairs, pairs.judge, rank_rows, ids, parsed, queries)
    query_type = {int(q): t for q, t in zip(pairs.keys // _SPAN, pairs.qtype, strict=True)}
    # every query type is looked at, shown or not: the overall verdict needs each one's (issue 35)
    scopes = [("all", np.arange(pairs.keys.size))]
    scopes += [(str(t), np.flatnonzero(pairs.qtype == t)) for t in np.unique(pairs.qtype)]
    rows = []
    for scope, idx in scopes:
        cols = np.arange(queries.size) if scope == "all" else np.flatnonzero(
            np.array([query_type[int(q)] == scope for q in queries], dtype=bool))
        row = {"scope": scope, **_label_stats(pairs, idx), **_ranking_stats(human, judged, cols, names)}
        row["verdict"] = _verdict(judge_obj.name, row)
        rows.append(row)
    failing = [r["scope"] for r in rows[1:] if r["n"] >= MIN_TYPE_PAIRS and not _agrees(r)] if len(rows) > 2 else []
    rows[0]["verdict"] = _verdict(judge_obj.name, rows[0], failing)
    store_verdicts(judge_obj, rows, batch=batch, session=session,  # every query type's, shown or not
                   measured=(model, template_sha256))
    if by != "query-type":
        rows = rows[:1]
    return CalibrationReport(judge=judge_obj.name, batch=batch, by=by, metric=parsed.name, scale=pairs.scale,
                             rows=rows, verdicts=[r["verdict"] for r in rows], model=model,
                             template_sha256=template_sha256, checks=gate.newest_checks(judge_obj, session=session))


def store_verdicts(judge: m.Grader, rows: list[dict[str, Any]], *, batch: str | None, session: Session,
                   measured: tuple[str | None, str | None] = (None, None)) -> None:
    """Store one verdict per row (scope ``all`` or a query type) in the caller's transaction, with the model
    and prompt template hash of the labels measured (``measured``)."""
    now = m.utcnow()
    session.add_all([m.CalibrationVerdict(grader_id=judge.id, batch=batch or "", scope=str(r["scope"]),
                                          agrees=_agrees(r), kappa=r["kappa"], tau=r["tau"], n=int(r["n"]),
                                          verdict=r["verdict"], created_at=now, model=measured[0],
                                          template_sha256=measured[1], kappa_ci_low=r.get("kappa_quadratic_low"),
                                          kappa_ci_high=r.get("kappa_quadratic_high")) for r in rows])
    session.flush()


def agreeing_query_types(judge: m.Grader, *, session: Session) -> set[str]:
    """The query types whose newest stored verdict for ``judge`` says it agrees with people."""
    v = m.CalibrationVerdict
    rows = session.execute(select(v.scope, v.agrees).where(v.grader_id == judge.id, v.scope != "all")
                           .order_by(v.id)).all()
    newest: dict[str, bool] = {}
    for scope, agrees in rows:
        newest[str(scope)] = bool(agrees)
    return {scope for scope, agrees in newest.items() if agrees}
