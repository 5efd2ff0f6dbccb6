"""Lead pages: batches with per-grader progress and skip reasons, agreement, the adjudication queue,
and the live HTML report. Graders get 403 on every one of them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ndcg_labeling.errors import AdjudicationConflict, InvalidInput, NotFoundError
from ndcg_labeling.labels import tasks
from ndcg_labeling.labels.adjudication import Decision, adjudication_item, adjudication_page
from ndcg_labeling.labels.adjudication import adjudicate as set_decision
from ndcg_labeling.results import DEFAULT_METRICS, ReportOptions
from ndcg_labeling.web.deps import LeadCaller, SessionDep, WriterDep, check_form_csrf
from ndcg_labeling.web.render import environment, render
from ndcg_labeling.web.wording import decision_words, page_words
from ndcg_labeling.workspace import grading as workspace
from ndcg_labeling.workspace import lead as lead_reads

router = APIRouter(prefix="/lead")
# The report is a self-contained document with inline styles and data: images, and no script; its
# header's forms (sign out, baseline and metric) post or get back to this server only.
REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
              "frame-ancestors 'none'")


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
                 done: str | None = None, page: int = 1) -> Response:
    queue = adjudication_page(batch or None, session=session, page=page)
    return render(request, "lead_adjudication.html", _ctx(caller, queue=queue, batch=batch or "", done=done))


def _item_url(query_id: str, doc_id: str, batch: str, done: str | None = None) -> str:
    params = {"query_id": query_id, "doc_id": doc_id, "batch": batch, "done": done}
    return "/lead/adjudication/item?" + urlencode({k: v for k, v in params.items() if v})


@router.get("/adjudication/item")
def adjudication_item_page(request: Request, caller: LeadCaller, session: SessionDep, query_id: str, doc_id: str,
                           batch: str = "", done: str | None = None) -> Response:
    item = adjudication_item(query_id, doc_id, session=session, batch=batch or None)
    return render(request, "lead_adjudicate_item.html", _ctx(caller, item=item, batch=batch, done=done,
                                                             conflict=None, mine=None))


@router.post("/adjudication")
def adjudicate(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep,
               query_id: Annotated[str, Form()], doc_id: Annotated[str, Form()], grade: Annotated[str, Form()],
               note: Annotated[str, Form()] = "", batch: Annotated[str, Form()] = "",
               version: Annotated[int | None, Form()] = None, confirm: Annotated[bool, Form()] = False,
               csrf: Annotated[str | None, Form()] = None) -> Response:
    """Save the lead's decision, then show the next open item of the queue (or the queue). A decision
    made meanwhile by another lead over a different grade: the item page again (409) naming it."""
    check_form_csrf(request, csrf)
    try:
        done: Decision = writer(lambda s: set_decision(query_id, doc_id, grade, note, caller.user.grader, session=s,
                                                       version=version, confirm=confirm, batch=batch or None))
    except AdjudicationConflict as conflict:
        item = adjudication_item(query_id, doc_id, session=session, batch=batch or None)
        return render(request, "lead_adjudicate_item.html", _ctx(
            caller, item=item, batch=batch, done=None, conflict=conflict, mine={"grade": grade, "note": note}),
            status_code=409)
    said = done.message if done.record is None else decision_words(done.record)
    if done.next_open is not None:
        return RedirectResponse(_item_url(*done.next_open, batch, said), status_code=303)
    query = urlencode({k: v for k, v in (("batch", batch), ("done", said)) if v})
    return RedirectResponse(f"/lead/adjudication{'?' + query if query else ''}", status_code=303)


#: the metrics the live report may lead with (the report's own list, less the coverage measure)
HEADLINE_CHOICES = tuple(m for m in DEFAULT_METRICS if not m.startswith("judged"))


class ReportCache:
    """The live report's HTML per (labels version, baseline, metric): computing it takes seconds (scoring,
    bootstrap, six plots), and it only changes when a grade, a label, a run or a setting does
    (:func:`~ndcg_labeling.workspace.grading.labels_version`). A lock makes a second request wait
    for the first one's result instead of computing it twice."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.entries: dict[tuple[object, ...], workspace.LiveReport] = {}
        self.lock = threading.Lock()

    def get(self, key: tuple[object, ...], compute: Callable[[], workspace.LiveReport]) -> workspace.LiveReport:
        with self.lock:
            if key not in self.entries:
                if len(self.entries) >= self.size:
                    self.entries.pop(next(iter(self.entries)))
                self.entries[key] = compute()
            return self.entries[key]


REPORT_CACHE = ReportCache()


def warm_report_imports() -> threading.Thread:
    """Import the scoring and plotting modules (matplotlib, scipy: seconds) in a background thread, so
    that the first live report after the server started costs its computation only."""

    def load() -> None:
        from ndcg_labeling.reports.figures import pyplot
        from ndcg_labeling.scoring import report  # noqa: F401

        pyplot()

    thread = threading.Thread(target=load, name="warm-report-imports", daemon=True)
    thread.start()
    return thread


@router.get("/report")
def report(request: Request, caller: LeadCaller, session: SessionDep, baseline: str = "",
           metric: str = "") -> Response:
    systems = lead_reads.system_names(session=session)
    if baseline and baseline not in systems:
        raise NotFoundError(f"there is no system named {baseline!r}; the systems are {', '.join(systems)}")
    if metric and metric not in HEADLINE_CHOICES:
        raise InvalidInput(f"the report cannot lead with {metric!r}; choose one of {', '.join(HEADLINE_CHOICES)}")
    options = ReportOptions(baseline=baseline or None, headline_metric=metric or None)
    key = (workspace.labels_version(session=session), baseline, metric)
    live = REPORT_CACHE.get(key, lambda: workspace.live_report(session=session, options=options, words=page_words))
    if live.html is None:  # nothing to score yet: say what is missing (a page, not an error)
        return render(request, "lead_report_missing.html", _ctx(caller, live=live))
    header = environment().get_template("_report_header.html").render(
        _ctx(caller, systems=systems, baseline=baseline, metric=metric, metrics=HEADLINE_CHOICES,
             request_path=request.url.path))
    return HTMLResponse(live.html.replace("<body>", "<body>" + header, 1),
                        headers={"Content-Security-Policy": REPORT_CSP})
