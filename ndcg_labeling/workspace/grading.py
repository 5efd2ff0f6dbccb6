"""The web workspace's use cases, built on the functions the terminal uses.

Grading goes through :mod:`ndcg_labeling.labels.tasks` (``next_item``, ``save_grade``,
``skip_item``, ``undo_item``, ``grader_progress``), so the order, the item ids, the grade parser and
the bookkeeping are those of ``grade`` and ``tasks export``. Lead views call the agreement,
consensus and report pipelines. Nothing here decides a grading rule of its own.

What a grader is shown carries no rank, score, system or other grader: :func:`item_payload` is the
whole of it. A batch or an item that is not the caller's is reported as not found, with one message
that does not say whether it exists (so ann cannot probe bob's items, nor learn batch names).

Every function takes the session as a keyword argument and never commits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import InvalidInput, NdcgLabelingError, NotFoundError
from ndcg_labeling.guidelines import scale_grades
from ndcg_labeling.labels import tasks
from ndcg_labeling.results import ReportOptions
from ndcg_labeling.workspace.auth import WebUser

MAX_SKIP_REASON = 500


# --- what a grader sees ---------------------------------------------------------------------------


@dataclass
class GradingView:
    """One grading page: the grader's first open item (None when all are done), progress, the scale."""

    batch: str
    scale: str
    item: tasks.GradingItem | None
    progress: tasks.GraderProgress
    grades: list[dict[str, Any]]
    guideline: str
    can_undo: bool = False
    warnings: list[str] = field(default_factory=list)
    feedback: str | None = None  # after a gold item of a --gold-feedback batch: the reference grade
    notice: str | None = None  # what the grader's last action did ("Saved: 2 — Highly relevant")


def progress_dict(progress: tasks.GraderProgress) -> dict[str, int]:
    return {"done": progress.done, "skipped": progress.skipped, "open": progress.open, "total": progress.total}


def item_payload(view: GradingView) -> dict[str, Any] | None:
    """The API's item: exactly ``item_id, query, title, body, url, scale, grades`` (no position either)."""
    if view.item is None:
        return None
    it = view.item
    return {"item_id": it.item_id, "query": it.query, "title": it.title, "body": it.body, "url": it.url,
            "scale": view.scale, "grades": view.grades}


def _not_yours(batch: str) -> NotFoundError:
    return NotFoundError(f"no batch {batch!r} with items for you")


def _find_batch(batch: str, *, session: Session) -> m.GradingBatch:
    """``require_batch`` whose not-found message names no other batch."""
    try:
        return tasks.require_batch(batch, session=session)
    except NotFoundError:
        raise _not_yours(batch) from None


def _my_batch(batch: str, user: WebUser, *, session: Session) -> tuple[m.GradingBatch, tasks.GraderProgress]:
    found = _find_batch(batch, session=session)
    try:
        return found, tasks.grader_progress(batch, grader=user.grader, session=session)
    except NotFoundError:
        raise _not_yours(batch) from None


def my_batches(user: WebUser, *, session: Session) -> list[dict[str, Any]]:
    """The batches the grader has items in, oldest first, with their progress."""
    out = []
    for row in tasks.list_batches(session=session):
        try:
            progress = tasks.grader_progress(row["batch"], grader=user.grader, session=session)
        except NotFoundError:
            continue
        out.append({"batch": row["batch"], "scale": row["scale"], **progress_dict(progress)})
    return out


def grading_view(batch: str, user: WebUser, *, session: Session, after: str | None = None,
                 undone: str | None = None) -> GradingView:
    """The grader's first open item of ``batch`` (resume point), progress, and the scale's grades.

    ``after``: the item the grader just graded or skipped: the view's ``notice`` says what is stored
    for it (read back from the database), and in a batch created with ``--gold-feedback`` the view
    carries the feedback of :func:`~ndcg_labeling.labels.gold.gold_feedback` when that item was gold
    (the same text the terminal prints; None for an ordinary item, another grader's or an ungraded one).
    ``undone``: what :func:`undo_last` returned (``"2"``, ``"skip"``): the notice names the grade undone.
    """
    found, progress = _my_batch(batch, user, session=session)
    grades, guideline = scale_grades(found.scale)
    notice = feedback = None
    if after:  # gold_feedback owns the rule (None without --gold-feedback, for ordinary or ungraded items)
        from ndcg_labeling.labels.gold import gold_feedback

        notice = _stored_notice(found, after, user, grades, session=session)
        shown = gold_feedback(batch, after, grader=user.grader, session=session)
        feedback = None if shown is None else str(shown)
    elif undone:
        notice = _undone_notice(undone, grades)
    item = tasks.next_item(batch, grader=user.grader, session=session)
    return GradingView(found.name, found.scale, item, progress, grades, guideline,
                       can_undo=progress.done + progress.skipped > 0, warnings=tasks.guideline_warnings(found), feedback=feedback,
                       notice=notice)


