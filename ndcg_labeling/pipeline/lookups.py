"""Lookups by name that every use case shares, with the one message for a name that does not exist."""

from __future__ import annotations

from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NotFoundError
from ndcg_labeling.pipeline.overview import (
    list_graders as list_graders,  # a Core read: `graders list` starts fast
)


def require_grader(name: str, *, session: Session) -> m.Grader:
    """The grader called ``name``; :class:`NotFoundError` (with how to add it) when there is none."""
    grader = repo.grader_by_name(name, session=session)
    if grader is None:
        raise NotFoundError(f"unknown grader {name!r}; add it with `ndcg-labeling graders add {name}`")
    return grader
