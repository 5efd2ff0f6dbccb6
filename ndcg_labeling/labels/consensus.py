"""Consensus, adjudication and qrels export: from stored judgments to one label per (query, document).

* :func:`run_consensus` aggregates the selected judgments (a batch, or all) with the kernel
  :func:`ndcg_labeling.consensus.consensus` and *replaces* the consensus of that scope: it deletes the
  scope's rows (every label of the batch and every label of a (query, document) the batch grades, or
  every label without a batch) and bulk-inserts the new ones, in the caller's transaction.
* :func:`set_adjudication` records a person's final grade; rows are never updated, the newest row of
  a (query, document) is in force.
* :func:`effective_labels` is the label each (query, document) ends up with: the newest adjudication,
  else the consensus value. The report and :func:`export_qrels` read it.

Grade selection, the one-scale rule and grades superseded across batches are those of
:func:`ndcg_labeling.labels.agreement.load_grades`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import and_, delete, exists, select
from sqlalchemy.orm import Session

from ndcg_labeling.choices import ConsensusMethod, DawidSkenePoint, QrelsRounding, TieRule, parse_choice
from ndcg_labeling.consensus import consensus
from ndcg_labeling.db import models as m
from ndcg_labeling.db import reads
from ndcg_labeling.db import repository as repo
from ndcg_labeling.db.locks import serialize
from ndcg_labeling.errors import AdjudicationConflict, NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.agreement import GradeSelection, left_out_judgments, load_grades
from ndcg_labeling.labels.overview import flagged_items as flagged_items  # Core reads, no ORM (issue 17)
from ndcg_labeling.scales import get_scale

if TYPE_CHECKING:
    import pandas as pd

Rounding = QrelsRounding | Literal["half-up", "floor"]
ROUNDINGS: tuple[str, ...] = tuple(r.value for r in QrelsRounding)

#: Columns of :func:`effective_labels`, a stable interface (the report reads them).
EFFECTIVE_COLUMNS: tuple[str, ...] = ("query_id", "doc_id", "value", "query_type", "source")

LABEL_COLUMNS = ["query_id", "document_id", "value", "method", "scale", "batch", "n_graders", "spread",
                 "needs_adjudication", "reason", "created_at", "filled_by"]


@dataclass
class ConsensusSummary:
    """What :func:`run_consensus` wrote; ``str()`` is the summary the CLI prints."""

    method: str
    scale: str
    batch: str | None
    items: int
    flagged: int
    replaced: int
    n_grades: int
    by_reason: dict[str, int] = field(default_factory=dict)
    n_superseded: int = 0
    excluded: dict[str, int] = field(default_factory=dict)  # untrusted grader -> judgments left out
    models_left_out: dict[str, int] = field(default_factory=dict)  # model grader -> judgments left out
    behavior_left_out: dict[str, int] = field(default_factory=dict)  # behavior grader -> judgments left out
    exclude_untrusted: bool = False
    exclude_undecided: bool = False
    exclusion_recorded: bool = False  # the exclusion came from the scope's recorded setting, not this run
    recalibrated: dict[str, int] = field(default_factory=dict)  # grader -> ordinal shift applied
    recalibration_changed: int = 0  # labels whose value the shifts changed
    judge_fill: Any = None  # a JudgeFill with --judge-fills (sources/judge_fill.py)

    def __str__(self) -> str:
        scope = f"batch {self.batch!r}" if self.batch is not None else "all judgments"
        text = (f"consensus ({self.method}, scale {self.scale}) of {scope}: {self.items} items from "
                f"{self.n_grades} grades, {self.flagged} flagged for adjudication, {self.replaced} previous "
                f"labels replaced")
        if self.n_superseded:
            text += f"; {self.n_superseded} older grades superseded by a newer grade of the same grader"
        who = "untrusted or undecided" if self.exclude_undecided else "untrusted"
        if self.excluded:
            text += (f"; left out {sum(self.excluded.values())} judgments of {len(self.excluded)} {who} graders "
                     f"({', '.join(f'{k}: {v}' for k, v in self.excluded.items())})")
        elif self.exclude_untrusted:
            text += f"; no grader is {who}: nothing left out"
        if self.exclusion_recorded:
            text += ("; leaving out untrusted graders is the recorded setting of this scope "
                     "(`consensus --include-untrusted` counts them again)")
        if self.recalibrated:
            text += (f"; recalibrated {len(self.recalibrated)} biased graders from their gold answers "
                     f"({', '.join(f'{k}: {v:+d}' for k, v in self.recalibrated.items())}), "
                     f"{self.recalibration_changed} labels changed")
        for kind, flag, left_out in (("model", "--include-models", self.models_left_out),
                                     ("behavior", "--include-behavior", self.behavior_left_out)):
            if left_out:
                text += (f"; {sum(left_out.values())} judgments of {kind} graders not counted "
                         f"({', '.join(left_out)}; {flag} counts them)")
        if self.judge_fill is not None:
            text += "; " + _judge_fill_text(self.judge_fill)
        return text

    def as_rows(self) -> list[dict[str, Any]]:
        """The summary as rows ``reason, items`` (the ``all``-items row first)."""
        rows: list[dict[str, Any]] = [{"reason": "(all items)", "items": self.items},
                                      {"reason": "(flagged)", "items": self.flagged}]
        rows += [{"reason": r, "items": n} for r, n in sorted(self.by_reason.items())]
        return rows

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "scale": self.scale, "batch": self.batch, "items": self.items,
                "flagged": self.flagged, "replaced": self.replaced, "n_grades": self.n_grades,
                "by_reason": dict(self.by_reason), "n_superseded": self.n_superseded,
                "exclude_untrusted": self.exclude_untrusted, "exclude_undecided": self.exclude_undecided,
                "exclusion_recorded": self.exclusion_recorded, "excluded": dict(self.excluded),
                "recalibrated": dict(self.recalibrated), "recalibration_changed": self.recalibration_changed,
                "n_excluded": sum(self.excluded.values()), "models_left_out": dict(self.models_left_out),
                "behavior_left_out": dict(self.behavior_left_out),
                "judge_fills": self.judge_fill.as_dict() if self.judge_fill is not None else None}


def _judge_fill_text(fill: Any) -> str:
    filled = ", ".join(f"{t}: {n}" for t, n in sorted(fill.by_type.items())) or "none"
    text = f"{int(fill.filled.sum())} items filled by judge {fill.judge} ({filled})"
    if fill.left_short:
        text += ("; items left short, no 'agrees' verdict for their query type: "
                 + ", ".join(f"{t}: {n}" for t, n in sorted(fill.left_short.items())))
    return text


def _floats_or_none(values: NDArray[np.float64]) -> list[float | None]:
    """``values`` as a list of floats with NaN as None (SQL NULL), without a Python call per value."""
    nan = np.isnan(values)
    if not nan.any():
        return values.tolist()  # type: ignore[no-any-return]
    out = values.astype(object)
    out[nan] = None
    return out.tolist()  # type: ignore[no-any-return]


def run_consensus(*, session: Session, batch: str | None = None, method: str = "median", tie: str = "low",
                  min_graders: int = 2, max_spread: int | None = 1, point: str = "mean",
                  progress: Callable[[int], None] | None = None, include_models: bool = False,
                  exclude_untrusted: bool | None = None, min_accuracy: float | None = None,
                  exclude_undecided: bool | None = None, recalibrate: bool = False,
                  fill: Callable[[GradeSelection], tuple[GradeSelection, Any]] | None = None,
                  include_behavior: bool = False) -> ConsensusSummary:
    """Compute and store one consensus label per graded (query, document) of the selection.

    ``batch``: only that batch's grades count and the labels are stored with that batch name; ``None``:
    every grade counts (a pair graded in two batches pools both) and labels get batch ``""``.
    Replaces the previous labels of the scope (see the module docstring). Flags: fewer than
    ``min_graders`` grades, ``max - min`` above ``max_spread`` (``None``: no spread check).
    ``progress(n)`` is called with the number of labels written so far.

    Only human graders count unless ``include_models``. ``exclude_untrusted``: graders whose trust
    (over all their gold answers on the scale, see :func:`ndcg_labeling.labels.quality.grader_trust`)
    is ``false`` at ``min_accuracy`` are left out, and with ``exclude_undecided`` the undecided ones too.
    The setting is **recorded** for the scope (:class:`~ndcg_labeling.db.models.ConsensusSetting`): a
    later run that passes ``None`` honours it until a run passes ``exclude_untrusted=False``. The
    summary names the graders and their judgments left out, and says when the setting was recorded;
    ``recalibrate`` shifts biased graders' grades (:func:`ndcg_labeling.labels.quality.grader_shifts`)."""
    try:
        method_c = parse_choice(ConsensusMethod, method, "method")
        tie_c = parse_choice(TieRule, tie, "tie rule")
        point_c = parse_choice(DawidSkenePoint, point, "point")
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    _check_limits(min_graders, max_spread)
    serialize("consensus", batch or "", session=session)  # two runs on one scope: one after the other
    rule = _exclusion_rule(batch, exclude_untrusted, exclude_undecided, min_accuracy, session=session)
    shifts = _shifts(batch, include_models, session=session) if recalibrate else {}
    untrusted: dict[int, str] = {}
    if rule.exclude_untrusted:
        from ndcg_labeling.labels.quality import untrusted_graders

        untrusted = untrusted_graders(session=session, batch=batch, min_accuracy=rule.min_accuracy,
                                      include_undecided=rule.exclude_undecided,
                                      shifts={g: v for g, (_, v) in shifts.items()})
    rule.excluded = sorted(untrusted)
    sel = load_grades(session=session, batch=batch, include_models=include_models, exclude_graders=list(untrusted),
                      include_behavior=include_behavior)
    excluded = left_out_judgments(session=session, batch=batch, include_models=True, exclude_graders=list(untrusted),
                                  include_behavior=True)
    models = left_out_judgments(session=session, batch=batch, include_models=include_models, include_behavior=True)
    behavior = left_out_judgments(session=session, batch=batch, include_models=True, include_behavior=include_behavior)
    filled = None
    if fill is not None:  # a step that adds grades before the vote (``--judge-fills``: sources.judge_fill)
        sel, filled = fill(sel)

    def combine(grades: NDArray[np.int64]) -> Any:
        return consensus(sel.item, sel.grader, grades, sel.scale.values, method_c, tie=tie_c,
                         min_graders=min_graders, max_spread=max_spread, point=point_c, n_items=sel.n_items)

    result, recalibrated, changed = _recalibrated(sel, shifts, combine)

    replaced = _delete_previous_labels(batch, session=session)
    label = m.ConsensusLabel
    now = repo.db_datetime(session, m.utcnow())
    n = sel.n_items
    reasons = [r if r else None for r in result.reason.tolist()]
    rows = zip(sel.item_query_id.tolist(), sel.item_document_id.tolist(),
               _floats_or_none(result.value), [method] * n, [sel.scale.name] * n,
               [batch or ""] * n, result.n_graders.tolist(), _floats_or_none(result.spread),
               result.needs_adjudication.tolist(), reasons, [now] * n, _filled_by(filled, n), strict=True)
    written = repo.bulk_insert(label, LABEL_COLUMNS, rows, session=session, progress=progress)

    by_reason = Counter(part for text in reasons if text for part in text.split("; "))
    return ConsensusSummary(method=method, scale=sel.scale.name, batch=batch, items=written,
                            flagged=int(result.needs_adjudication.sum()), replaced=int(replaced),
                            n_grades=sel.n_grades, by_reason=dict(by_reason), n_superseded=sel.n_superseded,
                            excluded=excluded, models_left_out=models, behavior_left_out=behavior, exclude_untrusted=rule.exclude_untrusted,
                            exclude_undecided=rule.exclude_undecided,
                            exclusion_recorded=exclude_untrusted is None and rule.exclude_untrusted,
                            recalibrated=recalibrated, recalibration_changed=changed, judge_fill=filled)