def _grade_label(value: int, grades: list[dict[str, Any]]) -> str:
    name = next((g["name"] for g in grades if g["value"] == value), "")
    return f"{value} — {name}" if name else str(value)


def _stored(found: m.GradingBatch, item_id: str, user: WebUser, *, session: Session) -> tuple[str, int | None, str]:
    """What is stored for one of the grader's items: ``(status, grade, skip reason)``; status "open"
    also for an item that is not the grader's."""
    a = m.Assignment
    row = session.execute(
        select(a.id, a.status, a.skip_reason, m.BatchItem.query_id, m.BatchItem.document_id)
        .join(m.BatchItem, m.BatchItem.id == a.item_id)
        .where(a.batch_id == found.id, a.grader_id == user.grader_id, m.BatchItem.item_key == item_id)).first()
    if row is None or row.status != "done":
        return ("open", None, "") if row is None else (row.status, None, row.skip_reason or "")
    grade = session.execute(select(m.GoldAnswer.grade).where(m.GoldAnswer.assignment_id == row.id)).scalar()
    if grade is None:
        grade = session.execute(select(m.Judgment.grade).where(
            m.Judgment.grader_id == user.grader_id, m.Judgment.query_id == row.query_id,
            m.Judgment.document_id == row.document_id, m.Judgment.batch == found.name)).scalar()
    return "done", None if grade is None else int(grade), ""


def _stored_notice(found: m.GradingBatch, item_id: str, user: WebUser, grades: list[dict[str, Any]], *,
                   session: Session) -> str | None:
    """"Saved: 2 — Highly relevant." or "Skipped (reason)." for one of the grader's items, as stored
    now; None for an open item or one that is not the grader's."""
    status, grade, reason = _stored(found, item_id, user, session=session)
    if status == "skipped":
        return f"Skipped ({reason or tasks.DEFAULT_SKIP_REASON})."
    return None if grade is None else f"Saved: {_grade_label(grade, grades)}."


def _undone_notice(undone: str, grades: list[dict[str, Any]]) -> str | None:
    """The notice after ``u``: which grade (or skip) was undone; None for anything else."""
    if undone == "skip":
        return "Undone: your skip. The item is open again."
    if undone.isdigit() and int(undone) in {g["value"] for g in grades}:
        return f"Undone: your grade {_grade_label(int(undone), grades)}. The item is open again."
    return None


def next_payload(batch: str, user: WebUser, *, session: Session) -> dict[str, Any] | None:
    """The API's next item (:func:`item_payload`), or None when the grader has nothing open in ``batch``.

    Progress is counted only when nothing is open (to tell "all done" from "no items of yours").
    """
    found = _find_batch(batch, session=session)
    item = tasks.next_item(batch, grader=user.grader, session=session)
    if item is None:
        _my_batch(batch, user, session=session)  # NotFoundError when the grader has no items here
        return None
    grades, _ = scale_grades(found.scale)
    return item_payload(GradingView(found.name, found.scale, item, tasks.GraderProgress(user.grader, 0, 0, 0),
                                    grades, ""))


def _mine(batch: str, item_id: str, work: Callable[[], Any]) -> Any:
    """Run one grading operation; a batch or an item that is not the caller's gives one not-found message."""
    try:
        return work()
    except NotFoundError:
        raise NotFoundError(f"no item {item_id!r} for you in batch {batch!r}") from None


