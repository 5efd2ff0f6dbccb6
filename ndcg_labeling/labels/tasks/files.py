"""``tasks export`` and ``tasks import``: a grader's open items to a task file, a filled file back.

The file readers and writers (:mod:`ndcg_labeling.io.tasks_files`, which use pandas) are imported when
a file is read or written, not when this module is imported.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import GradedFileError, InputFileError, NdcgLabelingError
from ndcg_labeling.guidelines import Guideline, load_guideline
from ndcg_labeling.labels.gold import store_file_answers
from ndcg_labeling.labels.lookups import require_grader
from ndcg_labeling.labels.tasks._common import (
    _IN_CHUNK,
    _open_item_rows,
    _require_assigned,
    guideline_warnings,
    parse_task_grade,
    require_batch,
)
from ndcg_labeling.scales import Scale, get_scale

if TYPE_CHECKING:
    from ndcg_labeling.io.tasks_files import GradedRow

MAX_REPORTED_PROBLEMS = 100


@dataclass
class TasksExported:
    batch: str
    grader: str
    path: str
    fmt: str
    rows: int
    warnings: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.rows} open items of grader {self.grader} in batch {self.batch} written to {self.path} ({self.fmt})"


@dataclass
class GradesImported:
    """What :func:`import_graded` did; ``str()`` is the summary the CLI prints."""

    path: str
    batch: str
    grader: str
    new: int = 0
    unchanged: int = 0
    replaced: int = 0
    left_open: int = 0
    refused_newer: int = 0  # rows not written: the stored grade was made after the file was exported

    def __str__(self) -> str:
        text = (f"grades from {self.path} (batch {self.batch}, grader {self.grader}): "
                f"{self.new} new, {self.unchanged} unchanged")
        if self.replaced:
            text += f", {self.replaced} replaced (a different grade than before: the latest file wins)"
        if self.refused_newer:
            text += (f", {self.refused_newer} refused (graded after this file was exported; the newer grade is "
                     f"kept: pass --overwrite-newer to replace it)")
        if self.left_open:
            text += f", {self.left_open} left open (empty grade)"
        return text

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def export_tasks(name: str, *, grader: str, session: Session) -> list[dict[str, Any]]:
    """The grader's open items of batch ``name`` in the grader's order, as dicts with the keys
    ``item_id, query, title, body, url, grade`` (grade empty) and nothing else."""
    batch = require_batch(name, session=session)
    grader_obj = require_grader(grader, session=session)
    _require_assigned(batch, grader_obj, session=session)
    rows = _open_item_rows(batch.id, grader_obj.id, session=session)
    for row in rows:
        del row["position"]
    return rows


def export_tasks_file(name: str, *, grader: str, out: str | Path, session: Session,
                      fmt: str | None = None, force: bool = False) -> TasksExported:
    """Write :func:`export_tasks` to ``out`` as csv, jsonl or label-studio (default by extension)."""
    rows = export_tasks(name, grader=grader, session=session)
    batch = require_batch(name, session=session)
    from ndcg_labeling.io.tasks_files import stamp_of, write_tasks

    stamp = stamp_of(m.utcnow())  # read before the file is written: no grade made after it is older
    for row in rows:
        row["exported_at"] = stamp
    written_fmt = write_tasks(rows, out, fmt, force=force)
    return TasksExported(batch.name, grader, str(out), written_fmt, len(rows), guideline_warnings(batch))


def import_graded(path: str | Path, *, grader: str, session: Session, fmt: str | None = None,
                  batch: str | None = None, overwrite_newer: bool = False) -> GradesImported:
    """Import a filled task file of ``grader`` (CSV/JSONL ``item_id,grade``, or a Label Studio export).

    Every item must be one of the grader's items, all in one batch (``batch`` when given, else the
    batch of the file's first item); every grade must be on the batch's scale (a number or a grade
    name). Each bad row is reported (:class:`GradedFileError`, one line per row) and then nothing is
    written. Rows with an empty grade are left open. The same grade again is unchanged; a different
    grade replaces the stored one only if the row's file was exported after that grade was made (its
    ``exported_at`` stamp) or the stored grade came from this same file (the grader correcting it);
    otherwise the row is refused and counted (``refused_newer``), unless ``overwrite_newer``.
    """
    from ndcg_labeling.io.tasks_files import read_graded

    path_s = str(path)
    grader_obj = require_grader(grader, session=session)
    wanted_batch = require_batch(batch, session=session) if batch else None
    graded = read_graded(path_s, fmt)
    known, mine = _known_items([r.item_id for r in graded.rows if r.item_id], grader_obj.id, session=session)
    target = wanted_batch or _batch_of_first_item(graded.rows, known, mine, session=session)
    scale = get_scale(target.scale) if target is not None else None
    guideline = None
    if scale is not None:
        try:
            guideline = load_guideline(scale.name)
        except NdcgLabelingError:
            guideline = None
    checked = _check_rows(path_s, graded.rows, known, mine, target=target, scale=scale, guideline=guideline,
                          grader=grader, session=session)
    problems = list(graded.problems) + checked.problems
    if problems:
        problems.sort(key=lambda p: p[0])
        raise GradedFileError([p for _, p in problems[:MAX_REPORTED_PROBLEMS]], total=len(problems))
    if target is None or scale is None:
        raise InputFileError(path_s, "the file has no items")
    summary = GradesImported(path_s, target.name, grader, left_open=checked.left_open)
    rest, answers = store_file_answers(checked.accepted, known, mine, path=path_s, session=session)
    if rest:
        _write_grades(summary, rest, known, mine, grader_id=grader_obj.id, batch=target.name,
                      scale=scale.name, path=path_s, session=session, overwrite_newer=overwrite_newer)
    summary.new, summary.unchanged, summary.replaced = (summary.new + answers.new, summary.unchanged + answers.unchanged,
                                                        summary.replaced + answers.replaced)
    return summary


def _known_items(item_keys: list[str], grader_id: int, *, session: Session) -> tuple[
        dict[str, tuple[int, int, int, int]], dict[int, tuple[int, str]]]:
    """The items named in a file, ``key -> (item id, batch id, query id, document id)``, and those of
    them assigned to the grader, ``item id -> (assignment id, status)``."""
    keys = list(set(item_keys))
    known: dict[str, tuple[int, int, int, int]] = {}
    for start in range(0, len(keys), _IN_CHUNK):
        part = keys[start : start + _IN_CHUNK]
        for key, item_id, batch_id, qid, did in session.execute(
                select(m.BatchItem.item_key, m.BatchItem.id, m.BatchItem.batch_id, m.BatchItem.query_id,
                       m.BatchItem.document_id).where(m.BatchItem.item_key.in_(part))):
            known[key] = (item_id, batch_id, qid, did)
    item_ids = [v[0] for v in known.values()]
    mine: dict[int, tuple[int, str]] = {}
    for start in range(0, len(item_ids), _IN_CHUNK):
        part_ids = item_ids[start : start + _IN_CHUNK]
        for aid, item_id, status in session.execute(
                select(m.Assignment.id, m.Assignment.item_id, m.Assignment.status)
                .where(m.Assignment.item_id.in_(part_ids), m.Assignment.grader_id == grader_id)):
            mine[item_id] = (aid, status)
    return known, mine


def _batch_of_first_item(rows: list[GradedRow], known: dict[str, tuple[int, int, int, int]],
                         mine: dict[int, tuple[int, str]], *, session: Session) -> m.GradingBatch | None:
    """The batch of the file's first item of the grader (else of its first known item)."""
    first = next((known[r.item_id][1] for r in rows if r.item_id in known and known[r.item_id][0] in mine), None)
    if first is None:
        first = next((known[r.item_id][1] for r in rows if r.item_id in known), None)
    return session.get(m.GradingBatch, first) if first is not None else None