def _delete_previous_labels(batch: str | None, *, session: Session) -> int:
    """Delete the scope's previous labels (every label; with ``batch``, the batch's and those of its
    pairs); returns how many."""
    label = m.ConsensusLabel
    if batch is None:
        stmt = delete(label)
    else:
        in_batch = exists().where(and_(m.Judgment.batch == batch, m.Judgment.query_id == label.query_id,
                                       m.Judgment.document_id == label.document_id))
        stmt = delete(label).where((label.batch == batch) | in_batch)
    deleted = session.execute(stmt.execution_options(synchronize_session=False))
    return int(getattr(deleted, "rowcount", 0) or 0)


def _check_limits(min_graders: int, max_spread: int | None) -> None:
    if min_graders < 1:
        raise NdcgLabelingError(f"min_graders must be at least 1, got {min_graders}")
    if max_spread is not None and max_spread < 0:
        raise NdcgLabelingError(f"max_spread must be non-negative, got {max_spread}")


def _recalibrated(sel: Any, shifts: dict[int, tuple[str, int]], combine: Callable[[NDArray[np.int64]], Any]
                  ) -> tuple[Any, dict[str, int], int]:
    """The consensus of the grades (shifted by ``shifts`` when any, clipped to the scale), the shifts of
    the graders in the selection by name, and how many labels the shifts changed."""
    result = combine(sel.grade)
    if not shifts:
        return result, {}, 0
    by_code = np.array([shifts.get(int(g), ("", 0))[1] for g in sel.grader_ids], dtype=np.int64)
    shifted = combine(np.clip(sel.grade + by_code[sel.grader], sel.scale.min_grade, sel.scale.max_grade))
    changed = int(np.count_nonzero(~np.isclose(result.value, shifted.value, equal_nan=True)))
    present = set(sel.grader_ids.tolist())
    return shifted, {name: v for g, (name, v) in sorted(shifts.items(), key=lambda kv: kv[1][0]) if g in present}, changed


