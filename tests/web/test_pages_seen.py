"""What a person sees on the pages (issue 30) and two leads deciding one item at once (issue 34, item 4),
through the served application: each test fails on the page as it was before the fix."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import importing
from ndcg_labeling.labels import tasks as t
from ndcg_labeling.labels.consensus import run_consensus, set_adjudication
from tests.web.conftest import build_workspace, graded_two_ways
from tests.web.test_web_pages import app_client, sign_in


def visible(page_html: str) -> str:
    """The page's text without tags (scripts and styles dropped), entities decoded, spaces collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page_html, flags=re.S | re.I)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


@pytest.fixture
def ws(sqlite_db, tmp_path):
    return build_workspace(sqlite_db, tmp_path)


def test_the_batches_page_shows_the_number_of_items_not_a_python_repr(ws):
    with session_scope(ws.db.engine) as session:
        items = session.execute(select(m.BatchItem.id).join(m.GradingBatch).where(m.GradingBatch.name == "b1")).all()
    with app_client(ws) as lead:
        sign_in(lead, ws.token("lee"))
        page = lead.get("/lead").text
    assert "built-in" not in page and "object at 0x" not in page
    assert re.search(rf'<td data-label="items" class="num">{len(items)}</td>', page)


def test_the_guideline_is_rendered_markdown_and_cannot_inject_markup(ws, monkeypatch):
    from ndcg_labeling import guidelines
    from ndcg_labeling.guidelines import guidelines_dir, parse_guideline

    text = (guidelines_dir() / "relevance-0-3.md").read_text(encoding="utf-8").replace(
        "## Before you grade", "## Before you grade\n\n<script>window.pwned=1</script>\n\n"
        '<img src=x onerror="window.pwned=2"> and [a link](javascript:alert(1))\n')
    guideline = parse_guideline(text, scale="0-3", path="guidelines/relevance-0-3.md")
    monkeypatch.setattr(guidelines, "_guideline", lambda scale, mtime: guideline)
    with app_client(ws) as client:
        sign_in(client, ws.token("ann"))
        page = client.get("/batches/b1/grade").text
    panel = page[page.index('id="guideline-text"'):]
    assert "<h1>Relevance rating guidelines" in panel and "<strong>Judge each document on its own merits.</strong>" in panel
    assert "# Relevance" not in panel and "**Judge" not in panel
    assert "<script>window" not in panel and "<img src=x" not in panel and 'href="javascript' not in panel
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in panel and "&lt;img src=x onerror=" in panel


def test_the_grading_page_says_what_was_saved_skipped_and_undone(ws):
    first, second = ws.items("ann")[:2]
    with app_client(ws) as client:
        csrf = sign_in(client, ws.token("ann"))
        done = client.post(f"/batches/b1/items/{first}/grade", data={"grade": "2", "csrf": csrf})
        assert visible(client.get(done.headers["location"]).text).count("Saved: 2 — Highly relevant.") == 1
        done = client.post(f"/batches/b1/items/{second}/skip", data={"reason": "no body", "csrf": csrf})
        assert "Skipped (no body)." in visible(client.get(done.headers["location"]).text)
        undone = client.post("/batches/b1/undo", data={"csrf": csrf})
        assert "Undone: your skip." in visible(client.get(undone.headers["location"]).text)
        undone = client.post("/batches/b1/undo", data={"csrf": csrf})
        page = visible(client.get(undone.headers["location"]).text)
        assert "Undone: your grade 2 — Highly relevant." in page and "Saved:" not in page
        # a crafted address shows nothing that is not stored: another grade, an item that is open
        assert "Undone" not in visible(client.get("/batches/b1/grade?undone=7").text)
        assert "Saved" not in visible(client.get(f"/batches/b1/grade?after={first}").text)
    assert ws.statuses("ann")[:2] == [(first, "open", None), (second, "open", None)]


def test_an_html_body_is_framed_in_a_sandbox_and_plain_text_stays_text(sqlite_db, tmp_path):
    body = "<p>The <b>question</b> and its number</p><script>window.pwned=1</script><meta http-equiv=refresh content=0>"
    ws = build_workspace(sqlite_db, tmp_path, texts={"body": body})
    with app_client(ws) as client:
        sign_in(client, ws.token("ann"))
        page = client.get("/batches/b1/grade").text
    frame = re.search(r'<iframe id="body"[^>]*>', page).group(0)
    assert 'sandbox=""' in frame  # no allow-scripts, no allow-same-origin
    srcdoc = html.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1))
    assert "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">" in srcdoc
    assert "<b><mark>question</mark></b> and its <mark>number</mark>" in srcdoc
    assert "http-equiv=refresh" not in srcdoc
    assert "<script>window.pwned" not in page  # only inside the escaped attribute


def test_a_plain_body_is_escaped_with_the_query_words_marked(sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path, texts={"body": "a question, 3 < 4 & a Number"})
    with app_client(ws) as client:
        sign_in(client, ws.token("ann"))
        page = client.get("/batches/b1/grade").text
    assert "<iframe" not in page
    assert "a <mark>question</mark>, 3 &lt; 4 &amp; a <mark>Number</mark>" in page


