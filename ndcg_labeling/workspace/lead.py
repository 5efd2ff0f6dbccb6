"""The lead's work in the browser (``/lead``): the use cases the web pages call, over the functions the
terminal calls. Nothing here decides a rule that the CLI decides elsewhere:

* a batch's **preview** is :func:`~ndcg_labeling.labels.tasks.create_batch` itself, run inside a
  savepoint that is rolled back: the sizes shown are those the confirmed batch gets (same seed);
* **deleting** a batch (``tasks delete``) is refused once anyone graded or skipped one of its items;
* an **upload** is saved to a temporary file under its own name and imported with the importer of
  ``import queries|documents|graders|run|judgments`` or ``gold import``; an error names the uploaded
  file (``queries.csv:3: problem``), and a judgment or gold item records the uploaded file's name as
  its source, as the CLI records the path it was given.

Every function takes the session as a keyword argument and never commits.
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import ConflictError, InputFileError, NdcgLabelingError
from ndcg_labeling.labels.tasks import BatchCreated, create_batch, require_batch

#: what can be uploaded: kind -> what the page calls it
UPLOAD_KINDS: dict[str, str] = {
    "queries": "queries", "documents": "documents", "graders": "graders", "run": "a system's run",
    "judgments": "judgments", "gold": "gold items"}
MAX_NAME = 200


# --- batches --------------------------------------------------------------------------------------------


@dataclass
class BatchPlan:
    """What ``tasks create`` with these options would store: its summary, and each grader's load."""

    created: BatchCreated
    load: list[dict[str, Any]] = field(default_factory=list)  # grader, items, gold

    def as_dict(self) -> dict[str, Any]:
        return {**self.created.as_dict(), "load": self.load}


def create_pooled(name: str, *, session: Session, seed: int | None = None, strategy: str | None = None,
                  budget: int | None = None, **options: Any) -> BatchCreated:
    """``tasks create``: :func:`create_batch` (the whole depth-K pool), or with a ``strategy``
    :func:`~ndcg_labeling.labels.tasks.budgeted.create_budgeted` (``budget`` pairs of it), as the CLI
    picks between them."""
    if strategy:
        from ndcg_labeling.labels.tasks.budgeted import create_budgeted

        return create_budgeted(name, strategy=strategy, budget=budget, session=session, seed=seed, **options)
    return create_batch(name, session=session, seed=seed, **options)


def budgeted_batches(*, session: Session) -> list[dict[str, Any]]:
    """The batches made with a strategy (those ``tasks extend`` can grow): name, strategy, budget so far."""
    b = m.GradingBatch
    return [{"batch": name, "strategy": strategy, "budget": budget} for name, strategy, budget in session.execute(
        select(b.name, b.strategy, b.budget).where(b.strategy.is_not(None)).order_by(b.created_at, b.id))]


def plan_batch(name: str, *, session: Session, seed: int | None = None, **options: Any) -> BatchPlan:
    """:func:`create_pooled` with ``options`` in a savepoint that is rolled back: nothing is stored.

    Without a ``seed`` one is drawn here, so that creating the batch with the plan's seed gives the
    batch the preview showed (the pool and its size do not depend on the seed; which grader gets the
    one extra item does)."""
    if seed is None:
        seed = secrets.randbelow(2**31)
    savepoint = session.begin_nested()
    try:
        created = create_pooled(name, session=session, seed=seed, **options)
        load = _load(created.batch, session=session)
    finally:
        savepoint.rollback()
    return BatchPlan(created, load)


def _load(name: str, *, session: Session) -> list[dict[str, Any]]:
    a = m.Assignment
    batch = require_batch(name, session=session)
    gold = {gid: n for gid, n in session.execute(
        select(a.grader_id, func.count()).join(m.BatchGoldItem, m.BatchGoldItem.item_id == a.item_id)
        .where(a.batch_id == batch.id).group_by(a.grader_id))}
    rows = session.execute(select(m.Grader.id, m.Grader.name, func.count()).join(a, a.grader_id == m.Grader.id)
                           .where(a.batch_id == batch.id).group_by(m.Grader.id, m.Grader.name)
                           .order_by(m.Grader.name)).all()
    return [{"grader": n, "items": int(c), "gold": int(gold.get(gid, 0))} for gid, n, c in rows]


@dataclass
class BatchDeleted:
    batch: str
    items: int
    assignments: int

    def __str__(self) -> str:
        return f"batch {self.batch} deleted: {self.items} items, {self.assignments} assignments (nobody had graded it)"

    def as_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "items": self.items, "assignments": self.assignments}


