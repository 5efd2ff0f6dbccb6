"""Online experiments in ``serve``: ``POST /api/events`` (an ingest key), ``GET /api/online/arms``
and the ``/lead/online`` page (leads), over one :class:`~ndcg_labeling.experiments.live.LiveExperiment`
per app."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from ndcg_labeling.choices import Unjudged
from ndcg_labeling.errors import BodyTooLarge, NdcgLabelingError
from ndcg_labeling.experiments.live import LiveExperiment
from ndcg_labeling.web.deps import ApiLead, LeadCaller, check_form_csrf, status_of
from ndcg_labeling.web.render import render

router = APIRouter()
MAX_BODY = 32 * 1024 * 1024


def live(request: Request) -> LiveExperiment:
    app = request.app
    exp = getattr(app.state, "online", None)
    if exp is None:
        exp = app.state.online = LiveExperiment(app.state.engine)
    return exp


def _too_large() -> BodyTooLarge:
    return BodyTooLarge(f"the body is larger than {MAX_BODY} bytes; post smaller batches")


async def read_body(request: Request, limit: int | None = None) -> bytes:
    """The request's body, read chunk by chunk and refused (413) as soon as it passes ``limit`` bytes
    (or says it will, in ``Content-Length``): a client can never make the server hold more."""
    limit = MAX_BODY if limit is None else limit
    declared = request.headers.get("content-length", "")
    if declared.strip().isdigit() and int(declared) > limit:
        raise _too_large()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large()
        chunks.append(chunk)
    return b"".join(chunks)


@router.post("/api/events")
async def post_events(request: Request) -> dict[str, Any]:
    exp = live(request)
    # the key first: an unauthenticated client is answered 401 before a byte of its body is read
    key = await run_in_threadpool(exp.authenticate, request.headers.get("Authorization"))
    body = await read_body(request)
    return await run_in_threadpool(exp.ingest, body, key)


@router.get("/api/online/arms")
def online_arms(request: Request, user: ApiLead, window: str | None = "15m",
                unjudged: Unjudged = Unjudged.skip) -> dict[str, Any]:
    return live(request).arms(window, unjudged.value)


def _page(request: Request, caller: Any, *, window: str = "15m", unjudged: str = "skip", done: str | None = None,
          error: str | None = None, status_code: int = 200) -> Response:
    return render(request, "lead_online.html", {"user": caller.user, "csrf": caller.csrf, "window": window,
                                                "unjudged": unjudged, "done": done, "error": error},
                  status_code=status_code)


@router.get("/lead/online")
def online_page(request: Request, caller: LeadCaller, window: str = "15m",
                unjudged: Unjudged = Unjudged.skip, done: str | None = None) -> Response:
    return _page(request, caller, window=window, unjudged=unjudged.value, done=done)


@router.post("/lead/online/upload")
def upload_events(request: Request, caller: LeadCaller, file: Annotated[UploadFile, File()],
                  csrf: Annotated[str | None, Form()] = None) -> Response:
    """A log file of events (a JSON array, or one JSON object per line: what ``POST /api/events`` takes)
    stored and counted by the same use case, :meth:`LiveExperiment.ingest`; a bad row names the file."""
    check_form_csrf(request, csrf)
    name = (file.filename or "the file").rsplit("/", 1)[-1]
    try:
        body = file.file.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            raise BodyTooLarge(f"{name} is larger than {MAX_BODY // (1024 * 1024)} MB; split it into smaller files")
        done = live(request).ingest(body, f"upload by {caller.user.grader}")
    except NdcgLabelingError as exc:
        return _page(request, caller, error=f"{name}: {exc}; nothing was stored", status_code=status_of(exc))
    said = f"{name}: {done['accepted']:,} events of {done['requests']:,} requests stored."
    return RedirectResponse(f"/lead/online?{urlencode({'done': said})}", status_code=303)
