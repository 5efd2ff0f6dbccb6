"""The lead's work without a terminal: create (with a preview) and delete batches, run consensus, and
download qrels, the report and task files. Uploads are in :mod:`.lead_admin_data`, graders and their
activity in :mod:`.lead_admin_people`; this router includes both.

Every route is the lead's (graders get 403); every form posts with the session's CSRF token; each
handler is thin: form fields -> one pipeline call (the one the CLI command calls) -> a page. A
project error is shown on the page it came from, in one line, with the form as it was filled.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from ndcg_labeling import choices
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.labels import tasks
from ndcg_labeling.scales import SCALES
from ndcg_labeling.web import lead_admin_data, lead_admin_people, lead_judges
from ndcg_labeling.web.deps import LeadCaller, SessionDep, WriterDep, check_form_csrf, status_of
from ndcg_labeling.web.lead import REPORT_CSP
from ndcg_labeling.web.render import admin_page
from ndcg_labeling.workspace import lead as admin

router = APIRouter(prefix="/lead")
router.include_router(lead_admin_data.router)
router.include_router(lead_admin_people.router)
router.include_router(lead_judges.router)
CsrfField = Annotated[str | None, Form()]


# --- batches --------------------------------------------------------------------------------------------


def _batch_choices(session: Any) -> dict[str, Any]:
    from ndcg_labeling.workspace.people import graders_overview

    assignable = admin.assignable_graders(session=session)
    return {"systems": admin.system_names(session=session),
            "graders": [g for g in graders_overview(session=session) if g["grader"] in assignable],
            "deletable": admin.deletable_batches(session=session),
            "query_types": admin.query_types(session=session), "scales": tuple(SCALES),
            "batches": tasks.list_batches(session=session), "strategies": list(choices.PoolStrategy),
            "budgeted": admin.budgeted_batches(session=session)}


def _form(**values: Any) -> dict[str, Any]:
    base = {"batch": "", "scale": "0-3", "depth": 10, "overlap": 2, "graders": [], "systems": [],
            "query_types": [], "gold_rate": 0.0, "gold_feedback": False, "seed": None, "strategy": "",
            "budget": None}
    return {**base, **values}


@router.get("/create-batch")
def create_form(request: Request, caller: LeadCaller, session: SessionDep, done: str | None = None) -> Response:
    return admin_page(request, caller, "create", form=_form(), plan=None, done=done, **_batch_choices(session))


def _options(form: dict[str, Any]) -> dict[str, Any]:
    return {"scale": form["scale"], "depth": form["depth"], "overlap": form["overlap"], "graders": form["graders"],
            "systems": form["systems"] or None, "query_types": form["query_types"] or None,
            "gold_rate": form["gold_rate"], "gold_feedback": form["gold_feedback"],
            **({"strategy": form["strategy"], "budget": form["budget"]} if form["strategy"] else {})}


@router.post("/create-batch")
def create(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep,
           batch: Annotated[str, Form()], scale: Annotated[str, Form()], depth: Annotated[int, Form()],
           overlap: Annotated[int, Form()], graders: Annotated[list[str], Form()] = [],  # noqa: B006
           systems: Annotated[list[str], Form()] = [], query_types: Annotated[list[str], Form()] = [],  # noqa: B006
           gold_rate: Annotated[float, Form()] = 0.0, gold_feedback: Annotated[bool, Form()] = False,
           seed: Annotated[int | None, Form()] = None, strategy: Annotated[str, Form()] = "",
           budget: Annotated[int | None, Form()] = None, action: Annotated[str, Form()] = "preview",
           csrf: CsrfField = None) -> Response:
    """``action=preview``: what ``tasks create`` would store (nothing is); ``action=create``: store it.
    A ``strategy`` judges ``budget`` pairs of the pool (``tasks create --strategy S --budget N``)."""
    check_form_csrf(request, csrf)
    form = _form(batch=batch, scale=scale, depth=depth, overlap=overlap, graders=graders, systems=systems,
                 query_types=query_types, gold_rate=gold_rate, gold_feedback=gold_feedback, seed=seed,
                 strategy=strategy, budget=budget)
    try:
        if action == "create":
            created = writer(lambda s: admin.create_pooled(batch, session=s, seed=seed, **_options(form)))
            return RedirectResponse(f"/lead/create-batch?{urlencode({'done': str(created)})}", status_code=303)
        plan = writer(lambda s: admin.plan_batch(batch, session=s, seed=seed, **_options(form)))
    except NdcgLabelingError as exc:
        return admin_page(request, caller, "create", status_of(exc), form=form, plan=None, error=str(exc),
                          **_batch_choices(session))
    form["seed"] = plan.created.seed
    return admin_page(request, caller, "create", form=form, plan=plan, **_batch_choices(session))


@router.post("/extend-batch")
def extend(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep,
           batch: Annotated[str, Form()], budget: Annotated[int | None, Form()] = None,
           csrf: CsrfField = None) -> Response:
    """``tasks extend BATCH --budget N``: the batch's strategy picks N more pairs, seeing its grades so far."""
    from ndcg_labeling.labels.tasks.budgeted import extend_batch

    check_form_csrf(request, csrf)
    try:
        extended = writer(lambda s: extend_batch(batch, budget=budget, session=s))
    except NdcgLabelingError as exc:
        return admin_page(request, caller, "create", status_of(exc), form=_form(), plan=None, error=str(exc),
                          **_batch_choices(session))
    return RedirectResponse(f"/lead/create-batch?{urlencode({'done': str(extended)})}", status_code=303)


