"""``tasks status`` and ``tasks list``: progress per batch and per grader.

Imports nothing heavy (no pandas, numba or matplotlib): the status commands start fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.pipeline.tasks._common import _guideline_changed, guideline_warning, require_batch


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


def batch_status(name: str, *, session: Session) -> BatchStatus:
    """Per-grader done/skipped/total, items with all grades, items still open, and whether the
    guideline file changed since the batch was created."""
    batch = require_batch(name, session=session)
    a = m.Assignment
    done = func.sum(case((a.status == "done", 1), else_=0))
    skipped = func.sum(case((a.status == "skipped", 1), else_=0))
    per_grader = session.execute(
        select(m.Grader.name, done, skipped, func.count())
        .join(m.Grader, m.Grader.id == a.grader_id).where(a.batch_id == batch.id)
        .group_by(m.Grader.name).order_by(m.Grader.name)).all()
    items = session.execute(select(func.count()).select_from(m.BatchItem)
                            .where(m.BatchItem.batch_id == batch.id)).scalar_one()
    per_item = (select(a.item_id, done.label("done"),
                       func.sum(case((a.status == "open", 1), else_=0)).label("open"), func.count().label("n"))
                .where(a.batch_id == batch.id).group_by(a.item_id).subquery())
    complete, open_items = session.execute(
        select(func.coalesce(func.sum(case((per_item.c.done >= per_item.c.n, 1), else_=0)), 0),
               func.coalesce(func.sum(case((per_item.c.open > 0, 1), else_=0)), 0))).one()
    return BatchStatus(batch=batch.name, scale=batch.scale, overlap=batch.overlap, items=int(items),
                       complete_items=int(complete), open_items=int(open_items),
                       graders=[GraderProgress(g, int(d or 0), int(s or 0), int(t)) for g, d, s, t in per_grader],
                       guideline_path=batch.guideline_path, guideline_version=batch.guideline_version,
                       guideline_changed=_guideline_changed(batch))


def list_batches(*, session: Session) -> list[dict[str, Any]]:
    """Every batch: name, scale, items, graders, overlap, assignments done/total, progress (0..1)."""
    a = m.Assignment
    items = dict(session.execute(select(m.BatchItem.batch_id, func.count()).group_by(m.BatchItem.batch_id)).all())
    progress = {b: (int(d or 0), int(t), int(g)) for b, d, t, g in session.execute(
        select(a.batch_id, func.sum(case((a.status == "done", 1), else_=0)), func.count(),
               func.count(a.grader_id.distinct())).group_by(a.batch_id)).all()}
    rows = []
    for batch in session.execute(select(m.GradingBatch).order_by(m.GradingBatch.created_at, m.GradingBatch.id)).scalars():
        done, total, graders = progress.get(batch.id, (0, 0, 0))
        rows.append({"batch": batch.name, "scale": batch.scale, "items": int(items.get(batch.id, 0)),
                     "graders": graders, "overlap": batch.overlap, "done": done, "total": total,
                     "progress": round(done / total, 4) if total else 0.0,
                     "guideline_version": batch.guideline_version,
                     "guideline_changed": _guideline_changed(batch),
                     "created_at": batch.created_at.isoformat(sep=" ", timespec="seconds")})
    return rows