@dataclass
class _CheckedRows:
    accepted: list[tuple[GradedRow, int]] = field(default_factory=list)
    problems: list[tuple[int, InputFileError]] = field(default_factory=list)
    left_open: int = 0


def _check_rows(path: str, rows: list[GradedRow], known: dict[str, tuple[int, int, int, int]],
                mine: dict[int, tuple[int, str]], *, target: m.GradingBatch | None, scale: Scale | None,
                guideline: Guideline | None, grader: str, session: Session) -> _CheckedRows:
    """Every row's item and grade checked: the accepted ``(row, grade)``, the problems, the open rows."""
    from ndcg_labeling.io.tasks_files import parse_stamp, row_error

    batch_names = dict(session.execute(select(m.GradingBatch.id, m.GradingBatch.name)).all())
    out = _CheckedRows()
    seen: dict[str, GradedRow] = {}
    for row in rows:
        problem = None
        if not row.item_id:
            problem = "empty item_id"
        elif row.item_id in seen:
            first_row = seen[row.item_id]
            where = f"line {first_row.line}" if first_row.line is not None else first_row.where
            problem = f"duplicate item_id {row.item_id!r}, first seen at {where}"
        elif row.item_id not in known:
            problem = f"unknown item_id {row.item_id!r}"
        elif target is not None and known[row.item_id][1] != target.id:
            problem = (f"item_id {row.item_id!r} belongs to batch {batch_names.get(known[row.item_id][1])!r}, "
                       f"not {target.name!r}")
        elif known[row.item_id][0] not in mine:
            problem = f"item_id {row.item_id!r} is not assigned to grader {grader!r}"
        if row.item_id:
            seen.setdefault(row.item_id, row)
        if problem is None and row.grade.strip() == "":
            out.left_open += 1
            continue
        if problem is None:
            if scale is None:  # a known item has a batch, and a batch a scale
                raise NdcgLabelingError(f"{path}: item {row.item_id!r} has no batch scale")
            try:
                parse_stamp(row.exported_at)  # a stamp that is not one is a bad row, not "no stamp"
                out.accepted.append((row, parse_task_grade(row.grade, scale, guideline)))
            except ValueError as exc:
                problem = str(exc)
        if problem is not None:
            out.problems.append((row.index, row_error(path, row, problem)))
    return out


