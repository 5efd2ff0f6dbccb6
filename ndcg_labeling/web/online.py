"""Online experiments in ``serve``: ``POST /api/events`` (an ingest key), ``GET /api/online/arms``
and the ``/lead/online`` page (leads), over one :class:`~ndcg_labeling.pipeline.online_live.LiveExperiment`
per app."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from ndcg_labeling.choices import Unjudged
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.pipeline.online_live import LiveExperiment
from ndcg_labeling.web.deps import ApiLead, LeadCaller
from ndcg_labeling.web.render import render

router = APIRouter()
MAX_BODY = 32 * 1024 * 1024


def live(request: Request) -> LiveExperiment:
    app = request.app
    exp = getattr(app.state, "online", None)
    if exp is None:
        exp = app.state.online = LiveExperiment(app.state.engine)
    return exp


@router.post("/api/events")
async def post_events(request: Request) -> dict[str, Any]:
    body = await request.body()
    if len(body) > MAX_BODY:
        raise NdcgLabelingError(f"the body is larger than {MAX_BODY} bytes; post smaller batches")
    return await run_in_threadpool(live(request).ingest, body, request.headers.get("Authorization"))


@router.get("/api/online/arms")
def online_arms(request: Request, user: ApiLead, window: str | None = "15m",
                unjudged: Unjudged = Unjudged.skip) -> dict[str, Any]:
    return live(request).arms(window, unjudged.value)


@router.get("/lead/online")
def online_page(request: Request, caller: LeadCaller, window: str = "15m",
                unjudged: Unjudged = Unjudged.skip) -> Response:
    return render(request, "lead_online.html", {"user": caller.user, "csrf": caller.csrf, "window": window,
                                                "unjudged": unjudged.value})
