"""Loading an online event log from ``/lead/online`` (issue 45): the file goes through the use case behind
``POST /api/events`` (stored, then counted in the live figures), with the session's CSRF token as every
form; a bad row names the file and the row, in the page's words, and nothing is stored."""

from __future__ import annotations

import json
import re

from sqlalchemy import func, select

from ndcg_labeling.db.online_models import OnlineEvent
from tests.web.conftest import build_workspace
from tests.web.test_lead_admin import as_lead, visible

EVENTS = [{"request_id": f"r{i}", "query_id": "q000", "doc_id": f"d00{p}", "position": p + 1, "clicked": int(p == 0),
           "ts": 1_767_000_000 + i, "arm": ("control", "new")[i % 2]} for i in range(4) for p in range(3)]


def words(page: str) -> str:
    return " ".join(visible(page).split())


def stored(db) -> int:
    with db.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(OnlineEvent)).scalar_one()


def test_an_event_log_uploaded_on_the_page_is_stored_and_counted(db, tmp_path):
    ws = build_workspace(db, tmp_path)
    client, csrf = as_lead(ws)
    page = client.get("/lead/online").text
    assert "Load events from a log file" in words(page) and page.count('enctype="multipart/form-data"') == 1
    lines = "\n".join(json.dumps(e) for e in EVENTS).encode()
    refused = client.post("/lead/online/upload", files={"file": ("log.jsonl", lines)}, data={"csrf": "wrong"})
    assert refused.status_code == 403 and stored(db) == 0
    done = client.post("/lead/online/upload", files={"file": ("log.jsonl", lines)}, data={"csrf": csrf})
    assert done.status_code == 303, done.text
    assert stored(db) == len(EVENTS)
    assert "log.jsonl: 12 events of 4 requests stored." in words(client.get(done.headers["location"]).text)
    arms = client.get("/api/online/arms?window=all").json()  # the live figures count them
    assert arms["n_events"] == len(EVENTS) and {a["arm"]: a["n"] for a in arms["arms"]} == {"control": 2, "new": 2}


def test_a_bad_row_names_the_file_and_row_and_stores_nothing(db, tmp_path):
    ws = build_workspace(db, tmp_path)
    client, csrf = as_lead(ws)
    rows = [EVENTS[0], dict(EVENTS[1], position=-3)]
    bad = client.post("/lead/online/upload", files={"file": ("day1.json", json.dumps(rows).encode())},
                      data={"csrf": csrf})
    assert bad.status_code == 400
    shown = words(bad.text)
    assert re.search(r"day1\.json: row 2: position .*; nothing was stored", shown), shown
    assert stored(db) == 0 and "Online experiment: live figures" in shown
