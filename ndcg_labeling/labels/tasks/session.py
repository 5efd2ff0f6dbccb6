"""The interactive grading session's data operations: progress, the next open item, save a grade,
skip, undo. The grading terminal (and the web workspace) call each in its own short transaction."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import case, delete, func, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import ConflictError, NdcgLabelingError, NotFoundError
from ndcg_labeling.labels import gold
from ndcg_labeling.labels.lookups import require_grader
from ndcg_labeling.labels.overview import GraderProgress
from ndcg_labeling.labels.tasks._common import _open_item_rows, parse_task_grade, require_batch
from ndcg_labeling.scales import get_scale, parse_exact_grade

SESSION_SOURCE = "(grade session)"
DEFAULT_SKIP_REASON = "cannot judge"


@dataclass(frozen=True)
class GradingItem:
    """An item as the grader sees it: no rank, score, system or other grade."""

    batch: str
    item_id: str
    position: int
    query: str
    title: str
    body: str
    url: str


def _grader_assignment(batch_name: str, item_id: str, grader: str, *,
                       session: Session) -> tuple[m.GradingBatch, m.Grader, m.Assignment, m.BatchItem]:
    batch = require_batch(batch_name, session=session)
    grader_obj = require_grader(grader, session=session)
    item = session.execute(select(m.BatchItem).where(m.BatchItem.item_key == item_id,
                                                     m.BatchItem.batch_id == batch.id)).scalar_one_or_none()
    if item is None:
        raise NotFoundError(f"unknown item_id {item_id!r} in batch {batch.name!r}")
    assignment = session.execute(select(m.Assignment).where(m.Assignment.item_id == item.id,
                                                            m.Assignment.grader_id == grader_obj.id)).scalar_one_or_none()
    if assignment is None:
        raise NotFoundError(f"item_id {item_id!r} is not assigned to grader {grader!r}")
    return batch, grader_obj, assignment, item


def grader_progress(name: str, *, grader: str, session: Session) -> GraderProgress:
    """Done, skipped and total items of ``grader`` in batch ``name``."""
    batch = require_batch(name, session=session)
    grader_obj = require_grader(grader, session=session)
    a = m.Assignment
    done, skipped, total = session.execute(
        select(func.sum(case((a.status == "done", 1), else_=0)), func.sum(case((a.status == "skipped", 1), else_=0)),
               func.count()).where(a.batch_id == batch.id, a.grader_id == grader_obj.id)).one()
    if not total:
        raise NotFoundError(f"grader {grader!r} has no items in batch {batch.name!r}")
    return GraderProgress(grader, int(done or 0), int(skipped or 0), int(total))


def next_item(name: str, *, grader: str, session: Session) -> GradingItem | None:
    """The grader's first open item (in the grader's order), or None when nothing is left open."""
    batch = require_batch(name, session=session)
    grader_obj = require_grader(grader, session=session)
    rows = _open_item_rows(batch.id, grader_obj.id, session=session, limit=1)
    if not rows:
        return None
    r = rows[0]
    return GradingItem(batch.name, r["item_id"], r["position"], r["query"], r["title"], r["body"], r["url"])


def save_grade(name: str, item_id: str, grade: int | str, *, grader: str, session: Session,
               source_file: str = SESSION_SOURCE, exact: bool = False) -> int:
    """Store ``grader``'s grade of one item (a number or a grade name) and mark the item done.

    A grade already stored for the item in this batch is replaced. Returns the grade stored. With
    ``exact`` (the web) the grade must be written exactly as the scale writes it
    (:func:`ndcg_labeling.scales.parse_exact_grade`: ``"2"`` or a name, not ``"+2"``, ``"02"``, ``" 2 "``).
    """
    batch, grader_obj, assignment, item = _grader_assignment(name, item_id, grader, session=session)
    scale = get_scale(batch.scale)
    try:
        value = parse_exact_grade(grade, scale) if exact else parse_task_grade(grade, scale)
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    if gold.gold_item_of(item.id, session=session) is not None:  # an answer, never a judgment
        gold.store_answer(assignment, value, session=session, source_file=source_file)
        return value
    judgment = session.execute(select(m.Judgment).where(
        m.Judgment.grader_id == grader_obj.id, m.Judgment.query_id == item.query_id,
        m.Judgment.document_id == item.document_id, m.Judgment.batch == batch.name)).scalar_one_or_none()
    now = m.utcnow()
    if judgment is None:
        session.add(m.Judgment(grader_id=grader_obj.id, query_id=item.query_id, document_id=item.document_id,
                               grade=value, scale=scale.name, batch=batch.name, source_file=source_file,
                               created_at=now))
    else:  # the grade is made now, here: what a stale task file is compared with (tasks import)
        judgment.grade = value
        judgment.scale = scale.name
        judgment.source_file = source_file
        judgment.created_at = now
    assignment.status = "done"
    assignment.skip_reason = None
    assignment.updated_at = now
    session.flush()
    return value


def skip_item(name: str, item_id: str, *, grader: str, session: Session,
              reason: str = DEFAULT_SKIP_REASON) -> None:
    """Mark one of the grader's items skipped, with a reason (empty: "cannot judge").

    Refused for a gold item whose reference grade the grader was shown (:func:`gold.answer_stands`)."""
    _withdraw(name, item_id, grader, "skipped", reason.strip() or DEFAULT_SKIP_REASON, session=session)


def undo_item(name: str, item_id: str, *, grader: str, session: Session) -> None:
    """Reopen one of the grader's items: its grade in this batch is deleted, a skip is cleared.

    Refused for a gold item whose reference grade the grader was shown (:func:`gold.answer_stands`):
    undo and grade again would replace the answer that counts."""
    _withdraw(name, item_id, grader, "open", None, session=session)


def _withdraw(name: str, item_id: str, grader: str, status: str, reason: str | None, *, session: Session) -> None:
    """Delete the grader's grade (or gold answer) of ``item_id`` and mark the assignment ``status``."""
    batch, grader_obj, assignment, item = _grader_assignment(name, item_id, grader, session=session)
    _refuse_after_feedback(batch, assignment, item_id, "skipped" if status == "skipped" else "undone", session=session)
    _delete_judgment(batch, grader_obj, item, session=session)
    gold.delete_answer(assignment.id, session=session)
    assignment.status = status
    assignment.skip_reason = reason
    assignment.updated_at = m.utcnow()
    session.flush()


def _refuse_after_feedback(batch: m.GradingBatch, assignment: m.Assignment, item_id: str, what: str, *,
                           session: Session) -> None:
    if gold.answer_stands(assignment, batch, session=session):
        raise ConflictError(f"item {item_id!r} was a calibration item and you were shown its reference grade: "
                            f"your first answer stands and cannot be {what}")


def _delete_judgment(batch: m.GradingBatch, grader: m.Grader, item: m.BatchItem, *, session: Session) -> None:
    session.execute(delete(m.Judgment).where(
        m.Judgment.grader_id == grader.id, m.Judgment.query_id == item.query_id,
        m.Judgment.document_id == item.document_id, m.Judgment.batch == batch.name))