@router.post("/delete-batch")
def delete(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep,
           batch: Annotated[str, Form()], confirm: Annotated[str, Form()] = "", csrf: CsrfField = None) -> Response:
    """Delete a batch nobody has graded (``tasks delete``); the form asks to type its name again."""
    check_form_csrf(request, csrf)
    try:
        if confirm.strip() != batch:
            raise NdcgLabelingError(f"type the batch name {batch!r} to confirm the deletion")
        deleted = writer(lambda s: admin.delete_batch(batch, session=s))
    except NdcgLabelingError as exc:
        return admin_page(request, caller, "create", status_of(exc), form=_form(), plan=None, error=str(exc),
                          **_batch_choices(session))
    return RedirectResponse(f"/lead/create-batch?{urlencode({'done': str(deleted)})}", status_code=303)


# --- consensus ------------------------------------------------------------------------------------------


def _consensus_page(request: Request, caller: LeadCaller, session: Any, status_code: int = 200,
                    **values: Any) -> Response:
    return admin_page(request, caller, "consensus", status_code, state=admin.consensus_state(session=session),
                      batches=admin.batch_names(session=session), methods=list(choices.ConsensusMethod),
                      ties=list(choices.TieRule), points=list(choices.DawidSkenePoint), **values)


@router.get("/consensus")
def consensus_form(request: Request, caller: LeadCaller, session: SessionDep) -> Response:
    return _consensus_page(request, caller, session, summary=None, batch="")


@router.post("/consensus")
def consensus(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep,
              method: Annotated[str, Form()], batch: Annotated[str, Form()] = "", tie: Annotated[str, Form()] = "low",
              min_graders: Annotated[int, Form()] = 2, max_spread: Annotated[int, Form()] = 1,
              point: Annotated[str, Form()] = "mean", include_models: Annotated[bool, Form()] = False,
              exclude_untrusted: Annotated[bool, Form()] = False, min_accuracy: Annotated[float, Form()] = 0.7,
              csrf: CsrfField = None) -> Response:
    """``consensus --method M [--batch B] ...``: the same call, the same summary."""
    from ndcg_labeling.labels.consensus import run_consensus

    check_form_csrf(request, csrf)
    try:
        summary = writer(lambda s: run_consensus(
            session=s, batch=batch or None, method=method, tie=tie, min_graders=min_graders, max_spread=max_spread,
            point=point, include_models=include_models, exclude_untrusted=exclude_untrusted,
            min_accuracy=min_accuracy))
    except NdcgLabelingError as exc:
        return _consensus_page(request, caller, session, status_of(exc), summary=None, batch=batch, error=str(exc))
    return _consensus_page(request, caller, session, summary=summary, batch=batch, done=str(summary))


# --- downloads ------------------------------------------------------------------------------------------


def _downloads_page(request: Request, caller: LeadCaller, session: Any, status_code: int = 200,
                    **values: Any) -> Response:
    from ndcg_labeling.workspace.people import graders_overview

    values.setdefault("nothing_open", None)
    return admin_page(request, caller, "downloads", status_code, batches=admin.batch_names(session=session),
                      graders=graders_overview(session=session), roundings=list(choices.QrelsRounding),
                      task_formats=list(choices.TaskFileFormat), **values)


def attachment(content: str | bytes, filename: str, media: str, **headers: str) -> Response:
    disposition = f"attachment; filename=\"{filename}\"; filename*=UTF-8''{quote(filename)}"
    return Response(content, media_type=media, headers={"Content-Disposition": disposition, **headers})


@router.get("/downloads")
def downloads(request: Request, caller: LeadCaller, session: SessionDep) -> Response:
    return _downloads_page(request, caller, session)


@router.get("/downloads/qrels")
def qrels(request: Request, caller: LeadCaller, session: SessionDep, rounding: str = "",
          keep_fraction: bool = False) -> Response:
    """``export qrels [--round R] [--keep-fraction]``: the labels in force as TREC qrels."""
    from ndcg_labeling.labels.consensus import export_qrels

    try:
        result = export_qrels(session=session, rounding=rounding or None, keep_fraction=keep_fraction)  # type: ignore[arg-type]
    except NdcgLabelingError as exc:
        return _downloads_page(request, caller, session, status_of(exc), error=str(exc))
    return attachment(result.text, "qrels.txt", "text/plain; charset=utf-8")


@router.get("/downloads/report.{fmt}")
def report(request: Request, fmt: str, caller: LeadCaller, session: SessionDep) -> Response:
    """``report --format html|csv|json`` with the default options."""
    try:
        text = admin.report_text(fmt, session=session)
    except NdcgLabelingError as exc:
        return _downloads_page(request, caller, session, status_of(exc), error=str(exc))
    headers = {"Content-Security-Policy": REPORT_CSP} if fmt == "html" else {}
    return attachment(text, f"report.{fmt}", f"{admin.REPORT_MEDIA[fmt]}; charset=utf-8", **headers)


@router.get("/downloads/tasks")
def task_file(request: Request, caller: LeadCaller, session: SessionDep, batch: str = "", grader: str = "",
              fmt: str = "csv") -> Response:
    """``tasks export BATCH --grader G --format F``: the grader's open items."""
    try:
        result = admin.task_file(batch, grader=grader, fmt=fmt, session=session)
    except NdcgLabelingError as exc:
        return _downloads_page(request, caller, session, status_of(exc), error=str(exc))
    if result.rows == 0:  # a finished grader: a page saying so and what comes next, not a bare header row
        return _downloads_page(request, caller, session, nothing_open={"batch": batch, "grader": grader})
    media = {"csv": "text/csv", "jsonl": "application/x-ndjson"}.get(result.fmt, "application/json")
    return attachment(result.content, result.filename, f"{media}; charset=utf-8")
