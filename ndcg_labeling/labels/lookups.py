"""Lookups by name that every use case shares, with the one message for a name that does not exist."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.choices import GraderRole
from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.overview import unknown_batch


def require_grader(name: str, *, session: Session) -> m.Grader:
    """The grader called ``name``; :class:`NotFoundError` (with how to add it) when there is none."""
    grader = repo.grader_by_name(name, session=session)
    if grader is None:
        raise NotFoundError(f"unknown grader {name!r}; add it with `ndcg-labeling graders add {name}`")
    return grader


def require_batch(name: str, *, session: Session) -> m.GradingBatch:
    """The grading batch called ``name``; :class:`NotFoundError` (naming the batches there are) otherwise."""
    batch = session.execute(select(m.GradingBatch).where(m.GradingBatch.name == name)).scalar_one_or_none()
    if batch is None:
        raise unknown_batch(name, session=session)
    return batch


ROLES = tuple(GraderRole)


def check_role(role: str) -> str:
    """``role`` if it is a grader role (grader or lead); the one message of ``graders add --role`` and
    ``graders role`` otherwise."""
    if role not in ROLES:
        raise NdcgLabelingError(f"unknown role {role!r}; use {' or '.join(ROLES)}")
    return role
