"""Dependencies: the database session, the writer (short retried transactions), and the caller.

The caller is looked up in the request's session: a reading route goes on in the same transaction;
for a state-changing request that transaction is committed at once, because the route writes in a
transaction of its own (on SQLite an open reader's lock would keep that writer from committing, so
the two must not overlap). Reading transactions are read-only: on SQLite they no longer wait for an
import's write lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from ndcg_labeling.db.session import SQLITE_BUSY_TIMEOUT_MS, WRITE_WAIT_S, read_only, session_scope
from ndcg_labeling.errors import (
    AuthenticationError,
    BodyTooLarge,
    ConflictError,
    InvalidGrade,
    InvalidInput,
    NdcgLabelingError,
    NotFoundError,
    PermissionDenied,
    TooManyRetries,
)
from ndcg_labeling.labels.transactions import run_in_transaction
from ndcg_labeling.workspace import auth
from ndcg_labeling.workspace.auth import WebUser

T = TypeVar("T")
SESSION_COOKIE = "ndcg_session"
LOGIN_COOKIE = "ndcg_login"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def get_engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def db_session(engine: Annotated[Engine, Depends(get_engine)]) -> Iterator[Session]:
    """One read-only transaction for a reading route, and for the caller's lookup (committed when the
    route returns). Routes write through :func:`db_writer` only. On SQLite a read-only transaction
    begins deferred, so a page loads beside an import's open transaction instead of queueing for the
    write lock (see :func:`ndcg_labeling.db.session.read_only`)."""
    with session_scope(read_only(engine)) as session:
        yield session


Writer = Callable[[Callable[[Session], Any]], Any]


def db_writer(engine: Annotated[Engine, Depends(get_engine)]) -> Writer:
    """``writer(work)`` runs ``work(session)`` in its own transaction, retried when writers collide. On
    SQLite a page's writer waits one busy timeout for the write lock (then 503), not a command's minutes."""
    wait = engine.execution_options(**{WRITE_WAIT_S: SQLITE_BUSY_TIMEOUT_MS / 1000})
    return lambda work: run_in_transaction(wait, work)


def _lookup(request: Request, session: Session, fn: Callable[[Session], T]) -> T:
    try:
        return fn(session)
    finally:
        if request.method not in SAFE_METHODS:
            session.commit()  # end the lookup's transaction before the route's writer begins its own


@dataclass(frozen=True)
class Caller:
    """The signed-in grader of a page request, and the session's CSRF token for its forms."""

    user: WebUser
    csrf: str


def page_caller(request: Request, session: Annotated[Session, Depends(db_session)]) -> Caller:
    """The grader of the session cookie (pages use the cookie only); 401 without a live session."""
    cookie = request.cookies.get(SESSION_COOKIE)
    user = _lookup(request, session, lambda s: auth.authenticate_session(cookie, session=s))
    return Caller(user, auth.csrf_token(cookie or ""))


def lead_caller(caller: Annotated[Caller, Depends(page_caller)]) -> Caller:
    auth.require_lead(caller.user)
    return caller


def check_form_csrf(request: Request, csrf: str | None) -> None:
    auth.check_csrf(request.cookies.get(SESSION_COOKIE), csrf)


def api_user(request: Request, session: Annotated[Session, Depends(db_session)]) -> WebUser:
    """``Authorization: Bearer TOKEN`` (a sign-in token), else the session cookie; with the cookie, a
    state-changing request must carry the session's CSRF token in the ``X-CSRF-Token`` header."""
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationError("the Authorization header must be 'Bearer TOKEN'")
        return _lookup(request, session, lambda s: auth.authenticate_token(token.strip(), session=s))
    cookie = request.cookies.get(SESSION_COOKIE)
    user = _lookup(request, session, lambda s: auth.authenticate_session(cookie, session=s))
    if request.method not in SAFE_METHODS:
        auth.check_csrf(cookie, request.headers.get(CSRF_HEADER))
    return user


def api_lead(user: Annotated[WebUser, Depends(api_user)]) -> WebUser:
    return auth.require_lead(user)


SessionDep = Annotated[Session, Depends(db_session)]
WriterDep = Annotated[Writer, Depends(db_writer)]
PageCaller = Annotated[Caller, Depends(page_caller)]
LeadCaller = Annotated[Caller, Depends(lead_caller)]
ApiUser = Annotated[WebUser, Depends(api_user)]
ApiLead = Annotated[WebUser, Depends(api_lead)]


#: the HTTP status of each error a handler lets through (400 for any other NdcgLabelingError)
STATUS: list[tuple[type[NdcgLabelingError], int]] = [
    (AuthenticationError, 401), (PermissionDenied, 403), (NotFoundError, 404), (ConflictError, 409),
    (InvalidInput, 422), (InvalidGrade, 422), (TooManyRetries, 503), (BodyTooLarge, 413)]


def status_of(exc: NdcgLabelingError) -> int:
    return next((code for cls, code in STATUS if isinstance(exc, cls)), 400)