def grade_item(batch: str, item_id: str, grade: Any, user: WebUser, *, session: Session) -> dict[str, Any]:
    """Store the grader's grade of one of their items; returns their progress (and, in a batch created
    with ``--gold-feedback``, ``feedback``: None, or the reference grade after a gold item).

    ``save_grade`` reads the grade exactly as the scale writes it (a JSON integer, ``"2"`` or a grade
    name; not ``"+2"``, ``"02"``, ``" 2 "``: :func:`ndcg_labeling.scales.parse_exact_grade`);
    :class:`InvalidInput` when it is not one of the batch's grades.
    """
    if isinstance(grade, bool) or not isinstance(grade, int | str):
        raise InvalidInput(f"grade {grade!r} is not a number or a grade name")
    try:
        _mine(batch, item_id, lambda: tasks.save_grade(batch, item_id, grade, grader=user.grader, session=session,
                                                                 exact=True))
    except NotFoundError:
        raise
    except NdcgLabelingError as exc:  # the grade parser's message: not a grade of the batch's scale
        raise InvalidInput(str(exc)) from None
    out: dict[str, Any] = progress_dict(tasks.grader_progress(batch, grader=user.grader, session=session))
    if tasks.require_batch(batch, session=session).gold_feedback:  # the same keys for every item of the batch
        from ndcg_labeling.labels.gold import gold_feedback

        feedback = gold_feedback(batch, item_id, grader=user.grader, session=session)
        out["feedback"] = None if feedback is None else feedback.as_dict()
    return out


def skip(batch: str, item_id: str, reason: str, user: WebUser, *, session: Session) -> dict[str, int]:
    """Skip one of the grader's items with a reason (empty: "cannot judge"); returns their progress."""
    if not isinstance(reason, str) or len(reason) > MAX_SKIP_REASON:
        raise InvalidInput(f"a skip reason is text of at most {MAX_SKIP_REASON} characters")
    _mine(batch, item_id, lambda: tasks.skip_item(batch, item_id, grader=user.grader, session=session, reason=reason))
    return progress_dict(tasks.grader_progress(batch, grader=user.grader, session=session))


def undo(batch: str, item_id: str, user: WebUser, *, session: Session) -> dict[str, int]:
    """Reopen one of the grader's items (its grade or skip is removed); returns their progress."""
    _mine(batch, item_id, lambda: tasks.undo_item(batch, item_id, grader=user.grader, session=session))
    return progress_dict(tasks.grader_progress(batch, grader=user.grader, session=session))


def undo_last(batch: str, user: WebUser, *, session: Session) -> tuple[str, str] | None:
    """Reopen the grader's most recently graded or skipped item of ``batch``: ``(item id, what was
    undone)`` with what = the grade (``"2"``) or ``"skip"``; None when nothing is graded or skipped.

    Repeated, it walks back through the grader's grades and skips, newest first (the web page's
    ``u``; the terminal's ``u`` undoes within its session the same way).
    """
    found, _ = _my_batch(batch, user, session=session)
    a = m.Assignment
    last = session.execute(
        select(m.BatchItem.item_key).join(a, a.item_id == m.BatchItem.id)
        .where(a.batch_id == found.id, a.grader_id == user.grader_id, a.status != "open")
        .order_by(a.updated_at.desc(), a.id.desc()).limit(1)).scalar_one_or_none()
    if last is None:
        return None
    status, grade, _ = _stored(found, last, user, session=session)
    what = "skip" if status == "skipped" else str(grade)
    tasks.undo_item(batch, last, grader=user.grader, session=session)
    return str(last), what


def my_progress(batch: str, user: WebUser, *, session: Session) -> dict[str, int]:
    return progress_dict(_my_batch(batch, user, session=session)[1])


# --- lead views -------------------------------------------------------------------------------------


@dataclass
class BatchDetail:
    status: tasks.BatchStatus
    skips: list[dict[str, Any]]


@dataclass
class AgreementView:
    batch: str | None
    by_query_type: list[dict[str, Any]] = field(default_factory=list)
    by_grader: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def batch_detail(batch: str, *, session: Session) -> BatchDetail:
    """Per-grader progress of a batch (``tasks status``) and every skip with its reason."""
    status = tasks.batch_status(batch, session=session)
    found = tasks.require_batch(batch, session=session)
    a = m.Assignment
    rows = session.execute(
        select(m.Grader.name, m.Query.external_id, m.Query.text, m.Document.external_id, m.Document.title,
               a.skip_reason, a.updated_at)
        .join(m.Grader, m.Grader.id == a.grader_id).join(m.BatchItem, m.BatchItem.id == a.item_id)
        .join(m.Query, m.Query.id == m.BatchItem.query_id).join(m.Document, m.Document.id == m.BatchItem.document_id)
        .where(a.batch_id == found.id, a.status == "skipped").order_by(m.Grader.name, a.updated_at)).all()
    skips = [{"grader": g, "query_id": q, "query": qt or q, "doc_id": d, "title": t or "", "reason": r or "",
              "when": w.isoformat(sep=" ", timespec="seconds") if w else ""} for g, q, qt, d, t, r, w in rows]
    return BatchDetail(status, skips)


