"""Graders (``/lead/graders``): add graders, make and revoke sign-in links, set roles (what ``graders
add | token | revoke | set-role`` do); and each grader's activity (``/lead/activity``)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from ndcg_labeling import choices
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.labels import importing
from ndcg_labeling.web.deps import LeadCaller, SessionDep, WriterDep, check_form_csrf, status_of
from ndcg_labeling.web.render import admin_page
from ndcg_labeling.workspace import auth
from ndcg_labeling.workspace import lead as admin
from ndcg_labeling.workspace import people as lead_people

router = APIRouter()
CsrfField = Annotated[str | None, Form()]


def _graders_page(request: Request, caller: LeadCaller, session: Any, status_code: int = 200,
                  **values: Any) -> Response:
    values.setdefault("issued", None)
    return admin_page(request, caller, "graders", status_code, graders=lead_people.graders_overview(session=session),
                      roles=list(choices.GraderRole), kinds=list(choices.GraderKind), **values)


def _done(message: str) -> Response:
    return RedirectResponse(f"/lead/graders?{urlencode({'done': message})}", status_code=303)


def _names(text: str) -> list[str]:
    return [n for n in text.replace(",", " ").split() if n]


@router.get("/graders")
def graders(request: Request, caller: LeadCaller, session: SessionDep, done: str | None = None) -> Response:
    return _graders_page(request, caller, session, done=done)


def _run(request: Request, caller: LeadCaller, session: Any, csrf: str | None, work: Any) -> Response:
    """Check the form's CSRF token, run ``work()`` (a message, or a page); an error is shown on the page."""
    check_form_csrf(request, csrf)
    try:
        result = work()
    except NdcgLabelingError as exc:
        return _graders_page(request, caller, session, status_of(exc), error=str(exc))
    return result if isinstance(result, Response) else _done(str(result))


@router.post("/graders/add")
def add(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep, names: Annotated[str, Form()],
        role: Annotated[str, Form()] = "grader", kind: Annotated[str, Form()] = "human", csrf: CsrfField = None) -> Response:
    """``graders add NAME... --role R --kind K``."""
    def work() -> str:
        summary = writer(lambda s: importing.add_graders(_names(names), session=s, role=role, kind=kind))
        return f"graders: {summary.new} new, {summary.unchanged} unchanged"
    return _run(request, caller, session, csrf, work)


@router.post("/graders/token")
def token(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep, grader: Annotated[str, Form()],
          expires: Annotated[str, Form()] = auth.DEFAULT_EXPIRES, csrf: CsrfField = None) -> Response:
    """``graders token NAME --expires E`` with this server's address in the link; the link is shown once."""
    url = request.url
    port = url.port or (443 if url.scheme == "https" else 80)

    def work() -> Response:
        issued = writer(lambda s: auth.issue_token(grader, session=s, expires=expires, host=url.hostname or "127.0.0.1",
                                                   port=port, scheme=url.scheme))
        return _graders_page(request, caller, session, issued=issued)
    return _run(request, caller, session, csrf, work)


@router.post("/graders/revoke")
def revoke(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep,
           grader: Annotated[str, Form()], csrf: CsrfField = None) -> Response:
    """``graders revoke NAME``."""
    return _run(request, caller, session, csrf, lambda: writer(lambda s: auth.revoke_tokens(grader, session=s)))


@router.post("/graders/role")
def role(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep, grader: Annotated[str, Form()],
         role: Annotated[str, Form()], csrf: CsrfField = None) -> Response:
    """``graders set-role NAME ROLE``."""
    def work() -> str:
        previous = writer(lambda s: auth.set_role(grader, role, session=s))
        return f"{grader}: role {role} (was {previous})"
    return _run(request, caller, session, csrf, work)


@router.get("/activity")
def activity(request: Request, caller: LeadCaller, session: SessionDep, batch: str = "") -> Response:
    """Per grader: what they graded, median seconds per item, skip reasons, gold accuracy and drift."""
    view = lead_people.grader_activity(session=session, batch=batch or None)
    return admin_page(request, caller, "activity", view=view, batch=batch, batches=admin.batch_names(session=session))
