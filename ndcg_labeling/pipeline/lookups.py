"""Lookups by name that every use case shares, with the one message for a name that does not exist."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NotFoundError


def require_grader(name: str, *, session: Session) -> m.Grader:
    """The grader called ``name``; :class:`NotFoundError` (with how to add it) when there is none."""
    grader = repo.grader_by_name(name, session=session)
    if grader is None:
        raise NotFoundError(f"unknown grader {name!r}; add it with `ndcg-labeling graders add {name}`")
    return grader


def list_graders(*, session: Session) -> list[dict[str, Any]]:
    """Every grader by name: display name, active flag and number of judgments (no pandas: `graders list`
    starts fast)."""
    counts = dict(session.execute(select(m.Judgment.grader_id, func.count()).group_by(m.Judgment.grader_id)).all())
    return [{"grader": g.name, "display_name": g.display_name, "active": g.active, "kind": g.kind,
             "judgments": counts.get(g.id, 0)}
            for g in session.execute(select(m.Grader).order_by(m.Grader.name)).scalars()]