def test_the_queue_of_a_batch_holds_its_pairs_flagged_by_a_consensus_over_all_judgments(sqlite_db, tmp_path):
    ws = graded_two_ways(sqlite_db, tmp_path)
    with session_scope(ws.db.engine) as session:
        run_consensus(session=session, method="median")  # over all judgments: labels of batch ""
    with ws.db.engine.connect() as conn:  # the flagged pairs, read straight from the tables
        label = m.ConsensusLabel
        flagged = set(conn.execute(
            select(m.Query.external_id, m.Document.external_id).select_from(label)
            .join(m.Query, m.Query.id == label.query_id)
            .join(m.Document, m.Document.id == label.document_id)
            .where(label.needs_adjudication.is_(True), label.batch == "")).all())
    assert flagged
    with app_client(ws) as lead:
        sign_in(lead, ws.token("lee"))
        page = lead.get("/lead/adjudication?batch=b1").text
    shown = set(re.findall(r'data-query="([^"]+)" data-doc="([^"]+)"', page))
    assert shown == flagged
    assert visible(page).count("consensus of all judgments") == len(flagged)


def test_the_item_page_shows_the_document_every_grade_skip_and_note(sqlite_db, tmp_path):
    ws = graded_two_ways(sqlite_db, tmp_path)
    with session_scope(ws.db.engine) as session:
        importing.add_graders(["cat"], session=session)
    with app_client(ws) as lead:
        csrf = sign_in(lead, ws.token("lee"))
        queue = lead.get("/lead/adjudication?batch=b1").text
        query_id, doc_id = re.search(r'data-query="([^"]+)" data-doc="([^"]+)"', queue).groups()
        with ws.db.engine.connect() as conn:
            doc = conn.execute(select(m.Document.title, m.Document.url, m.Document.body)
                               .where(m.Document.external_id == doc_id)).one()
            grades = conn.execute(select(m.Grader.name, m.Judgment.grade).join(m.Grader)
                                  .join(m.Query, m.Query.id == m.Judgment.query_id)
                                  .join(m.Document, m.Document.id == m.Judgment.document_id)
                                  .where(m.Query.external_id == query_id, m.Document.external_id == doc_id)).all()
        done = lead.post("/lead/adjudication", data={"query_id": query_id, "doc_id": doc_id, "grade": "1",
                                                     "note": "only half of it", "batch": "b1", "version": "0",
                                                     "csrf": csrf})
        assert done.status_code == 303 and done.headers["location"].startswith("/lead/adjudication/item?")
        url = f"/lead/adjudication/item?query_id={query_id}&doc_id={doc_id}&batch=b1"
        page = visible(lead.get(url).text)
    assert doc.title in page and doc.url in page and " ".join(doc.body.split()) in page
    for grader, grade in grades:
        assert re.search(rf"{grader} {grade} — \w", page)
    assert "1 — Somewhat relevant by lee" in page and "only half of it" in page
    assert "Flagged by the consensus of batch b1: spread above max" in page
    for value in range(4):
        assert f'name="grade" value="{value}" data-grade="{value}"' in lead.get(url).text


def two_leads(sqlite_db, tmp_path):
    ws = graded_two_ways(sqlite_db, tmp_path)
    with session_scope(ws.db.engine) as session:
        importing.add_graders(["max"], session=session, role="lead")
    with ws.db.engine.connect() as conn:
        row = conn.execute(select(m.Query.external_id, m.Document.external_id)
                           .join(m.ConsensusLabel, m.ConsensusLabel.query_id == m.Query.id)
                           .join(m.Document, m.Document.id == m.ConsensusLabel.document_id)
                           .where(m.ConsensusLabel.needs_adjudication.is_(True)).limit(1)).one()
    return ws, tuple(row)


def adjudications(ws) -> list[tuple[float, str]]:
    with ws.db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(m.Adjudication.grade, m.Adjudication.adjudicator)
                                               .order_by(m.Adjudication.id))]


def test_a_decision_over_a_different_one_made_meanwhile_is_refused_unless_confirmed(sqlite_db, tmp_path):
    from ndcg_labeling.errors import AdjudicationConflict

    ws, (q, d) = two_leads(sqlite_db, tmp_path)
    with session_scope(ws.db.engine) as session:  # both leads saw no decision (version 0); max decides first
        first = set_adjudication(q, d, 3, adjudicator="max", session=session, note="clear answer", seen=0)
    with session_scope(ws.db.engine) as session, pytest.raises(AdjudicationConflict) as refused:
        set_adjudication(q, d, 1, adjudicator="lee", session=session, seen=0)
    assert str(refused.value) == (f"({q}, {d}) was adjudicated meanwhile by max as 3 (note: clear answer); "
                                  f"your grade 1 was not saved: confirm to replace their decision")
    assert (refused.value.by, refused.value.grade, refused.value.version) == ("max", 3.0, first.version)
    with session_scope(ws.db.engine) as session:
        set_adjudication(q, d, 3, adjudicator="lee", session=session, seen=0)  # the same grade: no conflict
        set_adjudication(q, d, 0, adjudicator="max", session=session)  # no version (the CLI): no check
        set_adjudication(q, d, 1, adjudicator="lee", session=session, seen=first.version, confirm=True)
    assert adjudications(ws) == [(3.0, "max"), (3.0, "lee"), (0.0, "max"), (1.0, "lee")]


