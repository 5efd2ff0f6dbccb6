"""Sign-in for the web workspace: grader roles, sign-in tokens, browser sessions and CSRF tokens.

* A **sign-in token** (``graders token NAME``) is 32 random bytes (``secrets.token_urlsafe``); only
  its sha256 is stored. It is valid until it expires or ``graders revoke NAME`` ends it. The same
  token works as ``Authorization: Bearer TOKEN`` for the JSON API.
* Signing in exchanges the token for a **session**: another random value in an HttpOnly cookie,
  stored as its sha256, that ends with its token (expiry, revocation) or at sign-out.
* The **CSRF token** of a session is derived from the session value (sha256 with a fixed prefix), so
  it is known to the page but never stored, and cannot be computed from what the database holds.
* The **sign-in form** is bound to its token: the page sets a random nonce in a cookie and puts
  ``TIME.HMAC(key, sha256(token) | nonce | TIME)`` in the form (:func:`login_proof`), the key being a
  server secret kept in the database (``server_secrets``, made by migration 0008). Signing in needs the
  form's proof to match the token posted and the cookie's nonce, within :data:`LOGIN_FORM_SECONDS`: a
  cookie planted by another site, with a nonce of its choosing, is not enough.
* The session cookie lives as long as its sign-in token (:func:`start_session_until`), not longer.
* Secrets are compared with :func:`hmac.compare_digest` (constant time).

Every function takes the session as a keyword argument and never commits.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from ndcg_labeling.choices import GraderRole
from ndcg_labeling.db import models as m
from ndcg_labeling.errors import AuthenticationError, NdcgLabelingError, PermissionDenied
from ndcg_labeling.labels.lookups import check_role, require_grader

DEFAULT_EXPIRES = "30d"
MAX_EXPIRES = timedelta(days=366)
_DURATION = re.compile(r"^\s*(\d{1,6})\s*([dhm])\s*$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}
_CSRF_PREFIX = b"ndcg-labeling csrf\0"
LOGIN_FORM_SECONDS = 600  # how long a sign-in page may be posted (its nonce cookie lives as long)
LOGIN_KEY = "login"


@dataclass(frozen=True)
class WebUser:
    """The signed-in grader of a request."""

    grader_id: int
    grader: str
    role: str

    @property
    def is_lead(self) -> bool:
        return self.role == GraderRole.lead

    def as_dict(self) -> dict[str, str]:
        return {"grader": self.grader, "role": self.role}


@dataclass(frozen=True)
class IssuedToken:
    """A new sign-in token; the plain token exists only here (the database keeps its sha256)."""

    grader: str
    token: str
    url: str
    expires: datetime

    def as_dict(self) -> dict[str, Any]:
        return {"grader": self.grader, "token": self.token, "url": self.url,
                "expires": self.expires.isoformat(timespec="seconds") + "Z"}

    def __str__(self) -> str:
        return (f"sign-in link for {self.grader} (valid until {self.expires:%Y-%m-%d %H:%M} UTC):\n{self.url}")


@dataclass(frozen=True)
class Revoked:
    grader: str
    tokens: int
    sessions: int

    def __str__(self) -> str:
        return f"{self.grader}: {self.tokens} sign-in token(s) revoked, {self.sessions} browser session(s) ended"


def sha256_hex(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret() -> str:
    """32 random bytes, URL-safe text (for tokens, session cookies and login nonces)."""
    return secrets.token_urlsafe(32)


def same_secret(given: str | None, expected: str | None) -> bool:
    """Constant-time comparison of two secrets; False when either is missing."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def parse_expires(text: str) -> timedelta:
    """``30d``, ``12h`` or ``90m`` as a duration; at least a minute, at most 366 days."""
    match = _DURATION.match(text or "")
    if match is None:
        raise NdcgLabelingError(f"--expires {text!r} is not a duration like 30d, 12h or 90m")
    value = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    if value < timedelta(minutes=1) or value > MAX_EXPIRES:
        raise NdcgLabelingError(f"--expires {text!r} must be between 1m and 366d")
    return value


