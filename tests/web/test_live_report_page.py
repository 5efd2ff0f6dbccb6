"""The lead's live report page: one navigation bar (the workspace's, with Sign out and Online), the
baseline and headline metric to choose, the report computed once per labels version; and the way in
for a person who is not signed in."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import update

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels.consensus import flagged_items, set_adjudication
from ndcg_labeling.web import lead
from ndcg_labeling.workspace import grading
from tests.web.conftest import graded_two_ways
from tests.web.test_lead_admin import as_lead, client_for


@pytest.fixture
def ws(db, tmp_path):
    lead.REPORT_CACHE.entries.clear()
    return graded_two_ways(db, tmp_path)


def visible(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", page)))


def test_the_report_has_the_one_navigation_bar_and_the_choice_of_baseline_and_metric(ws):
    client, _ = as_lead(ws)
    page = client.get("/lead/report")
    assert page.status_code == 200
    assert page.text.count('<header class="top">') == 1 and page.text.count("<nav") == 2  # top bar, lead menu
    assert 'action="/logout"' in page.text and 'href="/lead/online"' in page.text
    assert "Headline (ndcg@10)" in visible(page.text)
    assert "Difference to the baseline bm25zeta" in visible(page.text)  # the default: the first by name
    chosen = client.get("/lead/report?baseline=denseomega&metric=mrr@10")
    assert chosen.status_code == 200
    assert "Headline (mrr@10)" in visible(chosen.text)
    assert "Difference to the baseline denseomega" in visible(chosen.text)
    assert '<option value="denseomega" selected>' in chosen.text and '<option value="mrr@10" selected>' in chosen.text
    assert client.get("/lead/report?baseline=nosuch").status_code == 404
    assert client.get("/lead/report?metric=judged@10").status_code == 422


def test_the_report_is_computed_once_per_labels_version(ws, monkeypatch):
    calls = []
    real = grading.live_report_html

    def counted(**kwargs):
        calls.append(1)
        return real(**kwargs)

    monkeypatch.setattr(grading, "live_report_html", counted)
    client, _ = as_lead(ws)
    first = client.get("/lead/report").text
    assert client.get("/lead/report").text == first and len(calls) == 1  # served from the cache
    with session_scope(ws.db.engine) as session:  # a decision changes a label: a new report
        item = next(r for r in flagged_items(session=session, batch="b1") if r["adjudicated"] is None)
        set_adjudication(item["query_id"], item["doc_id"], 3, adjudicator="lee", session=session)
    client.get("/lead/report")
    assert len(calls) == 2
    with session_scope(ws.db.engine) as session:  # a consensus value changed in place: a new report too
        label = session.query(m.ConsensusLabel).order_by(m.ConsensusLabel.id).first()
        session.execute(update(m.ConsensusLabel).where(m.ConsensusLabel.id == label.id)
                        .values(value=(label.value or 0) + 1))
    client.get("/lead/report")
    client.get("/lead/report")
    assert len(calls) == 3


def test_a_401_page_links_to_a_sign_in_page_that_takes_the_link(ws):
    client = client_for(ws.db)
    refused = client.get("/lead")
    assert refused.status_code == 401
    links = re.findall(r'<a [^>]*href="([^"]+)"', refused.text.split("<main>", 1)[1])
    assert links == ["/login"]
    form = client.get("/login")
    assert form.status_code == 200 and 'name="token"' in form.text
    token = ws.token("ann")
    pasted = client.get("/login", params={"token": f"http://127.0.0.1:8000/login?token={token}"})
    assert pasted.status_code == 200 and "Sign in as ann" in visible(pasted.text)