def _shifts(batch: str | None, include_models: bool, *, session: Session) -> dict[int, tuple[str, int]]:
    """The biased graders' ordinal shifts from their gold answers on the selection's scale."""
    from ndcg_labeling.labels.agreement import selection_scale
    from ndcg_labeling.labels.quality import grader_shifts

    scale = selection_scale(session=session, batch=batch, include_models=include_models)
    return grader_shifts(session=session, scale=scale.name)


def _exclusion_rule(batch: str | None, exclude_untrusted: bool | None, exclude_undecided: bool | None,
                    min_accuracy: float | None, *, session: Session) -> m.ConsensusSetting:
    """The scope's recorded exclusion setting, changed by what this run passes (``None``: as recorded)."""
    scope = batch or ""
    rule = session.get(m.ConsensusSetting, scope)
    if rule is None:
        rule = m.ConsensusSetting(scope=scope, exclude_untrusted=False, exclude_undecided=False, min_accuracy=0.7,
                                  updated_at=m.utcnow())
        session.add(rule)
    if exclude_untrusted is not None:
        rule.exclude_untrusted = exclude_untrusted
        if not exclude_untrusted and exclude_undecided is None:
            rule.exclude_undecided = False
    if exclude_undecided is not None:
        rule.exclude_undecided = exclude_undecided
    if min_accuracy is not None:
        if not 0.0 <= min_accuracy <= 1.0:
            raise NdcgLabelingError(f"--min-accuracy must be between 0 and 1, got {min_accuracy}")
        rule.min_accuracy = min_accuracy
    if rule.exclude_undecided and not rule.exclude_untrusted:
        rule.exclude_untrusted = True  # leaving out the undecided graders and keeping the untrusted makes no sense
    rule.updated_at = m.utcnow()
    return rule


