"""The lead's snapshot pages: ``/lead/snapshots`` (search configurations, snapshots, take one now) and
``/lead/snapshots/diff`` (what changed between two snapshots), each a thin shell over the use case the
``snapshot`` commands call (docs/engines.md)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.web.deps import LeadCaller, SessionDep, WriterDep, check_form_csrf, status_of
from ndcg_labeling.web.render import render

router = APIRouter(prefix="/lead/snapshots")


def _page(request: Request, caller: LeadCaller, session: Any, status_code: int = 200, **values: Any) -> Response:
    from ndcg_labeling.snapshots.configs import list_configs
    from ndcg_labeling.snapshots.take import list_snapshots

    ctx = {"user": caller.user, "csrf": caller.csrf, "error": None, "done": None,
           "configs": list_configs(session=session), "snapshots": list_snapshots(session=session), **values}
    return render(request, "lead_snapshots.html", ctx, status_code=status_code)


@router.get("")
def snapshots(request: Request, caller: LeadCaller, session: SessionDep, done: str | None = None) -> Response:
    return _page(request, caller, session, done=done)


@router.post("/take")
def take(request: Request, caller: LeadCaller, writer: WriterDep, session: SessionDep,
         config: Annotated[str, Form()], depth: Annotated[int, Form()] = 10,
         csrf: Annotated[str | None, Form()] = None) -> Response:
    """``snapshot take CONFIG --depth K``: every stored query sent to the engine, stored all or nothing."""
    from ndcg_labeling.snapshots.take import take_snapshot

    check_form_csrf(request, csrf)
    try:
        taken = writer(lambda s: take_snapshot(config, session=s, depth=depth))
    except NdcgLabelingError as exc:
        return _page(request, caller, session, status_of(exc), error=f"Error: {exc}")
    return RedirectResponse(f"/lead/snapshots?{urlencode({'done': str(taken)})}", status_code=303)


@router.get("/diff")
def diff(request: Request, caller: LeadCaller, session: SessionDep, a: str = "", b: str = "", k: int = 10) -> Response:
    """``snapshot diff A B -k K``: per query, the documents entering, leaving and moving, the NDCG change."""
    from ndcg_labeling.snapshots.diff import diff_snapshots

    try:
        result = diff_snapshots([a, b], session=session, k=k)
    except NdcgLabelingError as exc:
        return _page(request, caller, session, status_of(exc), error=f"Error: {exc}")
    return render(request, "lead_snapshot_diff.html", {"user": caller.user, "csrf": caller.csrf, "a": a, "b": b,
                                                       "k": result.k, "rows": result.rows, "pairs": result.pairs,
                                                       "notes": result.notes})
