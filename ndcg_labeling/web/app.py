"""The application factory, the one error handler, security headers, and the uvicorn runner."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.web.deps import status_of
from ndcg_labeling.web.render import render

STATIC = Path(__file__).resolve().parent / "static"
# Scripts only from this server: an injected <script> or on* attribute cannot run even if escaping failed.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
       "base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


def one_line(text: str, limit: int = 500) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def error_response(request: Request, status: int, message: str) -> Response:
    """The one place an error becomes a response: JSON ``{"detail"}`` under /api, an HTML page elsewhere."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": one_line(message)}, status_code=status, headers=headers)
    return render(request, "error.html", {"status": status, "message": one_line(message)}, status_code=status)


def server_engine(url: str | None) -> Engine:
    """An engine for serving: a connection pool sized for a team; the schema must be at head."""
    from sqlalchemy.engine import make_url

    from ndcg_labeling.db.migrate import ensure_at_head
    from ndcg_labeling.db.session import make_engine, resolve_url

    kwargs: dict[str, Any] = {}
    if make_url(resolve_url(url)).get_backend_name() == "postgresql":
        kwargs = {"pool_size": 20, "max_overflow": 20, "pool_recycle": 1800}
    engine = make_engine(url, **kwargs)
    ensure_at_head(engine)
    return engine


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """A served workspace loads the live report's modules while it waits for its first request."""
    from ndcg_labeling.web.lead import warm_report_imports

    warm_report_imports()
    yield


def create_app(engine: Engine | str | None = None) -> FastAPI:
    """The workspace application over ``engine`` (or a database URL, checked to be at head)."""
    from ndcg_labeling.web import api, lead, pages

    if not isinstance(engine, Engine):
        engine = server_engine(engine)
    app = FastAPI(title="ndcg-labeling workspace", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=_lifespan)
    app.state.engine = engine
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(lead.router)
    from ndcg_labeling.web import lead_admin  # the lead's admin pages (create batches, uploads, graders, ...)
    app.include_router(lead_admin.router)
    from ndcg_labeling.web import online  # the live online figures and event ingestion (issue 27)
    app.include_router(online.router)
    from ndcg_labeling.web import snapshots  # the lead's search engine snapshots (issue 49)
    app.include_router(snapshots.router)

    @app.exception_handler(NdcgLabelingError)
    def project_error(request: Request, exc: NdcgLabelingError) -> Response:
        return error_response(request, status_of(exc), str(exc))

    @app.exception_handler(RequestValidationError)
    def bad_request(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "form"))
        return error_response(request, 422, f"{where + ': ' if where else ''}{first.get('msg', 'invalid')}")

    @app.exception_handler(DBAPIError)
    def database_error(request: Request, exc: DBAPIError) -> Response:
        logging.getLogger("ndcg_labeling.web").warning("database error: %s", exc.orig)
        return error_response(request, 503, "database error; try again")

    @app.middleware("http")
    async def refuse_nul(request: Request, call_next: Any) -> Response:
        # A NUL character cannot be in any name the database holds (PostgreSQL refuses it in text, which
        # read as a 503 "try again"): a path with one names nothing (404), a query value with one is
        # invalid (422), answered before any database is asked.
        if "\x00" in request.url.path or "\x00" in request.scope.get("path", ""):
            return error_response(request, 404, "not found: the address holds a NUL character")
        if b"%00" in request.scope.get("query_string", b"").lower() or "\x00" in str(request.query_params):
            return error_response(request, 422, "the query holds a NUL character")
        response: Response = await call_next(request)
        return response

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"  # the sign-in link never leaks in a Referer
        response.headers["X-Frame-Options"] = "DENY"
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    return app


class _RedactTokens(logging.Filter):
    """Keep sign-in tokens out of the access log (``/login?token=...``)."""

    pattern = re.compile(r"token=[^\s&\"]+")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and isinstance(record.args, tuple):
            record.args = tuple(self.pattern.sub("token=[redacted]", a) if isinstance(a, str) else a
                                for a in record.args)
        return True


def run_server(app: FastAPI, *, host: str, port: int, access_log: bool = True) -> None:
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, access_log=access_log, proxy_headers=True, log_level="info")
    logging.getLogger("uvicorn.access").addFilter(_RedactTokens())  # after Config set up uvicorn's logging
    uvicorn.Server(config).run()
