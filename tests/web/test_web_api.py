"""The JSON API through httpx (FastAPI's TestClient), on SQLite and PostgreSQL: sign-in by bearer
token, next / grade / skip / undo / progress, the status codes of the issue, and position-blindness."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.guidelines import load_guideline
from ndcg_labeling.labels import tasks as t
from ndcg_labeling.web.app import create_app
from ndcg_labeling.workspace import auth
from tests.web.conftest import secret_strings

ITEM_KEYS = {"item_id", "query", "title", "body", "url", "scale", "grades"}


@pytest.fixture
def client(workspace):
    with TestClient(create_app(workspace.db.engine)) as c:
        yield c


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_me_and_roles(client, workspace):
    assert client.get("/api/me", headers=bearer(workspace.token("ann"))).json() == {"grader": "ann", "role": "grader"}
    assert client.get("/api/me", headers=bearer(workspace.token("lee"))).json() == {"grader": "lee", "role": "lead"}


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic YW5uOng="},
                                     {"Authorization": "Bearer "}])
def test_no_or_bad_token_is_401(client, headers):
    response = client.get("/api/me", headers=headers)
    assert response.status_code == 401
    assert set(response.json()) == {"detail"} and "\n" not in response.json()["detail"]


def test_next_is_the_pipelines_next_item_without_position_rank_or_system(client, workspace):
    token = workspace.token("ann")
    response = client.get("/api/batches/b1/next", headers=bearer(token))
    assert response.status_code == 200
    payload = response.json()
    assert set(payload) == ITEM_KEYS
    with session_scope(workspace.db.engine) as session:
        expected = t.next_item("b1", grader="ann", session=session)
    assert expected is not None
    assert (payload["item_id"], payload["query"], payload["title"], payload["body"], payload["url"]) == (
        expected.item_id, expected.query, expected.title, expected.body, expected.url)
    guideline = load_guideline("0-3")
    assert payload["grades"] == [{"value": g.grade, "name": g.name, "definition": g.definition} for g in guideline.grades]
    without_definitions = json.dumps({k: v for k, v in payload.items() if k != "grades"}).lower()
    for word in ("rank", "score", "system", "position", *secret_strings()):
        assert word.lower() not in without_definitions, word
    assert payload["item_id"] == workspace.items("ann")[0]


def test_grade_skip_undo_progress_follow_the_graders_order(client, workspace):
    h = bearer(workspace.token("ann"))
    items = workspace.items("ann")
    total = len(items)
    assert client.get("/api/batches/b1/progress", headers=h).json() == {"done": 0, "skipped": 0, "open": total,
                                                                       "total": total}
    r = client.post(f"/api/batches/b1/items/{items[0]}/grade", json={"grade": 2}, headers=h)
    assert r.status_code == 200 and r.json() == {"done": 1, "skipped": 0, "open": total - 1, "total": total}
    r = client.post(f"/api/batches/b1/items/{items[1]}/grade", json={"skip": "page in Dutch"}, headers=h)
    assert r.json() == {"done": 1, "skipped": 1, "open": total - 2, "total": total}
    r = client.post(f"/api/batches/b1/items/{items[2]}/grade", json={"grade": "Perfect"}, headers=h)
    assert r.json()["done"] == 2
    assert client.get("/api/batches/b1/next", headers=h).json()["item_id"] == items[3]
    r = client.post(f"/api/batches/b1/items/{items[0]}/undo", headers=h)
    assert r.json() == {"done": 1, "skipped": 1, "open": total - 2, "total": total}
    assert client.get("/api/batches/b1/next", headers=h).json()["item_id"] == items[0]
    assert workspace.statuses("ann")[:3] == [(items[0], "open", None), (items[1], "skipped", "page in Dutch"),
                                             (items[2], "done", None)]
    assert sorted(workspace.judgments()) == [("ann", items[2], 3)]


def test_204_when_nothing_is_open(client, workspace):
    h = bearer(workspace.token("ann"))
    for item in workspace.items("ann"):
        assert client.post(f"/api/batches/b1/items/{item}/grade", json={"grade": 1}, headers=h).status_code == 200
    response = client.get("/api/batches/b1/next", headers=h)
    assert response.status_code == 204 and response.content == b""


@pytest.mark.parametrize("body", [{"grade": 4}, {"grade": -1}, {"grade": "2.5"}, {"grade": "three"}, {"grade": True},
                                  {"grade": 1.5}, {}, {"grade": 1, "skip": "x"}, {"grade": 1, "rank": 1},
                                  {"skip": "x" * 501}])
def test_bad_grade_is_422_with_one_line(client, workspace, body):
    h = bearer(workspace.token("ann"))
    item = workspace.items("ann")[0]
    response = client.post(f"/api/batches/b1/items/{item}/grade", json=body, headers=h)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and len(detail) < 300
    assert workspace.judgments() == [] and workspace.statuses("ann")[0][1] == "open"


def test_outside_the_scale_message(client, workspace):
    h = bearer(workspace.token("ann"))
    item = workspace.items("ann")[0]
    response = client.post(f"/api/batches/b1/items/{item}/grade", json={"grade": 7}, headers=h)
    assert response.json() == {"detail": "grade 7 is outside the scale 0-3 (0..3)"}


def test_ann_cannot_read_or_grade_bobs_items(client, workspace):
    h = bearer(workspace.token("ann"))
    bob_item = workspace.items("bob")[0]
    assert bob_item not in workspace.items("ann")
    unknown = "0" * 24
    for item in (bob_item, unknown):
        grade = client.post(f"/api/batches/b1/items/{item}/grade", json={"grade": 1}, headers=h)
        skip = client.post(f"/api/batches/b1/items/{item}/grade", json={"skip": "x"}, headers=h)
        undo = client.post(f"/api/batches/b1/items/{item}/undo", headers=h)
        assert grade.status_code == skip.status_code == undo.status_code == 404
    # the same message whether bob's item exists or not: nothing tells ann that it does
    bob_msg = client.post(f"/api/batches/b1/items/{bob_item}/undo", headers=h).json()["detail"]
    unknown_msg = client.post(f"/api/batches/b1/items/{unknown}/undo", headers=h).json()["detail"]
    assert bob_msg.replace(bob_item, "X") == unknown_msg.replace(unknown, "X")
    assert "bob" not in bob_msg
    assert workspace.judgments() == [] and {s for _, s, _ in workspace.statuses("bob")} == {"open"}


def test_unknown_batch_is_404_and_lists_no_batches(client, workspace):
    h = bearer(workspace.token("ann"))
    for path in ("/api/batches/nope/next", "/api/batches/nope/progress"):
        response = client.get(path, headers=h)
        assert response.status_code == 404 and "b1" not in response.json()["detail"]


def test_a_grader_without_items_in_the_batch_gets_404(client, workspace):
    with session_scope(workspace.db.engine) as session:
        from ndcg_labeling.labels.importing import add_graders

        add_graders(["cat"], session=session)
    h = bearer(workspace.token("cat"))
    assert client.get("/api/batches/b1/next", headers=h).status_code == 404
    assert client.get("/api/batches", headers=h).json() == []


def test_grader_gets_403_on_lead_endpoints_and_lead_gets_200(client, workspace):
    ann, lee = bearer(workspace.token("ann")), bearer(workspace.token("lee"))
    for path in ("/api/lead/batches", "/api/lead/batches/b1/status", "/api/lead/adjudication"):
        assert client.get(path, headers=ann).status_code == 403
        assert client.get(path, headers=lee).status_code == 200
    status = client.get("/api/lead/batches/b1/status", headers=lee).json()
    assert {g["grader"] for g in status["graders"]} == {"ann", "bob"}


def test_expired_and_revoked_tokens_are_refused(client, workspace):
    token = workspace.token("ann")
    assert client.get("/api/me", headers=bearer(token)).status_code == 200
    with session_scope(workspace.db.engine) as session:
        auth.revoke_tokens("ann", session=session)
    assert client.get("/api/me", headers=bearer(token)).status_code == 401
    expired = workspace.token("ann", expires="1m")
    assert client.get("/api/me", headers=bearer(expired)).status_code == 200
    with session_scope(workspace.db.engine) as session:
        session.execute(update(m.GraderToken).where(m.GraderToken.token_sha256 == auth.sha256_hex(expired))
                        .values(expires_at=m.utcnow()))
    assert client.get("/api/me", headers=bearer(expired)).status_code == 401


def test_tokens_are_stored_hashed(workspace):
    token = workspace.token("ann")
    with workspace.db.engine.connect() as conn:
        from sqlalchemy import select

        stored = conn.execute(select(m.GraderToken.token_sha256)).scalars().all()
    assert token not in stored and auth.sha256_hex(token) in stored and len(token) >= 40


def test_the_api_serves_items_in_the_order_and_with_the_ids_of_tasks_export(client, workspace):
    with session_scope(workspace.db.engine) as session:
        exported = t.export_tasks("b1", grader="ann", session=session)
    h = bearer(workspace.token("ann"))
    served = []
    while (r := client.get("/api/batches/b1/next", headers=h)).status_code == 200:
        item = r.json()
        served.append({k: item[k] for k in ("item_id", "query", "title", "body", "url")})
        client.post(f"/api/batches/b1/items/{item['item_id']}/grade", json={"grade": 0}, headers=h)
    assert served == [{k: row[k] for k in ("item_id", "query", "title", "body", "url")} for row in exported]


def test_reading_routes_answer_beside_an_open_writer_on_sqlite(sqlite_db, tmp_path):
    """On SQLite a writer's transaction (an import, BEGIN IMMEDIATE) holds the write lock for its whole
    length; reading routes begin deferred, read-only transactions, so they answer at once and see only
    what is committed, where before they queued for the lock up to the 30 s busy timeout (then 503)."""
    import sqlite3
    import time

    from tests.web.conftest import build_workspace

    ws = build_workspace(sqlite_db, tmp_path)
    ann, lee = bearer(ws.token("ann")), bearer(ws.token("lee"))
    first = ws.items("ann")[0]
    writer = sqlite3.connect(sqlite_db.engine.url.database, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO graders (name, active, role, kind) VALUES ('zed', 1, 'grader', 'human')")
    try:
        with TestClient(create_app(sqlite_db.engine)) as client:
            start = time.perf_counter()
            me = client.get("/api/me", headers=ann)
            batches = client.get("/api/lead/batches", headers=lee)
            item = client.get("/api/batches/b1/next", headers=ann)
            status = client.get("/api/lead/batches/b1/status", headers=lee)
            elapsed = time.perf_counter() - start
            assert [r.status_code for r in (me, batches, item, status)] == [200] * 4, [me.text, item.text]
            assert elapsed < 10, elapsed
            assert "zed" not in status.text and item.json()["item_id"] == first
    finally:
        writer.execute("ROLLBACK")
        writer.close()
