"""Issue 34 item 3: a NUL byte in a URL path segment is 404 (in a query value 422), answered before the
database is asked (PostgreSQL refused the text with a driver error that read as 503 "try again")."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from ndcg_labeling.web.app import create_app
from tests.web.conftest import build_workspace


@pytest.fixture
def setup(db, tmp_path):
    ws = build_workspace(db, tmp_path)
    with TestClient(create_app(ws.db.engine)) as client:
        yield ws, client


def _statements(engine, call):
    seen: list[str] = []

    def count(conn, cursor, statement, *args):
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        response = call()
    finally:
        event.remove(engine, "before_cursor_execute", count)
    return response, seen


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/api/batches/x%00/next", 404),
    ("POST", "/api/batches/b1/items/{item}%00/grade", 404),
    ("GET", "/batches/%00/grade", 404),
    ("GET", "/api/batches/b1%00/progress", 404),
    ("GET", "/lead/adjudication?batch=b1%00", 422),
])
def test_nul_in_the_address_is_refused_before_the_database(setup, method, path, status):
    ws, client = setup
    token = ws.token("ann")
    url = path.format(item=ws.items("ann")[0])
    response, statements = _statements(ws.db.engine, lambda: client.request(
        method, url, headers={"Authorization": f"Bearer {token}"}, json={"grade": 1} if method == "POST" else None))
    assert response.status_code == status, response.text
    assert statements == []
    if url.startswith("/api/"):
        assert "NUL" in response.json()["detail"]
    assert ws.judgments() == []
