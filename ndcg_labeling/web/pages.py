"""Grader pages: sign-in, my batches, the grading page and its form posts (each with a CSRF token)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.web.deps import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    PageCaller,
    SessionDep,
    WriterDep,
    check_form_csrf,
    get_engine,
)
from ndcg_labeling.web.render import render
from ndcg_labeling.workspace import auth
from ndcg_labeling.workspace import grading as workspace

router = APIRouter()
CsrfField = Annotated[str | None, Form()]


def _grade_page(batch: str, **params: str) -> str:
    """The grading page of ``batch``; ``after``: the item just graded or skipped (the page says what was
    stored, and shows gold feedback); ``undone``: the grade (or "skip") that ``u`` undid."""
    from urllib.parse import quote, urlencode

    page = f"/batches/{quote(batch, safe='')}/grade"
    query = urlencode({k: v for k, v in params.items() if v})
    return f"{page}?{query}" if query else page


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


@router.get("/")
def home(request: Request, caller: PageCaller, session: SessionDep) -> Response:
    batches = workspace.my_batches(caller.user, session=session)
    return render(request, "home.html", {"user": caller.user, "csrf": caller.csrf, "batches": batches})


@router.get("/login")
def login_page(request: Request, engine: Annotated[Engine, Depends(get_engine)], token: str = "") -> Response:
    """Check the link's token (nothing is written) and show a sign-in button; the POST signs in. The
    form carries a proof bound to the token and to the nonce cookie (:func:`auth.login_proof`). Without
    a token: a form asking for the sign-in link (where a "not signed in" page sends a person)."""
    if "token=" in token:  # the whole sign-in link pasted into the form
        token = parse_qs(urlsplit(token.strip()).query).get("token", [""])[0]
    if not token.strip():
        return render(request, "login.html", {"who": None, "token": "", "nonce": ""})
    nonce = auth.new_secret()
    with session_scope(engine) as session:
        user = auth.authenticate_token(token, session=session)
        proof = auth.login_proof(token, nonce, session=session)
    response = render(request, "login.html", {"who": user.grader, "token": token, "nonce": proof})
    response.set_cookie(LOGIN_COOKIE, nonce, max_age=auth.LOGIN_FORM_SECONDS, path="/login", httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")
    return response


@router.post("/login")
def login(request: Request, writer: WriterDep, token: Annotated[str, Form()] = "",
          nonce: Annotated[str, Form()] = "") -> Response:
    """Exchange the token for a session cookie (HttpOnly, SameSite=Strict, living as long as the token);
    the form's proof must be the one the sign-in page made for this token and the cookie's nonce."""
    cookie_nonce = request.cookies.get(LOGIN_COOKIE)

    def sign_in(s: Session) -> tuple[str, auth.WebUser, int]:
        auth.check_login_proof(token, cookie_nonce, nonce, session=s)
        return auth.start_session_until(token, session=s)

    cookie, _user, max_age = writer(sign_in)
    response = _see_other("/")
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    response.set_cookie(SESSION_COOKIE, cookie, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", max_age=max_age)
    return response


@router.post("/logout")
def logout(request: Request, writer: WriterDep, csrf: CsrfField = None) -> Response:
    check_form_csrf(request, csrf)
    cookie = request.cookies.get(SESSION_COOKIE)
    writer(lambda s: auth.end_session(cookie, session=s))
    response = render(request, "error.html", {"status": 200, "message": "You are signed out."})
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.get("/batches/{batch:path}/grade")
def grading_page(request: Request, batch: str, caller: PageCaller, session: SessionDep, after: str = "",
                 undone: str = "") -> Response:
    view = workspace.grading_view(batch, caller.user, session=session, after=after or None, undone=undone or None)
    return render(request, "grade.html", {"user": caller.user, "csrf": caller.csrf, "view": view})


@router.post("/batches/{batch:path}/items/{item_id}/grade")
def grade_form(request: Request, batch: str, item_id: str, caller: PageCaller, writer: WriterDep,
               grade: Annotated[str, Form()], csrf: CsrfField = None) -> Response:
    check_form_csrf(request, csrf)
    writer(lambda s: workspace.grade_item(batch, item_id, grade, caller.user, session=s))
    # the next page says what was stored ("Saved: 2 — ..."), and the reference grade after a gold item
    return _see_other(_grade_page(batch, after=item_id))


@router.post("/batches/{batch:path}/items/{item_id}/skip")
def skip_form(request: Request, batch: str, item_id: str, caller: PageCaller, writer: WriterDep,
              reason: Annotated[str, Form()] = "", csrf: CsrfField = None) -> Response:
    check_form_csrf(request, csrf)
    writer(lambda s: workspace.skip(batch, item_id, reason, caller.user, session=s))
    return _see_other(_grade_page(batch, after=item_id))


@router.post("/batches/{batch:path}/undo")
def undo_form(request: Request, batch: str, caller: PageCaller, writer: WriterDep,
              csrf: CsrfField = None) -> Response:
    check_form_csrf(request, csrf)
    undone = writer(lambda s: workspace.undo_last(batch, caller.user, session=s))
    return _see_other(_grade_page(batch, undone=undone[1] if undone else ""))