def delete_batch(name: str, *, session: Session) -> BatchDeleted:
    """Delete batch ``name`` with its items and assignments, if nobody has graded or skipped any of
    them and no judgment names the batch; :class:`ConflictError` otherwise (nothing is deleted)."""
    batch = require_batch(name, session=session)
    a = m.Assignment
    started, judged, answers = _delete_blockers(batch, session=session)
    if started or judged or answers:
        raise ConflictError(f"batch {batch.name!r} cannot be deleted: {started} of its assignments were graded or "
                            f"skipped and {judged} judgments name it; only a batch nobody has graded can be deleted")
    items = select(m.BatchItem.id).where(m.BatchItem.batch_id == batch.id)
    session.execute(delete(m.BatchGoldItem).where(m.BatchGoldItem.item_id.in_(items)))
    n_assign = session.execute(delete(a).where(a.batch_id == batch.id)).rowcount or 0  # type: ignore[attr-defined]
    n_items = session.execute(delete(m.BatchItem).where(m.BatchItem.batch_id == batch.id)).rowcount or 0  # type: ignore[attr-defined]
    session.execute(delete(m.GradingBatch).where(m.GradingBatch.id == batch.id))
    return BatchDeleted(batch.name, int(n_items), int(n_assign))


def _delete_blockers(batch: m.GradingBatch, *, session: Session) -> tuple[int, int, int]:
    """What keeps ``batch`` from deletion: assignments graded or skipped, judgments naming it, gold answers."""
    a = m.Assignment
    started = session.execute(select(func.count()).select_from(a)
                              .where(a.batch_id == batch.id, a.status != "open")).scalar_one()
    judged = session.execute(select(func.count()).select_from(m.Judgment)
                             .where(m.Judgment.batch == batch.name)).scalar_one()
    answers = session.execute(select(func.count()).select_from(m.GoldAnswer).join(a, a.id == m.GoldAnswer.assignment_id)
                              .where(a.batch_id == batch.id)).scalar_one()
    return int(started), int(judged), int(answers)


def deletable_batches(*, session: Session) -> list[str]:
    """The batches :func:`delete_batch` would delete (nobody has graded them): what the page offers."""
    batches = session.execute(select(m.GradingBatch).order_by(m.GradingBatch.created_at, m.GradingBatch.id)).scalars()
    return [b.name for b in batches if not any(_delete_blockers(b, session=session))]


def assignable_graders(*, session: Session) -> set[str]:
    """Graders a batch can be given to: active, and not a behavior grader (whose labels come from logs)."""
    derived = select(m.BehaviorDerivation.grader_id)
    return set(session.execute(select(m.Grader.name).where(m.Grader.active.is_(True), m.Grader.id.not_in(derived)))
               .scalars())


def batch_names(*, session: Session) -> list[str]:
    return [str(n) for n in session.execute(select(m.GradingBatch.name).order_by(m.GradingBatch.created_at,
                                                                               m.GradingBatch.id)).scalars()]


def system_names(*, session: Session) -> list[str]:
    return [str(n) for n in session.execute(select(m.System.name).order_by(m.System.name)).scalars()]


def query_types(*, session: Session) -> list[str]:
    return sorted(str(v) for v in session.execute(select(m.Query.query_type).distinct()).scalars() if v is not None)


# --- uploads --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    """An uploaded file saved to ``path`` (a temporary folder of its own) under its own ``name``."""

    path: Path
    name: str
    size: int


