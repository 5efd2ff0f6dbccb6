"""The server-rendered pages through httpx: sign-in from a token link, cookies, CSRF on every form,
graders' 403 on lead pages, pages that keep ann away from bob's items, and inert text."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import tasks as t
from ndcg_labeling.web.app import create_app
from ndcg_labeling.workspace import auth
from tests.web.conftest import build_workspace, graded_two_ways, secret_strings

LEAD_PAGES = ("/lead", "/lead/batches/b1", "/lead/agreement", "/lead/adjudication", "/lead/report")


def app_client(workspace) -> TestClient:
    return TestClient(create_app(workspace.db.engine), base_url="http://127.0.0.1:8000", follow_redirects=False)


def sign_in(client: TestClient, token: str) -> str:
    """Follow the sign-in link and press the button; returns the CSRF token of the pages."""
    page = client.get(f"/login?token={token}")
    assert page.status_code == 200, page.text
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)
    done = client.post("/login", data={"token": token, "nonce": nonce})
    assert done.status_code == 303 and done.headers["location"] == "/"
    home = client.get("/")
    assert home.status_code == 200
    return re.search(r'name="csrf" value="([^"]+)"', home.text).group(1)


@pytest.fixture
def ws(sqlite_db, tmp_path):
    return build_workspace(sqlite_db, tmp_path)


def test_sign_in_sets_an_httponly_samesite_strict_cookie_stored_hashed(ws):
    with app_client(ws) as client:
        token = ws.token("ann")
        page = client.get(f"/login?token={token}")
        nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)
        done = client.post("/login", data={"token": token, "nonce": nonce})
        cookie = done.headers["set-cookie"]
        assert "ndcg_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        value = re.search(r"ndcg_session=([^;]+)", cookie).group(1)
        with ws.db.engine.connect() as conn:
            from sqlalchemy import text

            stored = conn.execute(text("SELECT session_sha256 FROM web_sessions")).scalars().all()
        assert stored == [auth.sha256_hex(value)]
        assert page.headers["referrer-policy"] == "no-referrer"
        assert "script-src 'self'" in page.headers["content-security-policy"]


def test_login_without_the_pages_nonce_is_refused(ws):
    with app_client(ws) as client:
        token = ws.token("ann")
        response = client.post("/login", data={"token": token, "nonce": "forged"})
        assert response.status_code == 403
        assert client.get("/").status_code == 401


@pytest.mark.parametrize("case", ["revoked", "expired", "garbage"])
def test_expired_or_revoked_link_does_not_sign_in_and_ends_sessions(ws, case):
    from sqlalchemy import update

    from ndcg_labeling.db import models as m

    with app_client(ws) as client:
        token = ws.token("ann")
        sign_in(client, token)
        assert client.get("/").status_code == 200
        if case == "garbage":
            token = ("y" if token[0] == "x" else "x") + token[1:]  # a token starting with "x" stayed valid (1 in 64)
        with session_scope(ws.db.engine) as session:
            if case == "revoked":
                auth.revoke_tokens("ann", session=session)
            elif case == "expired":
                session.execute(update(m.GraderToken).values(expires_at=m.utcnow()))
        assert client.get(f"/login?token={token}").status_code == 401
        if case != "garbage":  # the session that came from the token ends with it
            assert client.get("/").status_code == 401
            assert client.get("/batches/b1/grade").status_code == 401


def test_every_post_needs_the_csrf_token(ws):
    with app_client(ws) as client:
        csrf = sign_in(client, ws.token("ann"))
        item = ws.items("ann")[0]
        posts = [(f"/batches/b1/items/{item}/grade", {"grade": "2"}), (f"/batches/b1/items/{item}/skip", {"reason": "x"}),
                 ("/batches/b1/undo", {}), ("/logout", {})]
        for path, data in posts:
            assert client.post(path, data=data).status_code == 403, path
            assert client.post(path, data={**data, "csrf": "0" * 64}).status_code == 403, path
        assert ws.judgments() == [] and ws.statuses("ann")[0][1] == "open"
        # the cookie session's API writes need the token in a header
        assert client.post(f"/api/batches/b1/items/{item}/grade", json={"grade": 1}).status_code == 403
        ok = client.post(f"/api/batches/b1/items/{item}/grade", json={"grade": 1}, headers={"X-CSRF-Token": csrf})
        assert ok.status_code == 200
        assert client.post(f"/batches/b1/items/{ws.items('ann')[1]}/grade",
                           data={"grade": "2", "csrf": csrf}).status_code == 303
        assert sorted(g for _, _, g in ws.judgments()) == [1, 2]


def test_a_lead_session_cannot_be_used_with_another_sessions_csrf(ws):
    with app_client(ws) as ann, app_client(ws) as bob:
        ann_csrf = sign_in(ann, ws.token("ann"))
        sign_in(bob, ws.token("bob"))
        assert bob.post("/batches/b1/undo", data={"csrf": ann_csrf}).status_code == 403


def test_grading_page_grades_skips_undoes_and_resumes(ws):
    with app_client(ws) as client:
        csrf = sign_in(client, ws.token("ann"))
        items = ws.items("ann")
        page = client.get("/batches/b1/grade")
        assert f'data-item-id="{items[0]}"' in page.text
        client.post(f"/batches/b1/items/{items[0]}/grade", data={"grade": "3", "csrf": csrf})
        client.post(f"/batches/b1/items/{items[1]}/skip", data={"reason": "login wall", "csrf": csrf})
        assert f'data-item-id="{items[2]}"' in client.get("/batches/b1/grade").text
        client.post("/batches/b1/undo", data={"csrf": csrf})  # the skip, the newest action
        assert f'data-item-id="{items[1]}"' in client.get("/batches/b1/grade").text
        assert ws.statuses("ann")[:2] == [(items[0], "done", None), (items[1], "open", None)]
        bad = client.post(f"/batches/b1/items/{items[1]}/grade", data={"grade": "9", "csrf": csrf})
        assert bad.status_code == 422 and "outside the scale" in bad.text


def test_the_grading_page_shows_nothing_of_rank_score_system_or_other_graders(ws):
    with app_client(ws) as client:
        sign_in(client, ws.token("ann"))
        html = client.get("/batches/b1/grade").text
        with session_scope(ws.db.engine) as session:
            item = t.next_item("b1", grader="ann", session=session)
        assert item.title in html and item.query in html
        for secret in secret_strings():
            assert secret not in html, secret
        outside_guideline = re.sub(r'<aside id="guideline".*?</aside>', "", html, flags=re.S).lower()
        for word in ("rank", "score", "system", "position"):
            assert word not in outside_guideline, word


def test_ann_cannot_open_or_post_to_bobs_items_through_pages(ws):
    with app_client(ws) as client:
        csrf = sign_in(client, ws.token("ann"))
        bob_item = ws.items("bob")[0]
        for path, data in [(f"/batches/b1/items/{bob_item}/grade", {"grade": "1"}),
                           (f"/batches/b1/items/{bob_item}/skip", {"reason": "x"})]:
            response = client.post(path, data={**data, "csrf": csrf})
            assert response.status_code == 404 and "bob" not in response.text
        assert {s for _, s, _ in ws.statuses("bob")} == {"open"}
        home = client.get("/").text
        assert "bob" not in home


def test_graders_get_403_on_every_lead_page_and_leads_see_them(ws):
    with app_client(ws) as grader, app_client(ws) as lead:
        sign_in(grader, ws.token("ann"))
        sign_in(lead, ws.token("lee"))
        for path in LEAD_PAGES:
            assert grader.get(path).status_code == 403, path
        for path in LEAD_PAGES[:4]:
            assert lead.get(path).status_code == 200, path
        assert grader.post("/lead/adjudication", data={"query_id": "q000", "doc_id": "d000", "grade": "1",
                                                       "csrf": "x"}).status_code == 403


def test_lead_batch_page_shows_per_grader_progress_and_skip_reasons(ws):
    with app_client(ws) as grader, app_client(ws) as lead:
        csrf = sign_in(grader, ws.token("ann"))
        item = ws.items("ann")[0]
        grader.post(f"/batches/b1/items/{item}/skip", data={"reason": "<b>broken</b> page", "csrf": csrf})
        sign_in(lead, ws.token("lee"))
        html = lead.get("/lead/batches/b1").text
        assert "&lt;b&gt;broken&lt;/b&gt; page" in html and "<b>broken" not in html
        assert re.search(r"<td>ann</td>.*?<td>0</td><td>1</td>", html, flags=re.S)


@pytest.mark.parametrize("field", ["query", "title", "body"])
def test_markup_in_query_title_or_body_is_escaped(sqlite_db, tmp_path, field):
    payload = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    ws = build_workspace(sqlite_db, tmp_path, texts={field: payload})
    with app_client(ws) as client:
        sign_in(client, ws.token("ann"))
        html = client.get("/batches/b1/grade").text
        assert "<script>window.pwned" not in html and "<img src=x" not in html
        assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
        api = client.get("/api/batches/b1/next").json()
        assert api[field] == payload  # the API returns the text as stored; JSON is not HTML


def test_javascript_urls_are_not_links(sqlite_db, tmp_path):
    from sqlalchemy import update

    from ndcg_labeling.db import models as m

    ws = build_workspace(sqlite_db, tmp_path)
    with session_scope(ws.db.engine) as session:
        session.execute(update(m.Document).values(url="javascript:alert(1)"))
    with app_client(ws) as client:
        sign_in(client, ws.token("ann"))
        html = client.get("/batches/b1/grade").text
        assert "javascript:alert(1)" in html and 'href="javascript' not in html


def workspace_queue(session):
    from ndcg_labeling.labels.adjudication import adjudication_queue
    from ndcg_labeling.labels.consensus import flagged_items

    rows = adjudication_queue("b1", session=session)
    assert [{k: v for k, v in r.items() if k not in ("query", "title", "note", "version")} for r in rows] == flagged_items(
        session=session, batch="b1")
    return rows


def test_lead_pages_with_agreement_adjudication_and_the_live_report(sqlite_db, tmp_path):
    ws = graded_two_ways(sqlite_db, tmp_path)
    with session_scope(ws.db.engine) as session:
        from ndcg_labeling.labels.agreement import agreement_report

        flagged = workspace_queue(session)
        by_type = agreement_report(session=session, batch="b1", by="query-type").rows
    assert flagged
    with app_client(ws) as lead:
        csrf = sign_in(lead, ws.token("lee"))
        agreement = lead.get("/lead/agreement?batch=b1").text
        for row in by_type:
            alpha = "—" if row["alpha"] is None else f"{row['alpha']:.3f}"
            assert f"<td>{row['scope']}</td><td>{alpha}</td>" in agreement
        # an alpha below 0 (here the "all" row: the two graders of graded_two_ways disagree) is said in words
        below = [row["scope"] for row in by_type if row["alpha"] is not None and row["alpha"] < 0]
        assert below and 'role="alert"><strong>Agreement below chance.</strong>' in agreement
        assert agreement.count("alpha below 0: agreement below chance</span>") == len(below)
        assert "<td>ann</td>" in agreement and "<td>bob</td>" in agreement
        queue = lead.get("/lead/adjudication?batch=b1").text
        first = flagged[0]
        assert f'data-query="{first["query_id"]}" data-doc="{first["doc_id"]}"' in queue
        assert first["grades"] in queue  # every grade and its grader
        assert first["query"] and first["query"] in queue and first["title"] in queue
        done = lead.post("/lead/adjudication", data={"query_id": first["query_id"], "doc_id": first["doc_id"],
                                                     "grade": "2", "note": "read it twice", "batch": "b1",
                                                     "csrf": csrf})
        assert done.status_code == 303
        assert lead.post("/lead/adjudication", data={"query_id": first["query_id"], "doc_id": first["doc_id"],
                                                     "grade": "9", "csrf": csrf}).status_code == 400
        report = lead.get("/lead/report")
        assert report.status_code == 200 and "<html" in report.text.lower()
        assert "script-src" not in report.headers["content-security-policy"]
    with session_scope(ws.db.engine) as session:
        from ndcg_labeling.labels.consensus import flagged_items

        after = {(r["query_id"], r["doc_id"]): r for r in flagged_items(session=session, batch="b1")}
    row = after[(first["query_id"], first["doc_id"])]
    assert (row["adjudicated"], row["adjudicator"]) == (2.0, "lee")


def test_the_grading_page_warns_when_the_guideline_changed_since_the_batch(ws):
    from sqlalchemy import update

    from ndcg_labeling.db import models as m

    with app_client(ws) as client:
        sign_in(client, ws.token("ann"))
        assert 'id="guideline-warning"' not in client.get("/batches/b1/grade").text
        with session_scope(ws.db.engine) as session:
            session.execute(update(m.GradingBatch).values(guideline_sha256="0" * 64))
        html = client.get("/batches/b1/grade").text
        assert 'id="guideline-warning"' in html and "has changed since batch &#39;b1&#39; was created" in html


def test_the_grading_page_shows_gold_feedback_after_a_gold_item_only(sqlite_db, tmp_path):
    """A --gold-feedback batch: grading a gold item on the page leads to a page with the reference grade
    (the text the terminal prints); an ordinary item leads to the plain page, and so does a crafted
    ?after= naming an ungraded item. (A batch without feedback: gold_feedback's None, tests/labels/test_gold.py.)"""
    from sqlalchemy import select

    from ndcg_labeling.db import models as m
    from ndcg_labeling.demo.quality import load_quality_data
    from ndcg_labeling.labels.gold import gold_feedback
    from tests.web.conftest import Workspace

    graders = ["ana", "ben", "chloe", "dev", "emma"]
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        t.create_batch("fb", scale="0-3", depth=8, overlap=1, graders=graders, session=session, seed=4,
                       gold_rate=0.1, gold_feedback=True)
    ws = Workspace(sqlite_db, "fb")
    with sqlite_db.engine.connect() as conn:
        gold = set(conn.execute(select(m.BatchGoldItem.item_id)).scalars())
        keys = conn.execute(select(m.BatchItem.item_key, m.BatchItem.id).join(
            m.Assignment, m.Assignment.item_id == m.BatchItem.id).join(m.Grader, m.Grader.id == m.Assignment.grader_id)
            .where(m.Grader.name == "ana").order_by(m.Assignment.position)).all()
    order = [k for k, _ in keys]
    first_gold = next(i for i, (_, item) in enumerate(keys) if item in gold)
    with app_client(ws) as client:
        csrf = sign_in(client, ws.token("ana"))
        unseen_gold = order[first_gold]
        page = client.get(f"/batches/fb/grade?after={unseen_gold}")  # not graded yet: nothing to show
        assert page.status_code == 200 and 'id="gold-feedback"' not in page.text
        for i, key in enumerate(order[: first_gold + 1]):
            done = client.post(f"/batches/fb/items/{key}/grade", data={"grade": "0", "csrf": csrf})
            assert done.status_code == 303
            page = client.get(done.headers["location"])
            assert page.status_code == 200
            assert done.headers["location"] == f"/batches/fb/grade?after={key}"  # "Saved: 0 — ..." then
            if i < first_gold:
                assert 'id="gold-feedback"' not in page.text
        assert done.headers["location"] == f"/batches/fb/grade?after={unseen_gold}"
        with session_scope(sqlite_db.engine) as session:
            expected = str(gold_feedback("fb", unseen_gold, grader="ana", session=session))
        shown = re.search(r'<p class="feedback" id="gold-feedback" role="status">([^<]*)</p>', page.text).group(1)
        assert shown.replace("&#39;", "'").replace("&quot;", '"').replace("&amp;", "&") == expected
        assert expected.startswith("Calibration item: your grade 0")
