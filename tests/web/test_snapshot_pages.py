"""The lead's snapshot pages: configurations and snapshots listed, a snapshot taken from the page (the same
use case as ``snapshot take``: stored all or nothing, an engine's error shown as its one line), the diff of
two snapshots in words; graders get 403."""

from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy import text

from tests.conftest import invoke
from tests.web.conftest import build_workspace
from tests.web.test_lead_admin import as_lead, assert_clean, client_for, sign_in, visible

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "snapshots"))
from fake_engines import TEMPLATES, FakeEngine, serving  # noqa: E402


def test_configurations_snapshots_taking_and_diff_on_the_pages(sqlite_db, tmp_path, runner):
    ws = build_workspace(sqlite_db, tmp_path)
    client, csrf = as_lead(ws)
    empty = client.get("/lead/snapshots")
    assert empty.status_code == 200 and "No search configuration yet" in visible(empty.text)
    template = tmp_path / "es.json"
    template.write_text(TEMPLATES["elasticsearch"])
    first = [("D01", 3.0), ("D02", 2.0)]
    engine = FakeEngine("elasticsearch", search=lambda q, k: first[:k])
    with serving(engine):
        assert invoke(runner, sqlite_db, "snapshot", "config", "add", "prod", "--kind", "elasticsearch", "--url",
                      engine.url, "--index", "docs", "--template", str(template)).exit_code == 0
        page = visible(client.get("/lead/snapshots").text)
        assert "prod" in page and "hits.hits[]._id" in page and "Take a snapshot of prod" in page
        done = client.post("/lead/snapshots/take", data={"config": "prod", "depth": "2", "csrf": csrf})
        assert done.status_code == 303, done.text
        first_page = visible(client.get(done.headers["location"]).text)
        assert "snapshot prod@" in first_page and "12 results for 6 queries" in first_page
        engine.search = lambda q, k: [("D03", 5.0), ("D01", 1.0)][:k]
        assert client.post("/lead/snapshots/take", data={"config": "prod", "depth": "2", "csrf": csrf}).status_code == 303
        engine.script = ["404"]
        refused = client.post("/lead/snapshots/take", data={"config": "prod", "depth": "2", "csrf": csrf})
    assert refused.status_code >= 400 and "index_not_found_exception" in visible(refused.text)
    assert_clean(refused.text)
    with sqlite_db.engine.connect() as conn:
        names = conn.execute(text("SELECT s.name FROM systems s JOIN search_snapshots n ON n.system_id = s.id "
                                  "ORDER BY n.id")).scalars().all()
    assert len(names) == 2  # the refused take stored nothing
    listing = client.get("/lead/snapshots")
    assert all(n in visible(listing.text) for n in names) and "Compare" in visible(listing.text)
    assert_clean(listing.text)
    diff = client.get("/lead/snapshots/diff", params={"a": names[0], "b": names[1], "k": "2"})
    shown = visible(diff.text)
    assert diff.status_code == 200 and "6 queries changed in the top 2" in shown
    assert "D03" in shown and "D02" in shown and "D01 1->2" in shown
    assert_clean(diff.text)
    grader = client_for(sqlite_db)
    sign_in(grader, ws.token("ann"))
    assert grader.get("/lead/snapshots").status_code == 403
    assert grader.post("/lead/snapshots/take", data={"config": "prod"}).status_code == 403