def set_role(name: str, role: str, *, session: Session) -> str:
    """Give grader ``name`` the role ``grader`` or ``lead``; returns the previous role."""
    grader = require_grader(name, session=session)
    previous = grader.role
    grader.role = check_role(role)
    session.flush()
    return previous


def login_url(token: str, *, host: str = "127.0.0.1", port: int = 8000, scheme: str = "http") -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{scheme}://{shown}:{port}/login?token={token}"


def issue_token(name: str, *, session: Session, expires: str = DEFAULT_EXPIRES, host: str = "127.0.0.1",
                port: int = 8000, scheme: str = "http") -> IssuedToken:
    """A new sign-in token of grader ``name``, valid for ``expires`` (``30d``, ``12h``, ``90m``)."""
    grader = require_grader(name, session=session)
    if not grader.active:
        raise NdcgLabelingError(f"grader {name!r} is not active")
    until = m.utcnow().replace(microsecond=0) + parse_expires(expires)
    token = new_secret()
    session.add(m.GraderToken(grader_id=grader.id, token_sha256=sha256_hex(token), created_at=m.utcnow(),
                              expires_at=until))
    session.flush()
    return IssuedToken(grader.name, token, login_url(token, host=host, port=port, scheme=scheme), until)


def revoke_tokens(name: str, *, session: Session) -> Revoked:
    """End every sign-in token and browser session of grader ``name``."""
    grader = require_grader(name, session=session)
    now = m.utcnow()
    tokens: Any = session.execute(update(m.GraderToken).where(m.GraderToken.grader_id == grader.id,
                                                              m.GraderToken.revoked_at.is_(None))
                                  .values(revoked_at=now))
    sessions: Any = session.execute(delete(m.WebSession).where(m.WebSession.grader_id == grader.id))
    return Revoked(grader.name, int(tokens.rowcount or 0), int(sessions.rowcount or 0))


def _user(grader: m.Grader) -> WebUser:
    return WebUser(grader.id, grader.name, grader.role)


def _valid_token(token: str | None, *, session: Session) -> tuple[m.GraderToken, m.Grader]:
    if not token:
        raise AuthenticationError("sign in: no token given")
    digest = sha256_hex(token)
    row = session.execute(select(m.GraderToken, m.Grader).join(m.Grader, m.Grader.id == m.GraderToken.grader_id)
                          .where(m.GraderToken.token_sha256 == digest)).first()
    if row is None or not same_secret(row[0].token_sha256, digest):
        raise AuthenticationError("this sign-in link is not valid; ask your lead for a new one")
    tok, grader = row
    if tok.revoked_at is not None or tok.expires_at <= m.utcnow() or not grader.active:
        raise AuthenticationError("this sign-in link has expired or was revoked; ask your lead for a new one")
    return tok, grader


def authenticate_token(token: str | None, *, session: Session) -> WebUser:
    """The grader of a valid sign-in token (``Authorization: Bearer``); AuthenticationError otherwise."""
    return _user(_valid_token(token, session=session)[1])


def start_session(token: str | None, *, session: Session) -> tuple[str, WebUser]:
    """Exchange a valid sign-in token for a new browser session: (cookie value, user)."""
    tok, grader = _valid_token(token, session=session)
    cookie = new_secret()
    session.add(m.WebSession(grader_id=grader.id, token_id=tok.id, session_sha256=sha256_hex(cookie),
                             created_at=m.utcnow(), expires_at=tok.expires_at))
    session.flush()
    return cookie, _user(grader)


