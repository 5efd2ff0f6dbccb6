"""The JSON API (``/api``): what the pages' integrations use. Bearer token or session cookie.

No payload carries a rank, score, system, position or another grader: items are
:func:`~ndcg_labeling.workspace.grading.item_payload`, progress is the caller's own.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr

from ndcg_labeling.errors import InvalidInput
from ndcg_labeling.labels import tasks
from ndcg_labeling.labels.adjudication import adjudication_queue
from ndcg_labeling.web.deps import ApiLead, ApiUser, SessionDep, WriterDep
from ndcg_labeling.workspace import grading as workspace

router = APIRouter(prefix="/api")


class GradeIn(BaseModel):
    """``{"grade": 2}`` (a number or a grade name) or ``{"skip": "reason"}``."""

    model_config = ConfigDict(extra="forbid")
    grade: StrictInt | StrictStr | None = None
    skip: StrictStr | None = None


@router.get("/me")
def me(user: ApiUser) -> dict[str, str]:
    return user.as_dict()


@router.get("/batches")
def my_batches(user: ApiUser, session: SessionDep) -> list[dict[str, Any]]:
    return workspace.my_batches(user, session=session)


@router.get("/batches/{batch:path}/next", response_model=None)
def next_item(batch: str, user: ApiUser, session: SessionDep) -> dict[str, Any] | Response:
    payload = workspace.next_payload(batch, user, session=session)
    return Response(status_code=204) if payload is None else payload


@router.post("/batches/{batch:path}/items/{item_id}/grade")
def grade(batch: str, item_id: str, body: GradeIn, user: ApiUser, writer: WriterDep) -> dict[str, Any]:
    if (body.grade is None) == (body.skip is None):
        raise InvalidInput('send either {"grade": N} or {"skip": "reason"}')
    if body.skip is not None:
        reason = body.skip
        return writer(lambda s: workspace.skip(batch, item_id, reason, user, session=s))  # type: ignore[no-any-return]
    value = body.grade
    return writer(lambda s: workspace.grade_item(batch, item_id, value, user, session=s))  # type: ignore[no-any-return]


@router.post("/batches/{batch:path}/items/{item_id}/undo")
def undo(batch: str, item_id: str, user: ApiUser, writer: WriterDep) -> dict[str, int]:
    return writer(lambda s: workspace.undo(batch, item_id, user, session=s))  # type: ignore[no-any-return]


@router.get("/batches/{batch:path}/progress")
def progress(batch: str, user: ApiUser, session: SessionDep) -> dict[str, int]:
    return workspace.my_progress(batch, user, session=session)


@router.get("/lead/batches")
def lead_batches(user: ApiLead, session: SessionDep) -> list[dict[str, Any]]:
    return tasks.list_batches(session=session)


@router.get("/lead/batches/{batch:path}/status")
def lead_status(batch: str, user: ApiLead, session: SessionDep) -> dict[str, Any]:
    return tasks.batch_status(batch, session=session).as_dict()


class AdjudicationIn(BaseModel):
    """``{"query_id", "doc_id", "grade", "note", "version", "confirm"}``: ``version`` is the decision the
    lead saw (the queue's ``version``; 0: none); a different decision made since is a 409 naming it."""

    model_config = ConfigDict(extra="forbid")
    query_id: StrictStr
    doc_id: StrictStr
    grade: StrictInt
    note: StrictStr | None = None
    version: StrictInt | None = None
    confirm: bool = False


@router.post("/lead/adjudication")
def lead_adjudicate(body: AdjudicationIn, user: ApiLead, writer: WriterDep) -> dict[str, Any]:
    from ndcg_labeling.labels.adjudication import adjudicate

    done = writer(lambda s: adjudicate(body.query_id, body.doc_id, body.grade, body.note, user.grader, session=s,
                                       version=body.version, confirm=body.confirm))
    return done.as_dict()  # type: ignore[no-any-return]


@router.get("/lead/adjudication")
def lead_adjudication(user: ApiLead, session: SessionDep, batch: str | None = None,
                      offset: int = Query(0, ge=0), limit: int | None = Query(None, ge=1)) -> list[dict[str, Any]]:
    """The queue in its order; ``offset`` / ``limit`` take a slice of it (default: the whole queue)."""
    return adjudication_queue(batch, session=session, offset=offset, limit=limit)
