"""The adjudication queue page (issue 45): read a page at a time (never the whole queue in one page), and
people's grades shown apart from the model and behavior graders' grades, each as ``adjudicate list``
lists them."""

from __future__ import annotations

import json
import re

from ndcg_labeling.labels import adjudication
from tests.conftest import invoke
from tests.web.conftest import graded_two_ways
from tests.web.pages import add_judge
from tests.web.test_lead_admin import as_lead, visible


def words(page: str) -> str:
    return " ".join(visible(page).split())


def queue_rows(page: str) -> list[list[str]]:
    body = page.split('id="queue"', 1)[1].split("</table>", 1)[0]
    return [[" ".join(visible(c).split()) for c in re.findall(r"(?s)<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"(?s)<tr data-query.*?</tr>", body)]


def test_queue_is_paged_and_shows_people_apart_from_the_judge(db, tmp_path, runner, monkeypatch):
    ws = graded_two_ways(db, tmp_path)
    add_judge(db)
    flagged = json.loads(invoke(runner, db, "adjudicate", "list", "--batch", "b1", "--format", "json").stdout)
    assert len(flagged) > 20
    monkeypatch.setattr(adjudication, "QUEUE_PAGE_SIZE", 10)
    client, _ = as_lead(ws)
    seen = []
    pages = -(-len(flagged) // 10)
    for number in range(1, pages + 1):
        page = client.get(f"/lead/adjudication?batch=b1&page={number}").text
        shown = words(page)
        assert f"{len(flagged)} flagged:" in shown and f"page {number} of {pages}" in shown
        last = min(number * 10, len(flagged))
        assert f"Showing items {(number - 1) * 10 + 1} to {last} of {len(flagged)}." in shown
        assert ("Previous 10" in shown) == (number > 1) and ("Next 10" in shown) == (number < pages)
        rows = queue_rows(page)
        assert len(rows) == last - (number - 1) * 10
        seen += rows
    assert len(seen) == len(flagged)
    for want, got in zip(flagged, seen, strict=True):
        people, others = got[2], got[3]
        assert "gpt-judge" not in people and others.startswith("gpt-judge (model): ")
        named = [x for x in people.split(", ")] + [others.replace(" (model)", "")]
        assert sorted(named) == sorted(want["grades"].split(", "))
    # a page past the end shows the last page
    assert f"page {pages} of {pages}" in words(client.get("/lead/adjudication?batch=b1&page=999").text)


def test_the_item_page_lists_people_first_and_names_the_judge_as_a_model(db, tmp_path, runner):
    ws = graded_two_ways(db, tmp_path)
    add_judge(db)
    first = json.loads(invoke(runner, db, "adjudicate", "list", "--batch", "b1", "--format", "json").stdout)[0]
    client, _ = as_lead(ws)
    page = client.get(f"/lead/adjudication/item?query_id={first['query_id']}&doc_id={first['doc_id']}&batch=b1").text
    table = page.split('id="judgments"', 1)[1].split("</table>", 1)[0]
    graders = [words(c).split(" ")[0] for c in re.findall(r"(?s)<tr[^>]*><td>(.*?)</td>", table)]
    assert graders == ["ann", "bob", "gpt-judge"]
    assert "gpt-judge (model, not a person)" in words(table)
