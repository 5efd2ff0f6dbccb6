"""What every grading use case shares: batch and grader lookups, the guideline check, the grade parser
and the grader's items as stored (in the grader's order)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import NotFoundError
from ndcg_labeling.guidelines import Guideline, guideline_changed
from ndcg_labeling.labels.lookups import (
    require_batch as require_batch,  # tasks' modules import it from here
)
from ndcg_labeling.labels.overview import guideline_warning as guideline_warning
from ndcg_labeling.scales import Scale, parse_grade

_IN_CHUNK = 10_000


def guideline_warnings(batch: m.GradingBatch) -> list[str]:
    """The warning when the batch's guideline file changed since the batch was made (else none)."""
    if not guideline_changed(batch.scale, batch.guideline_sha256):
        return []
    return [guideline_warning(batch.name, batch.guideline_path, batch.guideline_version)]


def parse_task_grade(raw: object, scale: Scale, guideline: Guideline | None = None) -> int:
    """A grade given as a number (``"2"``, ``2``) or a grade name (``"Highly relevant"``, any case).

    ``ValueError`` says why it is not a grade of ``scale``.
    """
    text = str(raw).strip()
    names = {n.lower(): scale.min_grade + i for i, n in enumerate(guideline.names if guideline else scale.names)}
    if text.lower() in names:
        return names[text.lower()]
    try:
        return parse_grade(text, scale)
    except ValueError as exc:
        if "not an integer" in str(exc):
            raise ValueError(f"grade {text!r} is not a grade of scale {scale.name} "
                             f"({scale.min_grade}..{scale.max_grade} or a grade name)") from None
        raise


def _open_item_rows(batch_id: int, grader_id: int, *, session: Session, limit: int | None = None) -> list[dict[str, Any]]:
    a, bi, q, d = m.Assignment, m.BatchItem, m.Query, m.Document
    stmt = (select(bi.item_key, a.position, q.text, q.external_id, d.title, d.body, d.url)
            .join(bi, bi.id == a.item_id).join(q, q.id == bi.query_id).join(d, d.id == bi.document_id)
            .where(a.batch_id == batch_id, a.grader_id == grader_id, a.status == "open").order_by(a.position))
    if limit is not None:
        stmt = stmt.limit(limit)
    return [{"item_id": key, "position": pos, "query": text if text else ext, "title": title or "",
             "body": body or "", "url": url or "", "grade": ""}
            for key, pos, text, ext, title, body, url in session.execute(stmt)]


def _require_assigned(batch: m.GradingBatch, grader: m.Grader, *, session: Session) -> None:
    has = session.execute(select(m.Assignment.id).where(m.Assignment.batch_id == batch.id,
                                                        m.Assignment.grader_id == grader.id).limit(1)).first()
    if has is None:
        raise NotFoundError(f"grader {grader.name!r} has no items in batch {batch.name!r}")
