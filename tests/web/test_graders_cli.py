"""``graders token | revoke | set-role`` and ``graders add --role``, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import AuthenticationError
from ndcg_labeling.workspace import auth
from tests.conftest import invoke


def test_token_prints_a_link_and_json(runner, db):
    assert invoke(runner, db, "graders", "add", "ann").exit_code == 0
    result = invoke(runner, db, "graders", "token", "ann", "--expires", "12h", "--format", "json",
                    "--host", "grading.example", "--port", "8443")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"grader", "token", "url", "expires"}
    assert data["grader"] == "ann"
    assert data["url"] == f"http://grading.example:8443/login?token={data['token']}"
    expires = datetime.fromisoformat(data["expires"].rstrip("Z"))
    assert timedelta(hours=11, minutes=58) < expires - datetime.utcnow() <= timedelta(hours=12)
    with db.engine.connect() as conn:
        stored = conn.execute(text("SELECT token_sha256 FROM grader_tokens")).scalars().all()
    assert stored == [auth.sha256_hex(data["token"])]
    plain = invoke(runner, db, "graders", "token", "ann")
    assert plain.exit_code == 0 and "http://127.0.0.1:8000/login?token=" in plain.output


@pytest.mark.parametrize("expires", ["0d", "30", "1y", "400d", "-1d", ""])
def test_bad_expiry_is_one_error_line(runner, db, expires):
    invoke(runner, db, "graders", "add", "ann")
    result = invoke(runner, db, "graders", "token", "ann", "--expires", expires)
    assert result.exit_code == 1
    assert result.output.strip().startswith("Error: --expires") and len(result.output.strip().splitlines()) == 1
    assert db.counts()["grader_tokens"] == 0


def test_unknown_grader(runner, db):
    result = invoke(runner, db, "graders", "token", "zed")
    assert result.exit_code == 1 and result.output.strip() == (
        "Error: unknown grader 'zed'; add it with `ndcg-labeling graders add zed`")


def test_revoke_ends_tokens_and_sessions(runner, db):
    invoke(runner, db, "graders", "add", "ann")
    token = json.loads(invoke(runner, db, "graders", "token", "ann", "--format", "json").output)["token"]
    with session_scope(db.engine) as session:
        auth.start_session(token, session=session)
    result = invoke(runner, db, "graders", "revoke", "ann")
    assert result.exit_code == 0
    assert result.output.strip() == "ann: 1 sign-in token(s) revoked, 1 browser session(s) ended"
    with session_scope(db.engine) as session, pytest.raises(AuthenticationError):
        auth.authenticate_token(token, session=session)


def test_roles(runner, db):
    assert invoke(runner, db, "graders", "add", "lee", "--role", "lead").exit_code == 0
    assert invoke(runner, db, "graders", "add", "ann").exit_code == 0
    with db.engine.connect() as conn:
        roles = dict(conn.execute(text("SELECT name, role FROM graders")).all())
    assert roles == {"lee": "lead", "ann": "grader"}
    result = invoke(runner, db, "graders", "set-role", "ann", "lead")
    assert result.exit_code == 0 and result.output.strip() == "ann: role lead (was grader)"
    bad = invoke(runner, db, "graders", "add", "bob", "--role", "boss")
    assert bad.exit_code == 1 and bad.output.strip() == "Error: unknown role 'boss'; use grader or lead"
    assert invoke(runner, db, "graders", "set-role", "ann", "boss").exit_code == 2  # not a choice
    with db.engine.connect() as conn:
        roles = dict(conn.execute(text("SELECT name, role FROM graders")).all())
    assert roles == {"lee": "lead", "ann": "lead"}