def upload_name(filename: str | None) -> str:
    """The uploaded file's own name (no folders, printable, at most 200 characters); "upload" if none."""
    base = re.split(r"[\\/]", filename or "")[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip().lstrip(".")
    return base[-MAX_NAME:] or "upload"


@contextmanager
def saved_upload(stream: IO[bytes], filename: str | None) -> Iterator[Upload]:
    """Copy ``stream`` to a temporary file named like the upload (its extension picks the reader, as
    on the command line); the file and its folder are removed afterwards."""
    name = upload_name(filename)
    with tempfile.TemporaryDirectory(prefix="ndcg-upload-") as folder:
        path = Path(folder) / name
        with path.open("wb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
        yield Upload(path, name, path.stat().st_size)


def import_upload(kind: str, upload: Upload, *, session: Session, scale: str | None = None,
                  system: str | None = None, grader: str | None = None, fmt: str | None = None,
                  replace: bool = False, create_graders: bool = False, description: str | None = None,
                  grader_kind: str = "human") -> str:
    """Import ``upload`` as ``kind`` (a key of :data:`UPLOAD_KINDS`) with the CLI's importer and
    options; returns the importer's one-line summary. Errors name the uploaded file, not the
    temporary one; the caller's transaction rolls back on any error, so nothing is stored."""
    from ndcg_labeling.labels import gold, importing

    fmt = fmt or None
    path = str(upload.path)
    try:
        if kind == "queries":
            summary: Any = importing.import_queries(path, session=session, fmt=fmt)
        elif kind == "documents":
            summary = importing.import_documents(path, session=session, fmt=fmt)
        elif kind == "graders":
            summary = importing.import_graders(path, session=session, fmt=fmt, kind=grader_kind)
        elif kind == "run":
            summary = importing.import_run(path, system=system or "", session=session, fmt=fmt, replace=replace,
                                           description=description or None)
        elif kind == "judgments":
            summary = importing.import_judgments(path, scale=_required(scale, "scale"), session=session, fmt=fmt,
                                                 grader=grader or None, replace=replace, create_graders=create_graders)
        elif kind == "gold":
            summary = gold.import_gold(path, scale=_required(scale, "scale"), session=session, fmt=fmt)
        else:
            raise NdcgLabelingError(f"unknown upload kind {kind!r}; use {', '.join(UPLOAD_KINDS)}")
    except InputFileError as exc:
        raise InputFileError(upload.name, _renamed(exc.problem, path, upload.name), exc.line) from None
    except NdcgLabelingError as exc:
        try:
            renamed = type(exc)(_renamed(str(exc), path, upload.name))
        except TypeError:  # an error class with a constructor of its own
            raise exc from None
        raise renamed from None
    for model in (m.Judgment, m.GoldItem):  # the source is the uploaded file, as the CLI's is the path given
        session.execute(update(model).where(model.source_file == path).values(source_file=upload.name)
                        .execution_options(synchronize_session=False))
    summary.path = upload.name
    return str(summary)


def _required(value: str | None, what: str) -> str:
    if not value:
        raise NdcgLabelingError(f"choose a {what}")
    return value


def _renamed(message: str, path: str, name: str) -> str:
    return message.replace(path, name)


def upload_kinds() -> Sequence[tuple[str, str]]:
    return list(UPLOAD_KINDS.items())


# --- downloads ------------------------------------------------------------------------------------------

REPORT_MEDIA = {"html": "text/html", "csv": "text/csv", "json": "application/json"}


def report_text(fmt: str, *, session: Session) -> str:
    """``report --format html|csv|json`` with the default options: the document the CLI writes."""
    from ndcg_labeling.reports.render import render_report
    from ndcg_labeling.results import ReportOptions
    from ndcg_labeling.scoring.report import build_report

    if fmt not in REPORT_MEDIA:
        raise NdcgLabelingError(f"unknown report format {fmt!r}; use {', '.join(REPORT_MEDIA)}")
    return render_report(build_report(session=session, options=ReportOptions()), fmt) or ""


@dataclass(frozen=True)
class TaskFile:
    filename: str
    content: bytes
    rows: int
    fmt: str


def task_file(batch: str, *, grader: str, fmt: str, session: Session) -> TaskFile:
    """``tasks export BATCH --grader G --format F``: the grader's open items as a task file's bytes."""
    from ndcg_labeling.choices import TaskFileFormat, parse_choice
    from ndcg_labeling.labels.tasks import export_tasks_file

    try:
        chosen = parse_choice(TaskFileFormat, fmt, "task file format")
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    ext = {"csv": "csv", "jsonl": "jsonl", "label-studio": "json"}[chosen.value]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{batch}-{grader}").strip("._") or "tasks"
    with tempfile.TemporaryDirectory(prefix="ndcg-tasks-") as folder:
        out = Path(folder) / f"{safe}.{ext}"
        result = export_tasks_file(batch, grader=grader, out=out, session=session, fmt=chosen.value)
        return TaskFile(out.name, out.read_bytes(), result.rows, result.fmt)


def consensus_state(*, session: Session) -> dict[str, int]:
    """How many consensus labels are stored, how many are flagged, how many of those are adjudicated."""
    from ndcg_labeling.labels.consensus import flagged_items

    labels = session.execute(select(func.count()).select_from(m.ConsensusLabel)).scalar_one()
    flagged = flagged_items(session=session)
    return {"labels": int(labels), "flagged": len(flagged),
            "adjudicated": sum(r["adjudicated"] is not None for r in flagged)}
