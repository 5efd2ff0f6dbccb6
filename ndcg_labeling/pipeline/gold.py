"""Gold items: import and list them, mix them into a batch, store graders' answers, and the feedback
after a gold item.

* :func:`import_gold` reads ``query_id,doc_id,grade[,explanation]`` with the import pipeline's readers
  and row checks (:mod:`ndcg_labeling.pipeline.importing`), all in the caller's transaction.
* :func:`mix_gold` is called by ``tasks create --gold-rate R``: each grader gets gold items at rate ``R``
  of their assignments, with item ids from the same source as every item and at places where an
  ordinary item could be (:func:`ndcg_labeling.quality.gold_gaps`: never two in a row).
* The mark that an item is gold lives only in ``batch_gold_items``; a grader's grade of a gold item is a
  :class:`~ndcg_labeling.db.models.GoldAnswer`, never a judgment, so it never enters agreement or
  consensus. The grading session and ``tasks import`` route gold grades here (:func:`store_answer`,
  :func:`store_file_answers`); :func:`gold_feedback` gives the expected grade afterwards when the batch
  was created with ``--gold-feedback``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.quality import allocate_gold, gold_gaps
from ndcg_labeling.scales import get_scale

if TYPE_CHECKING:
    from ndcg_labeling.io.tasks_files import GradedRow

MAX_GOLD_RATE = 0.5


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
    from ndcg_labeling.pipeline.importing import MAX_ID_LENGTH, _check_unique, _optional_text

    path_s = str(path)
    try:
        scale_obj = get_scale(scale)
    except ValueError as exc:
        raise InputFileError(path_s, str(exc)) from None
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


# --- mixing gold into a new batch ---------------------------------------------------------------------


@dataclass
class GoldMix:
    """The gold part of a new batch, from :func:`mix_gold`.

    ``position``: the new position of every ordinary assignment; ``gold_item_ids`` / ``gold_qid`` /
    ``gold_did``: the gold items used (one batch item each); ``gold_item``, ``gold_grader``,
    ``gold_position``: one entry per gold assignment (``gold_item`` indexes ``gold_item_ids``).
    ``short``: gold assignments fewer than the rate asks for; ``reused``: gold assignments of a gold item
    the grader had in an earlier batch; ``own_block``: gold assignments of a query the grader has no
    other item of (a query block of its own).
    """

    position: NDArray[np.int64]
    gold_item_ids: list[int]
    gold_qid: list[int]
    gold_did: list[int]
    gold_item: NDArray[np.int64]
    gold_grader: NDArray[np.int64]
    gold_position: NDArray[np.int64]
    short: int = 0
    reused: int = 0
    own_block: int = 0

    @property
    def n_assignments(self) -> int:
        return int(self.gold_item.size)


def check_gold_rate(rate: float) -> None:
    if not 0.0 <= rate <= MAX_GOLD_RATE or rate != rate:
        raise NdcgLabelingError(f"gold rate must be between 0 and {MAX_GOLD_RATE} (a share of each grader's "
                                f"assignments; above {MAX_GOLD_RATE} two gold items would touch), got {rate}")


def gold_count(n_ordinary: int, rate: float) -> int:
    """Gold items for a grader with ``n_ordinary`` items, so that gold / (gold + ordinary) ~ ``rate``."""
    if rate <= 0 or n_ordinary == 0:
        return 0
    return min(n_ordinary + 1, max(1, round(n_ordinary * rate / (1.0 - rate))))


def _candidates(*, session: Session, scale: str, pool_pairs: set[tuple[int, int]], query_types: Sequence[str],
                query_ids: Sequence[str]) -> list[tuple[int, int, int]]:
    stmt = (select(m.GoldItem.id, m.GoldItem.query_id, m.GoldItem.document_id).join(m.Query, m.Query.id == m.GoldItem.query_id)
            .where(m.GoldItem.scale == scale).order_by(m.GoldItem.id))
    if query_types:
        stmt = stmt.where(m.Query.query_type.in_(list(query_types)))
    if query_ids:
        stmt = stmt.where(m.Query.external_id.in_(list(query_ids)))
    gold = [(gid, qid, did) for gid, qid, did in session.execute(stmt) if (qid, did) not in pool_pairs]
    if not gold:
        limit = " of the batch's queries" if query_types or query_ids else ""
        raise NdcgLabelingError(f"--gold-rate needs gold items on scale {scale}{limit} that are not in the pool: "
                                f"import some with `ndcg-labeling gold import FILE --scale {scale}`")
    return gold


def _seen_before(gold_ids: list[int], grader_ids: Sequence[int], *, session: Session) -> NDArray[np.bool_]:
    """``(n_gold, n_graders)``: the grader had the gold item in an earlier batch."""
    index = {gid: k for k, gid in enumerate(gold_ids)}
    col = {gid: k for k, gid in enumerate(grader_ids)}
    out = np.zeros((len(gold_ids), len(grader_ids)), dtype=bool)
    if not col:
        return out
    for gold_id, grader_id in session.execute(
            select(m.BatchGoldItem.gold_item_id, m.Assignment.grader_id).distinct()
            .join(m.Assignment, m.Assignment.item_id == m.BatchGoldItem.item_id)
            .where(m.Assignment.grader_id.in_(list(col)))):
        if gold_id in index:
            out[index[gold_id], col[grader_id]] = True
    return out


def mix_gold(*, session: Session, scale: str, rate: float, pool_pairs: set[tuple[int, int]],
             item_query: NDArray[np.int64], item: NDArray[np.int64], grader: NDArray[np.int64],
             position: NDArray[np.int64], n_graders: int, rng: np.random.Generator,
             query_types: Sequence[str] = (), query_ids: Sequence[str] = (), overlap: int = 1,
             grader_ids: Sequence[int] = ()) -> GoldMix:
    """Choose gold items for each grader and where they go in the grader's order.

    Gold items of ``scale`` whose (query, document) is not one of the batch's ordinary pairs are
    candidates (a batch limited to ``query_types`` / ``query_ids`` uses only gold items of those queries:
    another query type would stand out). Each grader should get :func:`gold_count` of them; they are
    given out by :func:`ndcg_labeling.quality.allocate_gold`: each gold item to exactly ``overlap``
    graders, gold items of the grader's own queries first (they sit in that query's block) and items
    the grader (``grader_ids``: their row ids) has not had in an earlier batch first; then placed by
    :func:`ndcg_labeling.quality.gold_gaps`.
    """
    gold = _candidates(session=session, scale=scale, pool_pairs=pool_pairs, query_types=query_types,
                       query_ids=query_ids)
    gold_q = np.array([g[1] for g in gold], dtype=np.int64)
    mine_of = [np.flatnonzero(grader == gr) for gr in range(n_graders)]
    mine_of = [mine[np.argsort(position[mine], kind="stable")] for mine in mine_of]
    wanted = np.array([gold_count(mine.size, rate) for mine in mine_of], dtype=np.int64)
    has_query = np.column_stack([np.isin(gold_q, item_query[item[mine]]) for mine in mine_of]) if n_graders else \
        np.zeros((len(gold), 0), dtype=bool)
    seen = _seen_before([g[0] for g in gold], list(grader_ids), session=session) if grader_ids else \
        np.zeros_like(has_query)
    alloc_gold, alloc_grader = allocate_gold(has_query, seen, wanted, min(overlap, n_graders), rng)
    new_position = position.copy()
    g_item: list[NDArray[np.int64]] = []
    g_grader: list[NDArray[np.int64]] = []
    g_pos: list[NDArray[np.int64]] = []
    for gr, mine in enumerate(mine_of):
        chosen = rng.permutation(alloc_gold[alloc_grader == gr])
        if chosen.size == 0:
            continue
        gaps = gold_gaps(item_query[item[mine]], gold_q[chosen], rng)
        sorted_gaps = np.sort(gaps)
        # ordinary item i moves down by the gold items in gaps 0..i; the gold item in gap k (the r-th
        # smallest gap) lands at k + r
        new_position[mine] = np.arange(mine.size) + np.searchsorted(sorted_gaps, np.arange(mine.size), side="right")
        g_item.append(chosen)
        g_grader.append(np.full(chosen.size, gr, dtype=np.int64))
        g_pos.append(gaps + np.searchsorted(sorted_gaps, gaps, side="left"))
    empty = np.empty(0, dtype=np.int64)
    got = np.bincount(alloc_grader, minlength=n_graders)
    return GoldMix(position=new_position, gold_item_ids=[g[0] for g in gold], gold_qid=[g[1] for g in gold],
                   gold_did=[g[2] for g in gold], gold_item=np.concatenate(g_item) if g_item else empty,
                   gold_grader=np.concatenate(g_grader) if g_grader else empty,
                   gold_position=np.concatenate(g_pos) if g_pos else empty,
                   short=int(np.maximum(wanted - got, 0).sum()), reused=int(seen[alloc_gold, alloc_grader].sum()),
                   own_block=int((~has_query[alloc_gold, alloc_grader]).sum()))


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
    from ndcg_labeling.pipeline.lookups import require_batch, require_grader

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