def _filled_by(fill: Any, n: int) -> list[str | None]:
    if fill is None:
        return [None] * n
    return [fill.judge if f else None for f in fill.filled.tolist()]


# --- adjudication --------------------------------------------------------------------------------


@dataclass
class AdjudicationRecord:
    query_id: str
    doc_id: str
    grade: int
    adjudicator: str
    scale: str
    previous: float | None  # the label in force before (adjudication or consensus value), None if none
    history: int  # adjudications of this pair, this one included
    version: int = 0  # this adjudication's id: what a later decision over it names as the version it saw

    def __str__(self) -> str:
        before = "no label" if self.previous is None else f"{self.previous:g}"
        return (f"adjudicated ({self.query_id}, {self.doc_id}) = {self.grade} on scale {self.scale} by "
                f"{self.adjudicator} (was {before}; {self.history} adjudication(s) on record)")


def _check_version(query_id: str, doc_id: str, grade: int, newest: Any, seen: int) -> None:
    """Refuse ``grade`` when a decision other than the one seen (``seen``: its id, 0 for none) is in force
    now and it says something else; the same grade is no conflict."""
    newest_id = 0 if newest is None else int(newest.id)
    if newest is None or newest_id == seen or float(newest.grade) == float(grade):
        return
    note = f" (note: {newest.note})" if newest.note else ""
    raise AdjudicationConflict(
        f"({query_id}, {doc_id}) was adjudicated meanwhile by {newest.adjudicator} as {newest.grade:g}{note}; "
        f"your grade {grade} was not saved: confirm to replace their decision",
        by=newest.adjudicator, grade=float(newest.grade), note=newest.note, version=newest_id)


