"""Progress in items, not assignments (issue 45): the batches page and a batch's page count the items
with all their grades as ``tasks status`` counts them; a grader's page says items; and the task file of a
grader with nothing open is a page saying so, with what to do next, not a file holding a header row."""

from __future__ import annotations

import json

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import tasks as t
from tests.conftest import invoke
from tests.web.conftest import build_workspace, graded_two_ways
from tests.web.test_lead_admin import as_lead, visible


def words(page: str) -> str:
    return " ".join(visible(page).split())


def test_batch_pages_count_items_as_tasks_status_does(db, tmp_path, runner):
    ws = build_workspace(db, tmp_path, overlap=2)
    first = ws.items("ann")[:3]
    bobs = [i for i in ws.items("bob") if i in first][:2]
    with session_scope(db.engine) as session:  # three items graded by ann; up to two of them by bob too
        for item in first:
            t.save_grade("b1", item, 1, grader="ann", session=session)
        for item in bobs:
            t.save_grade("b1", item, 2, grader="bob", session=session)
    done_cli = invoke(runner, db, "tasks", "status", "b1", "--format", "json")
    assert done_cli.exit_code == 0, done_cli.output
    status = json.loads(done_cli.stdout)
    assert 0 < status["complete_items"] < status["items"]
    client, _ = as_lead(ws)
    listed = words(client.get("/lead").text)
    assert f"{status['complete_items']} of {status['items']} items complete" in listed
    done = sum(g["done"] for g in status["graders"])
    assert f"{done}/{sum(g['total'] for g in status['graders'])} grades given" in listed
    detail = words(client.get("/lead/batches/b1").text)
    assert (f"{status['complete_items']} of {status['items']} items have all 2 grades; "
            f"{status['open_items']} still wait for a grade.") in detail


def test_a_finished_graders_task_file_is_a_page_with_what_comes_next(db, tmp_path):
    ws = graded_two_ways(db, tmp_path)  # ann and bob graded every item of theirs
    client, _ = as_lead(ws)
    page = client.get("/lead/downloads/tasks?batch=b1&grader=ann&fmt=csv")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "attachment" not in page.headers.get("content-disposition", "")
    shown = words(page.text)
    assert "No task file: ann has nothing open in batch b1" in shown
    assert "Every item of ann in batch b1 is graded or skipped" in shown
    for link in ("/lead/batches/b1", "/lead/agreement?batch=b1", "/lead/consensus", "/lead/adjudication?batch=b1"):
        assert f'href="{link}"' in page.text
    assert "<title>Downloads · lead · ndcg-labeling</title>" in page.text and "Sign out" in shown
