"""Lead pages: batches with per-grader progress and skip reasons, agreement, the adjudication queue,
and the live HTML report. Graders get 403 on every one of them."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ndcg_labeling.pipeline import tasks, workspace
from ndcg_labeling.web.deps import LeadCaller, SessionDep, WriterDep, check_form_csrf
from ndcg_labeling.web.render import render

router = APIRouter(prefix="/lead")
# The report is a self-contained document with inline styles and data: images, and no script.
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"


def _ctx(caller: LeadCaller, **values: object) -> dict[str, object]:
    return {"user": caller.user, "csrf": caller.csrf, **values}


@router.get("")
def batches(request: Request, caller: LeadCaller, session: SessionDep) -> Response:
    return render(request, "lead_batches.html", _ctx(caller, batches=tasks.list_batches(session=session)))


@router.get("/batches/{batch:path}")
def batch(request: Request, batch: str, caller: LeadCaller, session: SessionDep) -> Response:
    detail = workspace.batch_detail(batch, session=session)
    return render(request, "lead_batch.html", _ctx(caller, detail=detail))


@router.get("/agreement")
def agreement(request: Request, caller: LeadCaller, session: SessionDep, batch: str | None = None) -> Response:
    view = workspace.agreement_view(batch or None, session=session)
    return render(request, "lead_agreement.html", _ctx(caller, view=view))


@router.get("/adjudication")
def adjudication(request: Request, caller: LeadCaller, session: SessionDep, batch: str | None = None,
                 done: str | None = None) -> Response:
    rows = workspace.adjudication_queue(batch or None, session=session)
    return render(request, "lead_adjudication.html", _ctx(caller, rows=rows, batch=batch or "", done=done))


@router.post("/adjudication")
def adjudicate(request: Request, caller: LeadCaller, writer: WriterDep, query_id: Annotated[str, Form()],
               doc_id: Annotated[str, Form()], grade: Annotated[str, Form()], note: Annotated[str, Form()] = "",
               batch: Annotated[str, Form()] = "", csrf: Annotated[str | None, Form()] = None) -> Response:
    check_form_csrf(request, csrf)
    done = writer(lambda s: workspace.adjudicate(query_id, doc_id, grade, note, caller.user, session=s))
    query = urlencode({k: v for k, v in (("batch", batch), ("done", done)) if v})
    return RedirectResponse(f"/lead/adjudication{'?' + query if query else ''}", status_code=303)


@router.get("/report")
def report(caller: LeadCaller, session: SessionDep) -> Response:
    html = workspace.live_report_html(session=session)
    return HTMLResponse(html, headers={"Content-Security-Policy": REPORT_CSP})