def set_adjudication(query_id: str, doc_id: str, grade: int, *, adjudicator: str, session: Session,
                     note: str | None = None, seen: int | None = None, confirm: bool = False) -> AdjudicationRecord:
    """Record ``grade`` as the final label of (``query_id``, ``doc_id``) (external ids), by ``adjudicator``.

    The grade must be on the item's scale: the scale of its consensus label, else of its judgments.
    Always inserts a new row; the older rows stay as history. NotFoundError for an unknown query,
    document, or a pair without judgments or consensus.

    ``seen``: the version the adjudicator decided from (the id of the adjudication then in force, 0 for
    none; None: no check, as ``adjudicate set``). When another decision with a different grade was
    recorded since, :class:`AdjudicationConflict` names its adjudicator and grade and nothing is stored,
    unless ``confirm``.
    """
    adjudicator = adjudicator.strip()
    if not adjudicator:
        raise NdcgLabelingError("--by needs the adjudicator's name")
    # the query's row is locked (PostgreSQL): two leads deciding on one pair at once take turns, so the
    # second sees the first's decision in its version check
    qid = session.execute(select(m.Query.id).where(m.Query.external_id == query_id)
                          .with_for_update()).scalar_one_or_none()
    if qid is None:
        raise NotFoundError(f"unknown query {query_id!r}")
    did = session.execute(select(m.Document.id).where(m.Document.external_id == doc_id)).scalar_one_or_none()
    if did is None:
        raise NotFoundError(f"unknown document {doc_id!r}")
    current = session.execute(select(m.ConsensusLabel.scale, m.ConsensusLabel.value).where(
        (m.ConsensusLabel.query_id == qid) & (m.ConsensusLabel.document_id == did))).first()
    scale_name = current[0] if current is not None else None
    if scale_name is None:
        scales = session.execute(select(m.Judgment.scale).distinct().where(
            (m.Judgment.query_id == qid) & (m.Judgment.document_id == did))).scalars().all()
        if not scales:
            raise NotFoundError(f"({query_id}, {doc_id}) has no judgments and no consensus label: nothing to adjudicate")
        if len(scales) > 1:
            raise NdcgLabelingError(f"({query_id}, {doc_id}) is graded on several scales ({', '.join(sorted(scales))}); "
                                    f"run consensus for one batch first")
        scale_name = scales[0]
    scale = get_scale(scale_name)
    if not scale.contains(grade):
        raise NdcgLabelingError(f"grade {grade} is outside the scale {scale.name} ({scale.min_grade}..{scale.max_grade}) "
                                f"of ({query_id}, {doc_id})")
    history = session.execute(select(m.Adjudication.id, m.Adjudication.grade, m.Adjudication.adjudicator,
                                     m.Adjudication.note).where(
        (m.Adjudication.query_id == qid) & (m.Adjudication.document_id == did)).order_by(m.Adjudication.id.desc())
    ).all()
    if seen is not None and not confirm:
        _check_version(query_id, doc_id, grade, history[0] if history else None, seen)
    previous = history[0].grade if history else (current[1] if current is not None else None)
    row = m.Adjudication(query_id=qid, document_id=did, grade=float(grade), adjudicator=adjudicator, note=note)
    session.add(row)
    session.flush()
    return AdjudicationRecord(query_id, doc_id, grade, adjudicator, scale.name, previous, len(history) + 1, row.id)


