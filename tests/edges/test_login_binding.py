"""Issue 34 item 5: the sign-in form is bound to its token by an HMAC under a server secret kept in the
database, so a planted cookie is not enough; the session cookie lives as long as its token."""

from __future__ import annotations

import hashlib
import hmac
import re
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from ndcg_labeling.web.app import create_app
from tests.web.conftest import build_workspace


@pytest.fixture
def ws(db, tmp_path):
    return build_workspace(db, tmp_path)


def _client(ws):
    return TestClient(create_app(ws.db.engine), base_url="http://127.0.0.1:8000", follow_redirects=False)


def _form(client, token):
    page = client.get(f"/login?token={token}")
    assert page.status_code == 200, page.text
    return re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)


def test_a_planted_cookie_with_a_matching_nonce_is_refused(ws):
    """The old double-submit check accepted any nonce equal to the cookie: another site that can plant
    a cookie could sign a browser in with a token of its choosing."""
    with _client(ws) as client:
        token = ws.token("ann")
        client.cookies.set("ndcg_login", "chosen-by-attacker", path="/login")
        response = client.post("/login", data={"token": token, "nonce": "chosen-by-attacker"})
        assert response.status_code == 403
        assert client.get("/").status_code == 401


def test_the_form_proof_is_the_hmac_of_token_nonce_and_time_under_the_stored_secret(ws):
    with _client(ws) as client:
        token = ws.token("ann")
        proof = _form(client, token)
        nonce = client.cookies.get("ndcg_login")
        with ws.db.engine.connect() as conn:
            key = conn.execute(text("SELECT secret FROM server_secrets WHERE name = 'login'")).scalar_one()
        when, digest = proof.split(".")
        message = f"{hashlib.sha256(token.encode()).hexdigest()}\0{nonce}\0{when}".encode()
        assert digest == hmac.new(key.encode(), message, hashlib.sha256).hexdigest()
        assert abs(int(when) - time.time()) < 60


def test_a_proof_for_another_token_is_refused(ws):
    with _client(ws) as client:
        mine, other = ws.token("ann"), ws.token("bob")
        proof = _form(client, mine)
        assert client.post("/login", data={"token": other, "nonce": proof}).status_code == 403
        assert client.post("/login", data={"token": mine, "nonce": proof}).status_code == 303


def test_an_old_proof_is_refused(ws, monkeypatch):
    with _client(ws) as client:
        token = ws.token("ann")
        proof = _form(client, token)
        later = time.time() + 601
        monkeypatch.setattr(time, "time", lambda: later)
        assert client.post("/login", data={"token": token, "nonce": proof}).status_code == 403


def test_the_session_cookie_lives_as_long_as_the_token(ws):
    with _client(ws) as client:
        token = ws.token("ann", expires="2h")
        proof = _form(client, token)
        done = client.post("/login", data={"token": token, "nonce": proof})
        assert done.status_code == 303
        cookie = next(c for c in done.headers.get_list("set-cookie") if c.startswith("ndcg_session="))
        max_age = int(re.search(r"Max-Age=(\d+)", cookie, re.I).group(1))
        assert 2 * 3600 - 120 <= max_age <= 2 * 3600