def _write_grades(summary: GradesImported, accepted: list[tuple[GradedRow, int]],
                  known: dict[str, tuple[int, int, int, int]], mine: dict[int, tuple[int, str]], *,
                  grader_id: int, batch: str, scale: str, path: str, session: Session,
                  overwrite_newer: bool = False) -> None:
    """Store the accepted grades (new, unchanged, replaced) and mark their assignments done; a row
    older than the stored grade it would replace is refused and counted (:func:`_may_replace`)."""
    existing = {(qid, did): (jid, grade, made, source) for jid, qid, did, grade, made, source in session.execute(
        select(m.Judgment.id, m.Judgment.query_id, m.Judgment.document_id, m.Judgment.grade, m.Judgment.created_at,
               m.Judgment.source_file)
        .where(m.Judgment.grader_id == grader_id, m.Judgment.batch == batch))}
    now = m.utcnow()
    inserts: list[tuple[Any, ...]] = []
    replacements: list[dict[str, Any]] = []
    to_done: list[dict[str, Any]] = []
    for row, grade in accepted:
        item_id, _b, qid, did = known[row.item_id]
        aid, status = mine[item_id]
        old = existing.get((qid, did))
        if old is None:
            inserts.append((grader_id, qid, did, grade, scale, batch, path, repo.db_datetime(session, now)))
        elif old[1] == grade:
            summary.unchanged += 1
        elif overwrite_newer or _may_replace(row.exported_at, old[2], old[3], path):
            replacements.append({"id": old[0], "grade": grade, "source_file": path, "created_at": now})
        else:
            summary.refused_newer += 1
            continue
        if status != "done":
            to_done.append({"id": aid, "status": "done", "skip_reason": None, "updated_at": now})
    if to_done:  # assignments before judgments, the order save_grade's flush writes them in: no deadlock
        session.execute(update(m.Assignment), to_done)
    if replacements:
        session.execute(update(m.Judgment), replacements)
        summary.replaced = len(replacements)
    if inserts:  # a grade the grader saved meanwhile in a grading session is overwritten, as a replacement
        summary.new = repo.bulk_insert(m.Judgment, ["grader_id", "query_id", "document_id", "grade", "scale", "batch",
                                                    "source_file", "created_at"], inserts, session=session,
                                       on_conflict=repo.JUDGMENT_UPSERT)


def _may_replace(stamp: str, made: Any, source: str | None, path: str) -> bool:
    """Whether a row of a file exported at ``stamp`` may replace a stored grade made at ``made`` from
    ``source``: the file was exported after the grade was made, or the grade came from this same file
    (the grader correcting the file they imported). A file without a stamp (hand-made, or written
    before stamps) only replaces grades of its own."""
    from ndcg_labeling.io.tasks_files import parse_stamp

    if source == path:
        return True
    exported = parse_stamp(stamp)
    if exported is None or made is None:
        return False
    if isinstance(made, str):  # SQLite through a Core select of a text column: never here, but be exact
        made = datetime.fromisoformat(made)
    return bool(made.replace(tzinfo=None) <= exported)