# --- effective labels and qrels ----------------------------------------------------------------------


def effective_labels(*, session: Session) -> pd.DataFrame:
    """The label in force of every labelled (query, document), sorted by query_id then doc_id.

    Columns (stable; the report reads them): ``query_id`` and ``doc_id`` (external ids, str),
    ``value`` (float: the newest adjudication if any, else the consensus value), ``query_type`` (str or
    None), ``source`` (``"adjudication"`` or ``"consensus"``). A pair adjudicated without a consensus
    label is included; a consensus label without a value (no grades) is left out.
    """
    import pandas as pd

    label = m.ConsensusLabel
    rows = reads.effective_label_rows(session=session)  # the one rule of the label in force
    merged = pd.DataFrame({"qid": rows.query, "did": rows.document, "value": rows.value,
                           "source": np.where(rows.adjudicated, "adjudication", "consensus")})
    if merged.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c == "value" else object) for c in EFFECTIVE_COLUMNS})
    queries = pd.DataFrame(session.execute(select(m.Query.id, m.Query.external_id, m.Query.query_type).where(
        m.Query.id.in_(select(label.query_id).union(select(m.Adjudication.query_id))))).all(),
        columns=["qid", "query_id", "query_type"])
    docs = pd.DataFrame(session.execute(select(m.Document.id, m.Document.external_id).where(
        m.Document.id.in_(select(label.document_id).union(select(m.Adjudication.document_id))))).all(),
        columns=["did", "doc_id"])
    out = merged.merge(queries, on="qid").merge(docs, on="did")
    out = out.sort_values(["query_id", "doc_id"], kind="stable").reset_index(drop=True)
    out["query_type"] = out["query_type"].astype(object).where(out["query_type"].notna(), None)
    return out[list(EFFECTIVE_COLUMNS)]


@dataclass
class QrelsExport:
    text: str
    n_labels: int
    n_fractional: int
    warning: str | None = None


def _format_relevance(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else format(value, ".6g")


def export_qrels(*, session: Session, rounding: Rounding | None = None, keep_fraction: bool = False) -> QrelsExport:
    """The effective labels as TREC qrels text: ``qid 0 docid rel``, sorted by query id then doc id.

    A fractional value (mean, Dawid-Skene ``point=mean``) needs a rule: ``rounding="half-up"``
    (``floor(v + 0.5)``: 1.5 -> 2) or ``"floor"`` (1.5 -> 1); or ``keep_fraction`` writes it as is, with a
    warning, since trec_eval reads relevance as an integer. Neither: NdcgLabelingError naming the options.
    """
    if rounding is not None and rounding not in ROUNDINGS:
        raise NdcgLabelingError(f"unknown rounding {rounding!r}; use half-up or floor")
    if rounding is not None and keep_fraction:
        raise NdcgLabelingError("a rounding rule and keeping fractions exclude each other: choose one")
    labels = effective_labels(session=session)
    if labels.empty:
        raise NotFoundError("no labels to export: run `ndcg-labeling consensus` first")
    values = labels["value"].to_numpy(dtype=float)
    fractional = values != np.floor(values)
    n_frac = int(fractional.sum())
    warning = None
    if n_frac and rounding is None and not keep_fraction:
        i = int(np.flatnonzero(fractional)[0])
        raise NdcgLabelingError(
            f"{n_frac} labels are fractional (e.g. {labels['query_id'].iloc[i]} {labels['doc_id'].iloc[i]} = "
            f"{values[i]:g}); choose a rule with --round half-up|floor, or pass --keep-fraction")
    if rounding is not None:
        values = np.floor(values + (0.5 if rounding == "half-up" else 0.0))
    elif n_frac:
        warning = (f"{n_frac} fractional relevance values written as they are; trec_eval expects integer "
                   f"relevance (use --round half-up|floor for it)")
    lines = [f"{q} 0 {d} {_format_relevance(v)}\n"
             for q, d, v in zip(labels["query_id"].tolist(), labels["doc_id"].tolist(), values.tolist(), strict=True)]
    return QrelsExport(text="".join(lines), n_labels=len(lines), n_fractional=n_frac, warning=warning)