def test_the_api_answers_409_naming_the_other_lead(sqlite_db, tmp_path):
    ws, (q, d) = two_leads(sqlite_db, tmp_path)
    with app_client(ws) as client:
        lee = {"Authorization": f"Bearer {ws.token('lee')}"}
        maxh = {"Authorization": f"Bearer {ws.token('max')}"}
        queue = client.get("/api/lead/adjudication", headers=lee).json()
        assert len(queue) >= 3
        for offset, limit in ((0, 1), (1, 2), (len(queue), 5)):  # a slice of the same queue, in its order
            part = client.get("/api/lead/adjudication", params={"offset": offset, "limit": limit}, headers=lee)
            assert part.json() == queue[offset:offset + limit]
        refused = client.get("/api/lead/adjudication", params={"limit": 0}, headers=lee)
        assert refused.status_code == 422 and "limit" in refused.text
        version = next(r["version"] for r in queue if (r["query_id"], r["doc_id"]) == (q, d))
        assert version == 0
        body = {"query_id": q, "doc_id": d, "version": version}
        ok = client.post("/api/lead/adjudication", json={**body, "grade": 2}, headers=maxh)
        assert ok.status_code == 200 and ok.json()["message"].startswith(f"adjudicated ({q}, {d}) = 2")
        late = client.post("/api/lead/adjudication", json={**body, "grade": 0}, headers=lee)
        assert late.status_code == 409 and "adjudicated meanwhile by max as 2" in late.json()["detail"]
        assert adjudications(ws) == [(2.0, "max")]
        sure = client.post("/api/lead/adjudication", json={**body, "grade": 0, "confirm": True}, headers=lee)
        assert sure.status_code == 200 and sure.json()["version"] > ok.json()["version"]
        grader = client.post("/api/lead/adjudication", json={**body, "grade": 1},
                             headers={"Authorization": f"Bearer {ws.token('ann')}"})
        assert grader.status_code == 403
    assert adjudications(ws) == [(2.0, "max"), (0.0, "lee")]


def test_the_page_names_the_other_leads_decision_and_offers_to_replace_it(sqlite_db, tmp_path):
    ws, (q, d) = two_leads(sqlite_db, tmp_path)
    with app_client(ws) as lee, app_client(ws) as other:
        csrf = sign_in(lee, ws.token("lee"))
        page = lee.get(f"/lead/adjudication/item?query_id={q}&doc_id={d}&batch=b1").text
        seen = re.search(r'name="version" value="(\d+)"', page).group(1)
        other_csrf = sign_in(other, ws.token("max"))
        assert other.post("/lead/adjudication", data={"query_id": q, "doc_id": d, "grade": "3", "note": "exact",
                                                      "version": seen, "csrf": other_csrf}).status_code == 303
        form = {"query_id": q, "doc_id": d, "grade": "1", "note": "partial", "batch": "b1", "version": seen,
                "csrf": csrf}
        refused = lee.post("/lead/adjudication", data=form)
        assert refused.status_code == 409
        text = visible(refused.text)
        assert "max decided this item meanwhile: 3 — Perfect (note: “exact”). Your grade 1 was not saved." in text
        assert "Replace max’s decision with 1" in text
        start = refused.text.index('id="conflict"')
        confirm = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">',
                                  refused.text[start:refused.text.index("</form>", start)]))
        assert confirm["confirm"] == "true" and confirm["grade"] == "1" and confirm["note"] == "partial"
        assert lee.post("/lead/adjudication", data=confirm).status_code == 303
    assert adjudications(ws) == [(3.0, "max"), (1.0, "lee")]


def test_the_live_report_without_labels_says_what_is_missing(ws):
    with app_client(ws) as lead:
        sign_in(lead, ws.token("lee"))
        page = lead.get("/lead/report")
        assert page.status_code == 200
        text = visible(page.text)
        assert "No grades are stored yet" in text and "ndcg-labeling consensus" not in text and "`" not in text
        with session_scope(ws.db.engine) as session:
            t.save_grade("b1", ws.items("ann")[0], 2, grader="ann", session=session)
        text = visible(lead.get("/lead/report").text)
        assert "1 grades are stored, but they have not been combined into one label" in text
        assert 'href="/lead/consensus"' in lead.get("/lead/report").text


def test_graders_get_403_on_the_adjudication_item_page(ws):
    with app_client(ws) as grader, app_client(ws) as lead:
        sign_in(grader, ws.token("ann"))
        sign_in(lead, ws.token("lee"))
        path = "/lead/adjudication/item?query_id=q000&doc_id=d000"
        assert grader.get(path).status_code == 403
        assert lead.get(path).status_code == 200
        assert lead.get("/lead/adjudication/item?query_id=nope&doc_id=d000").status_code == 404