def agreement_view(batch: str | None, *, session: Session) -> AgreementView:
    """Agreement per query type (alpha, AC1) and per grader (mean kappa, flagged), from ``agreement``."""
    from ndcg_labeling.labels.agreement import agreement_report

    view = AgreementView(batch)
    for by, target in (("query-type", view.by_query_type), ("grader", view.by_grader)):
        try:
            rep = agreement_report(session=session, batch=batch, by=by)  # type: ignore[arg-type]
        except NdcgLabelingError as exc:
            view.notes.append(f"agreement by {by}: {exc}")
            continue
        target.extend(rep.rows)
        view.notes.extend(n for n in rep.notes if n not in view.notes)
        view.warnings.extend(w for w in rep.warnings if w not in view.warnings)
    return view


@dataclass
class LiveReport:
    """The live report's HTML, or (``html`` None) what is missing before there can be one, in plain words."""

    html: str | None
    missing: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


#: what the report reads: a table's key column (its largest value moves when rows are added) and a value
#: column whose change in place must change the version (None: rows are only added or removed)
_REPORT_INPUTS: tuple[tuple[Any, Any], ...] = (
    (m.Judgment.id, m.Judgment.grade), (m.ConsensusLabel.id, m.ConsensusLabel.value),
    (m.Adjudication.id, m.Adjudication.grade), (m.RankingEntry.id, m.RankingEntry.score), (m.System.id, None),
    (m.Query.id, None), (m.Document.id, None), (m.GoldItem.id, None), (m.GoldAnswer.id, None),
    (m.ConsensusSetting.updated_at, None), (m.JudgmentProvenance.judgment_id, None),
    (m.CalibrationVerdict.id, None), (m.BehaviorDerivation.id, None),
)


def labels_version(*, session: Session) -> tuple[object, ...]:
    """A cheap fingerprint of everything the live report reads: per table its row count, its largest id
    and a checksum of the value column weighted by id (a regrade in place, a new consensus run, a new
    adjudication or run all change it). Equal fingerprints: the report would come out the same, so the
    web layer may serve the one it computed (one aggregate query per table; milliseconds)."""
    from sqlalchemy import func

    out: list[object] = []
    for key, value in _REPORT_INPUTS:
        cols = [func.count(), func.max(key)]
        if value is not None:
            cols.append(func.sum(func.coalesce(value, -1) * (key % 9973 + 1)))
        row = session.execute(select(*cols).select_from(key.class_)).one()
        out.append(tuple(float(v) if isinstance(v, float) else v for v in row))
    return tuple(out)


def _count(model: Any, *, session: Session) -> int:
    from sqlalchemy import func

    return int(session.execute(select(func.count()).select_from(model)).scalar_one())


def live_report(*, session: Session, options: ReportOptions | None = None,
                words: Callable[[str], str] | None = None) -> LiveReport:
    """The HTML report (``report --format html``) of the database as it is now; when there is none yet,
    what is missing (no system rankings, no grades, grades without consensus labels), in plain words.
    ``options``: the baseline and headline metric the lead chose (None: the report's defaults);
    ``words``: how the report's warnings and notes are worded for the page (the web's)."""
    counts = {"systems": _count(m.System, session=session), "judgments": _count(m.Judgment, session=session),
              "labels": _count(m.ConsensusLabel, session=session) + _count(m.Adjudication, session=session)}
    missing = []
    if not counts["systems"]:
        missing.append("No system rankings are stored yet: the report compares systems' rankings, so upload "
                       "at least one run.")
    if not counts["judgments"] and not counts["labels"]:
        missing.append("No grades are stored yet: the graders' grades (or imported judgments) are what the "
                       "systems are scored against.")
    elif not counts["labels"]:
        missing.append(f"{counts['judgments']} grades are stored, but they have not been combined into one "
                       "label per query and document yet: run consensus, then this page shows the report.")
    if missing:
        return LiveReport(None, missing, counts)
    try:
        return LiveReport(live_report_html(session=session, options=options, words=words), [], counts)
    except NdcgLabelingError as exc:  # e.g. no query with a relevant document: the pipeline's own words
        return LiveReport(None, [str(exc).split(": run `", 1)[0].rstrip(".") + "."], counts)


def live_report_html(*, session: Session, options: ReportOptions | None = None,
                     words: Callable[[str], str] | None = None) -> str:
    """The HTML report (``report --format html``) of the database as it is now."""
    from ndcg_labeling.reports import render_html
    from ndcg_labeling.scoring.report import build_report

    return render_html(build_report(session=session, options=options), words=words)  # the agreement section: the caveats' own measurement
