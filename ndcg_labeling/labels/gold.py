"""Gold items: import and list them, mix them into a batch, store graders' answers, and the feedback
after a gold item.

* :func:`import_gold` reads ``query_id,doc_id,grade[,explanation]`` with the import pipeline's readers
  and row checks (:mod:`ndcg_labeling.labels.importing`), all in the caller's transaction.
* mixing them into a batch (``tasks create --gold-rate R``) lives in :mod:`ndcg_labeling.labels.tasks.gold_mix`.
* The mark that an item is gold lives only in ``batch_gold_items``; a grader's grade of a gold item is a
  :class:`~ndcg_labeling.db.models.GoldAnswer`, never a judgment, so it never enters agreement or
  consensus. The grading session and ``tasks import`` route gold grades here (:func:`store_answer`,
  :func:`store_file_answers`); :func:`gold_feedback` gives the expected grade afterwards when the batch
  was created with ``--gold-feedback``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.scales import get_scale

if TYPE_CHECKING:
    from ndcg_labeling.io.tasks_files import GradedRow

# --- import and list ----------------------------------------------------------------------------------


@dataclass
class GoldImported:
    """What :func:`import_gold` did; ``str()`` is the summary the CLI prints."""

    path: str
    scale: str
    new: int = 0
    unchanged: int = 0
    updated: int = 0

    def __str__(self) -> str:
        text = f"gold items ({self.scale}) from {self.path}: {self.new} new, {self.unchanged} unchanged"
        return text + (f", {self.updated} updated (grade or explanation)" if self.updated else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def import_gold(path: str | Path, *, scale: str, session: Session, fmt: str | None = None) -> GoldImported:
    """Import gold items ``query_id,doc_id,grade[,explanation]`` on ``scale``.

    Same checks as every import (empty or too long ids, duplicates, grades that are not integers of the
    scale: ``Error: FILE:LINE: problem``), plus: the query and the document must be imported already
    (a grader is shown their text). A gold item already stored with the same grade and explanation is
    unchanged; a different one is updated (the file is the lead's reference). Nothing is written
    unless every row is good.
    """
    from ndcg_labeling.io.tables import read_table
    from ndcg_labeling.labels.importing import MAX_ID_LENGTH, _check_unique, _optional_text, file_scale

    path_s = str(path)
    scale_obj = file_scale(path_s, scale)
    table = read_table(path_s, fmt)
    table.require_columns(["query_id", "doc_id", "grade"], optional=["explanation"])
    qids = table.check_ids("query_id", MAX_ID_LENGTH).tolist()
    dids = table.check_ids("doc_id", MAX_ID_LENGTH).tolist()
    grades = table.parse_grades("grade", scale_obj).tolist()
    _check_unique(table, ["query_id", "doc_id"], "gold item")
    explanations = _optional_text(table, "explanation")
    qmap = repo.external_id_map(m.Query, session=session, only=sorted(set(qids)))
    dmap = repo.external_id_map(m.Document, session=session, only=sorted(set(dids)))
    for row, (q, d) in enumerate(zip(qids, dids, strict=True)):
        if q not in qmap:
            raise table.error(row, f"unknown query_id {q!r}: import the queries first (`ndcg-labeling import queries`)")
        if d not in dmap:
            raise table.error(row, f"unknown doc_id {d!r}: import the documents first (`ndcg-labeling import documents`)")
    existing = {(g.query_id, g.document_id): g for g in session.execute(
        select(m.GoldItem).where(m.GoldItem.scale == scale_obj.name)).scalars()}
    summary = GoldImported(path_s, scale_obj.name)
    now = m.utcnow()
    for q, d, grade, explanation in zip(qids, dids, grades, explanations, strict=True):
        old = existing.get((qmap[q], dmap[d]))
        if old is None:
            session.add(m.GoldItem(query_id=qmap[q], document_id=dmap[d], scale=scale_obj.name, grade=int(grade),
                                   explanation=explanation, source_file=path_s, created_at=now))
            summary.new += 1
        elif old.grade == grade and old.explanation == explanation:
            summary.unchanged += 1
        else:
            old.grade, old.explanation, old.source_file = int(grade), explanation, path_s
            summary.updated += 1
    session.flush()
    return summary


def list_gold(*, session: Session, scale: str | None = None) -> list[dict[str, Any]]:
    """Every gold item: query_id, doc_id, scale, grade, explanation, batches (how many use it), answers
    (graders' answers so far), accuracy (share of exact answers, None without answers)."""
    g, q, d = m.GoldItem, m.Query, m.Document
    stmt = (select(g.id, q.external_id, d.external_id, g.scale, g.grade, g.explanation)
            .join(q, q.id == g.query_id).join(d, d.id == g.document_id).order_by(q.external_id, d.external_id))
    if scale is not None:
        stmt = stmt.where(g.scale == scale)
    uses: dict[int, set[int]] = {}
    answers: dict[int, list[int]] = {}
    for gid, batch_id in session.execute(select(m.BatchGoldItem.gold_item_id, m.BatchItem.batch_id)
                                         .join(m.BatchItem, m.BatchItem.id == m.BatchGoldItem.item_id)):
        uses.setdefault(gid, set()).add(batch_id)
    for gid, answer in session.execute(select(m.BatchGoldItem.gold_item_id, m.GoldAnswer.grade)
                                       .join(m.Assignment, m.Assignment.item_id == m.BatchGoldItem.item_id)
                                       .join(m.GoldAnswer, m.GoldAnswer.assignment_id == m.Assignment.id)):
        answers.setdefault(gid, []).append(answer)
    out = []
    for gid, qext, dext, scale_name, grade, explanation in session.execute(stmt):
        given = answers.get(gid, [])
        out.append({"query_id": qext, "doc_id": dext, "scale": scale_name, "grade": grade,
                    "explanation": explanation, "batches": len(uses.get(gid, ())), "answers": len(given),
                    "accuracy": round(sum(a == grade for a in given) / len(given), 4) if given else None})
    return out


# --- answers -------------------------------------------------------------------------------------------


def gold_item_of(item_id: int, *, session: Session) -> int | None:
    """The gold item id of batch item ``item_id`` (a row id), None for an ordinary item."""
    return session.execute(select(m.BatchGoldItem.gold_item_id)
                           .where(m.BatchGoldItem.item_id == item_id)).scalar_one_or_none()


def store_answer(assignment: m.Assignment, grade: int, *, session: Session, source_file: str | None) -> bool:
    """Store the grader's answer to a gold item and mark the assignment done; True when it is the first.

    **The first answer counts.** A grade given again to the same gold item never replaces it (after
    ``--gold-feedback`` a grader would copy the reference grade and reach accuracy 1.0): it is kept for
    the record as ``later_grade`` (the newest) and counted in ``n_later``. The grader sees the same
    reply as for an ordinary item either way.
    """
    now = m.utcnow()
    answer = session.execute(select(m.GoldAnswer).where(m.GoldAnswer.assignment_id == assignment.id)
                             ).scalar_one_or_none()
    first = answer is None
    if answer is None:
        session.add(m.GoldAnswer(assignment_id=assignment.id, grade=grade, source_file=source_file, created_at=now))
    elif answer.grade != grade or answer.later_grade is not None:
        answer.later_grade = grade
        answer.n_later = (answer.n_later or 0) + 1
    assignment.status = "done"
    assignment.skip_reason = None
    assignment.updated_at = now
    session.flush()
    return first


def answer_stands(assignment: m.Assignment, batch: m.GradingBatch, *, session: Session) -> bool:
    """True when the assignment's gold answer may no longer be withdrawn: the batch shows the reference
    grade after a gold item (``--gold-feedback``) and the grader has answered, so the reference was
    shown. Undo and skip are refused then (undo + grade again would replace the answer)."""
    if not batch.gold_feedback:
        return False
    return session.execute(select(m.GoldAnswer.id).where(m.GoldAnswer.assignment_id == assignment.id)
                           ).first() is not None


def delete_answer(assignment_id: int, *, session: Session) -> None:
    """Forget the answer of an assignment (skip, undo in a batch without feedback); nothing happens for
    an ordinary item."""
    session.execute(delete(m.GoldAnswer).where(m.GoldAnswer.assignment_id == assignment_id))


@dataclass
class FileAnswers:
    new: int = 0
    unchanged: int = 0
    replaced: int = 0


def store_file_answers(accepted: list[tuple[GradedRow, int]], known: dict[str, tuple[int, int, int, int]],
                       mine: dict[int, tuple[int, str]], *, path: str,
                       session: Session) -> tuple[list[tuple[GradedRow, int]], FileAnswers]:
    """Store the gold rows of an imported task file as answers; return the other rows and the counts
    (which the import adds to its own, so the summary does not tell gold rows apart)."""
    item_ids = [known[row.item_id][0] for row, _ in accepted]
    gold_items: set[int] = set()
    for start in range(0, len(item_ids), 10_000):
        gold_items.update(session.execute(select(m.BatchGoldItem.item_id).where(
            m.BatchGoldItem.item_id.in_(item_ids[start : start + 10_000]))).scalars())
    counts = FileAnswers()
    if not gold_items:
        return accepted, counts
    rest = []
    for row, grade in accepted:
        item_id = known[row.item_id][0]
        if item_id not in gold_items:
            rest.append((row, grade))
            continue
        assignment = session.get(m.Assignment, mine[item_id][0])
        if assignment is None:  # checked by the caller: every accepted row is one of the grader's items
            raise NdcgLabelingError(f"{path}: item {row.item_id!r} has no assignment")
        old = session.execute(select(m.GoldAnswer.grade).where(m.GoldAnswer.assignment_id == assignment.id)
                              ).scalar_one_or_none()
        counts.new += old is None
        counts.unchanged += old == grade
        # counted like a replaced grade (the summary must not tell gold rows apart); the first answer stays
        counts.replaced += old is not None and old != grade
        store_answer(assignment, grade, session=session, source_file=path)
    return rest, counts


# --- feedback after a gold item ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldFeedback:
    """What a grader may be shown after grading a gold item (batches created with ``--gold-feedback``)."""

    item_id: str
    your_grade: int
    expected_grade: int
    expected_name: str
    explanation: str | None

    @property
    def correct(self) -> bool:
        return self.your_grade == self.expected_grade

    def __str__(self) -> str:
        head = "matches the reference" if self.correct else f"the reference grade is {self.expected_grade} ({self.expected_name})"
        text = f"Calibration item: your grade {self.your_grade} — {head}."
        return text + (f" {self.explanation}" if self.explanation else "")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "correct": self.correct}


def gold_feedback(batch: str, item_id: str, *, grader: str, session: Session) -> GoldFeedback | None:
    """The expected grade and explanation of ``item_id`` after ``grader`` graded it, when the batch
    was created with ``--gold-feedback`` and the item is gold; else None (also for an ordinary item, so
    the caller's code path is the same for every item)."""
    from ndcg_labeling.labels.lookups import require_batch, require_grader

    batch_obj = require_batch(batch, session=session)
    if not batch_obj.gold_feedback:
        return None
    grader_obj = require_grader(grader, session=session)
    row = session.execute(
        select(m.GoldAnswer.grade, m.GoldItem.grade, m.GoldItem.explanation)
        .join(m.Assignment, m.Assignment.id == m.GoldAnswer.assignment_id)
        .join(m.BatchItem, m.BatchItem.id == m.Assignment.item_id)
        .join(m.BatchGoldItem, m.BatchGoldItem.item_id == m.BatchItem.id)
        .join(m.GoldItem, m.GoldItem.id == m.BatchGoldItem.gold_item_id)
        .where(m.BatchItem.batch_id == batch_obj.id, m.BatchItem.item_key == item_id,
               m.Assignment.grader_id == grader_obj.id)).first()
    if row is None:
        return None
    scale = get_scale(batch_obj.scale)
    return GoldFeedback(item_id, int(row[0]), int(row[1]), scale.name_of(int(row[1])), row[2])
