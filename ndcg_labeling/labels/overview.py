"""Read-only overviews for the light commands: ``graders list``, ``tasks status``, ``tasks list`` and
``adjudicate list``.

Core queries over :mod:`ndcg_labeling.db.tables`, so these commands start without ``sqlalchemy.orm``,
the ORM models, numpy or pandas (issue 17). Each function takes ``session=``: a Core connection (the
CLI) or an ORM session (the web workspace, the tests); both run the same statements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, case, func, select

from ndcg_labeling.db import tables as t
from ndcg_labeling.errors import NotFoundError
from ndcg_labeling.guidelines import guideline_changed

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

    Reader = Connection | Session


# --- graders ------------------------------------------------------------------------------------

def list_graders(*, session: Reader) -> list[dict[str, Any]]:
    """Every grader by name: display name, active flag, role (grader or lead), kind and number of judgments."""
    t.flush_pending(session)
    j, g = t.judgments, t.graders
    counts = {gid: n for gid, n in session.execute(select(j.c.grader_id, func.count()).group_by(j.c.grader_id))}
    return [{"grader": r.name, "display_name": r.display_name, "active": r.active, "role": r.role, "kind": r.kind,
             "judgments": counts.get(r.id, 0)}
            for r in session.execute(select(g.c.id, g.c.name, g.c.display_name, g.c.active, g.c.role, g.c.kind)
                                     .order_by(g.c.name))]


# --- grading batches ----------------------------------------------------------------------------

def guideline_warning(batch: str, path: str, version: str | None) -> str:
    return (f"the guideline {path} has changed since batch {batch!r} was created (it was version "
            f"{version or '?'}; its sha256 differs now): the grades of this batch follow the text as it was then")


def unknown_batch(name: str, *, session: Reader) -> NotFoundError:
    """The error for a batch name that does not exist, naming up to 20 that do."""
    b = t.grading_batches
    known = [str(n) for n in session.execute(select(b.c.name).order_by(b.c.name).limit(20)).scalars()]
    hint = f"; known batches: {', '.join(known)}" if known else "; create one with `ndcg-labeling tasks create`"
    return NotFoundError(f"unknown batch {name!r}{hint}")


@dataclass
class GraderProgress:
    grader: str
    done: int
    skipped: int
    total: int

    @property
    def open(self) -> int:
        return self.total - self.done - self.skipped


@dataclass
class BatchStatus:
    """Progress of a batch. ``complete_items``: items with all ``overlap`` grades; ``open_items``:
    items that at least one of their graders has neither graded nor skipped."""

    batch: str
    scale: str
    overlap: int
    items: int
    complete_items: int
    open_items: int
    graders: list[GraderProgress]
    guideline_path: str
    guideline_version: str | None
    guideline_changed: bool

    @property
    def warnings(self) -> list[str]:
        if not self.guideline_changed:
            return []
        return [guideline_warning(self.batch, self.guideline_path, self.guideline_version)]

    def as_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "scale": self.scale, "items": self.items,
                "complete_items": self.complete_items, "open_items": self.open_items,
                "graders": [{"grader": g.grader, "done": g.done, "skipped": g.skipped, "total": g.total}
                            for g in self.graders],
                "overlap": self.overlap, "guideline_path": self.guideline_path,
                "guideline_version": self.guideline_version, "guideline_changed": self.guideline_changed}


def batch_status(name: str, *, session: Reader) -> BatchStatus:
    """Per-grader done/skipped/total, items with all grades, items still open, and whether the
    guideline file changed since the batch was created."""
    t.flush_pending(session)
    b, a, g = t.grading_batches, t.assignments, t.graders
    batch = session.execute(select(b.c.id, b.c.name, b.c.scale, b.c.overlap, b.c.guideline_path,
                                   b.c.guideline_version, b.c.guideline_sha256).where(b.c.name == name)).first()
    if batch is None:
        raise unknown_batch(name, session=session)
    done = func.sum(case((a.c.status == "done", 1), else_=0))
    skipped = func.sum(case((a.c.status == "skipped", 1), else_=0))
    per_grader = session.execute(
        select(g.c.name, done, skipped, func.count())
        .join(g, g.c.id == a.c.grader_id).where(a.c.batch_id == batch.id)
        .group_by(g.c.name).order_by(g.c.name)).all()
    items = session.execute(select(func.count()).select_from(t.batch_items)
                            .where(t.batch_items.c.batch_id == batch.id)).scalar_one()
    per_item = (select(a.c.item_id, done.label("done"),
                       func.sum(case((a.c.status == "open", 1), else_=0)).label("open"), func.count().label("n"))
                .where(a.c.batch_id == batch.id).group_by(a.c.item_id).subquery())
    complete, open_items = session.execute(
        select(func.coalesce(func.sum(case((per_item.c.done >= per_item.c.n, 1), else_=0)), 0),
               func.coalesce(func.sum(case((per_item.c.open > 0, 1), else_=0)), 0))).one()
    return BatchStatus(batch=batch.name, scale=batch.scale, overlap=batch.overlap, items=int(items),
                       complete_items=int(complete), open_items=int(open_items),
                       graders=[GraderProgress(gr, int(d or 0), int(s or 0), int(n)) for gr, d, s, n in per_grader],
                       guideline_path=batch.guideline_path, guideline_version=batch.guideline_version,
                       guideline_changed=guideline_changed(batch.scale, batch.guideline_sha256))


def list_batches(*, session: Reader) -> list[dict[str, Any]]:
    """Every batch: name, scale, items, graders, overlap, assignments done/total, progress (0..1), and
    ``complete_items``: the items with all their grades (every assignment of the item done)."""
    t.flush_pending(session)
    a, b, bi = t.assignments, t.grading_batches, t.batch_items
    items = {bid: n for bid, n in session.execute(select(bi.c.batch_id, func.count()).group_by(bi.c.batch_id))}
    per_item = (select(a.c.batch_id, func.min(case((a.c.status == "done", 1), else_=0)).label("all_done"))
                .group_by(a.c.batch_id, a.c.item_id).subquery())
    complete = {bid: int(n or 0) for bid, n in session.execute(
        select(per_item.c.batch_id, func.sum(per_item.c.all_done)).group_by(per_item.c.batch_id))}
    progress = {bid: (int(d or 0), int(n), int(g)) for bid, d, n, g in session.execute(
        select(a.c.batch_id, func.sum(case((a.c.status == "done", 1), else_=0)), func.count(),
               func.count(a.c.grader_id.distinct())).group_by(a.c.batch_id))}
    rows = []
    for batch in session.execute(select(b.c.id, b.c.name, b.c.scale, b.c.overlap, b.c.guideline_version,
                                        b.c.guideline_sha256, b.c.created_at).order_by(b.c.created_at, b.c.id)):
        done, total, graders = progress.get(batch.id, (0, 0, 0))
        rows.append({"batch": batch.name, "scale": batch.scale, "items": int(items.get(batch.id, 0)),
                     "graders": graders, "overlap": batch.overlap, "done": done, "total": total,
                     "complete_items": complete.get(batch.id, 0),
                     "progress": round(done / total, 4) if total else 0.0,
                     "guideline_version": batch.guideline_version,
                     "guideline_changed": guideline_changed(batch.scale, batch.guideline_sha256),
                     "created_at": batch.created_at.isoformat(sep=" ", timespec="seconds")})
    return rows


# --- adjudication -------------------------------------------------------------------------------

def latest_adjudications(session: Reader) -> dict[tuple[int, int], Any]:
    """The adjudication in force per (query id, document id): rows with id, grade, adjudicator, note."""
    t.flush_pending(session)
    adj = t.adjudications
    rows = session.execute(select(adj.c.query_id, adj.c.document_id, adj.c.grade, adj.c.adjudicator, adj.c.note,
                                  adj.c.id).order_by(adj.c.id)).all()
    # ids grow with every insert, so the highest id of a pair is its newest row (created_at can tie)
    return {(int(r.query_id), int(r.document_id)): r for r in rows}


def flagged_items(*, session: Reader, batch: str | None = None) -> list[dict[str, Any]]:
    """Consensus labels flagged for adjudication, with every grade that counted and any adjudication.

    Rows: query_id, doc_id (external ids), batch, consensus, method, n_graders, spread, reason, grades
    (``"alice: 2, bob: 3"``, graders by name; ``people_grades`` holds the human graders' of them and
    ``other_grades`` the model and behavior graders', ``"gpt-judge (model): 2"``), adjudicated (the grade in force, or None), adjudicator,
    flagged_by (``"consensus of batch B"`` or ``"consensus of all judgments"``). Sorted by query id then
    doc id. ``batch``: the flagged items of that batch's pairs: the labels of a consensus run for that
    batch, and the labels of a consensus run over all judgments whose pair the batch graded.
    """
    t.flush_pending(session)
    label, q, d, j, g = t.consensus_labels.c, t.queries, t.documents, t.judgments, t.graders
    stmt = (select(label.query_id, label.document_id, q.c.external_id, d.c.external_id, label.batch,
                   label.value, label.method, label.n_graders, label.spread, label.reason)
            .join(q, q.c.id == label.query_id).join(d, d.c.id == label.document_id)
            .where(label.needs_adjudication.is_(True)))
    if batch is not None:
        graded_here = (select(j.c.id).where(j.c.batch == batch, j.c.query_id == label.query_id,
                                            j.c.document_id == label.document_id).exists())
        stmt = stmt.where((label.batch == batch) | ((label.batch == "") & graded_here))
    labels = session.execute(stmt).all()
    if not labels:
        return []
    grade_stmt = (select(j.c.query_id, j.c.document_id, j.c.batch, g.c.name, j.c.grade, g.c.kind)
                  .join(g, g.c.id == j.c.grader_id)
                  .join(t.consensus_labels, and_(label.query_id == j.c.query_id,
                                                 label.document_id == j.c.document_id))
                  .where(label.needs_adjudication.is_(True))
                  .where((label.batch == "") | (label.batch == j.c.batch)))
    if batch is not None:
        grade_stmt = grade_stmt.where(label.batch.in_(["", batch]))
    grades: dict[tuple[int, int], list[tuple[str, int, str]]] = {}
    for qid, did, _jbatch, name, grade, kind in session.execute(grade_stmt):
        grades.setdefault((qid, did), []).append((name, grade, kind))
    adjudicated = latest_adjudications(session)
    out = []
    for qid, did, q_ext, d_ext, lbatch, value, method, n_graders, spread, reason in labels:
        adj = adjudicated.get((qid, did))
        out.append({
            "query_id": q_ext, "doc_id": d_ext, "batch": lbatch, "consensus": value, "method": method,
            "n_graders": n_graders, "spread": spread, "reason": reason,
            "grades": ", ".join(f"{name}: {gr}" for name, gr, _ in sorted(grades.get((qid, did), []))),
            "people_grades": ", ".join(f"{name}: {gr}" for name, gr, kind in sorted(grades.get((qid, did), []))
                                       if kind == "human"),
            "other_grades": ", ".join(f"{name} ({kind}): {gr}" for name, gr, kind in sorted(grades.get((qid, did), []))
                                      if kind != "human"),
            "adjudicated": None if adj is None else float(adj.grade),
            "adjudicator": None if adj is None else adj.adjudicator,
            "flagged_by": f"consensus of batch {lbatch}" if lbatch else "consensus of all judgments",
        })
    out.sort(key=lambda r: (r["query_id"], r["doc_id"]))
    return out