def authenticate_session(cookie: str | None, *, session: Session) -> WebUser:
    """The grader of a live browser session; AuthenticationError when it is unknown, expired or revoked."""
    if not cookie:
        raise AuthenticationError("not signed in: open the sign-in link your lead gave you")
    digest = sha256_hex(cookie)
    row = session.execute(
        select(m.WebSession, m.GraderToken, m.Grader)
        .join(m.GraderToken, m.GraderToken.id == m.WebSession.token_id)
        .join(m.Grader, m.Grader.id == m.WebSession.grader_id)
        .where(m.WebSession.session_sha256 == digest)).first()
    now = m.utcnow()
    if row is None or not same_secret(row[0].session_sha256, digest):
        raise AuthenticationError("not signed in: open the sign-in link your lead gave you")
    web, tok, grader = row
    if web.expires_at <= now or tok.revoked_at is not None or tok.expires_at <= now or not grader.active:
        raise AuthenticationError("your session has ended; open a new sign-in link")
    return _user(grader)


def start_session_until(token: str | None, *, session: Session) -> tuple[str, WebUser, int]:
    """:func:`start_session`, and the seconds the session has left: its token's, the cookie's Max-Age."""
    tok, _grader = _valid_token(token, session=session)
    cookie, user = start_session(token, session=session)
    return cookie, user, max(0, int((tok.expires_at - m.utcnow()).total_seconds()))


def server_key(name: str = LOGIN_KEY, *, session: Session) -> bytes:
    """The server secret ``name`` (made by migration 0008; made here if it was deleted)."""
    from sqlalchemy.exc import IntegrityError

    row = session.get(m.ServerSecret, name)
    if row is None:
        try:
            with session.begin_nested():  # another process may create it at the same moment: theirs wins
                session.add(m.ServerSecret(name=name, secret=new_secret(), created_at=m.utcnow()))
        except IntegrityError:
            pass
        row = session.get(m.ServerSecret, name)
    if row is None:
        raise NdcgLabelingError(f"no server secret {name!r}; run `ndcg-labeling db upgrade`")
    return row.secret.encode("utf-8")


def login_proof(token: str, nonce: str, *, session: Session, issued: int | None = None) -> str:
    """The sign-in form's proof for ``token`` and the page's ``nonce``: ``TIME.HEX`` (TIME in epoch
    seconds, HEX the HMAC-SHA256 of the token's sha256, the nonce and TIME under the server key)."""
    import time

    when = int(time.time()) if issued is None else issued
    message = f"{sha256_hex(token)}\0{nonce}\0{when}".encode()
    return f"{when}.{hmac.new(server_key(session=session), message, hashlib.sha256).hexdigest()}"


def check_login_proof(token: str | None, nonce: str | None, proof: str | None, *, session: Session) -> None:
    """PermissionDenied unless ``proof`` is :func:`login_proof` of this token and nonce, made within
    :data:`LOGIN_FORM_SECONDS`."""
    import time

    when, _, _digest = (proof or "").partition(".")
    if (not token or not nonce or not when.isdigit() or len(when) > 12
            or not 0 <= time.time() - int(when) <= LOGIN_FORM_SECONDS
            or not same_secret(proof, login_proof(token, nonce, session=session, issued=int(when)))):
        raise PermissionDenied("the sign-in form has expired; open the sign-in link again")


def end_session(cookie: str | None, *, session: Session) -> None:
    """Sign out: delete the browser session (nothing happens for an unknown cookie)."""
    if cookie:
        session.execute(delete(m.WebSession).where(m.WebSession.session_sha256 == sha256_hex(cookie)))


def csrf_token(cookie: str) -> str:
    """The CSRF token of the session whose cookie is ``cookie`` (never stored)."""
    return hashlib.sha256(_CSRF_PREFIX + cookie.encode("utf-8")).hexdigest()


def check_csrf(cookie: str | None, given: str | None) -> None:
    """PermissionDenied unless ``given`` is the CSRF token of the session ``cookie``."""
    if not cookie or not same_secret(given, csrf_token(cookie)):
        raise PermissionDenied("the form's CSRF token is missing or wrong; reload the page and try again")


def require_lead(user: WebUser) -> WebUser:
    if not user.is_lead:
        raise PermissionDenied("this page is for leads")
    return user
