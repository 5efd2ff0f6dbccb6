"""The lead's admin pages in real Chromium against ``ndcg-labeling serve``: each page at 1280 px and at
390 px (a phone) without horizontal overflow, every control labelled, no repr or None in the visible
text, no serious or critical axe-core violation (when axe-core is installed under .venv/node); and a
lead's afternoon without a terminal: upload (a bad file first), preview and create a batch, make a
sign-in link, run consensus and open the queue.

Screenshots go to the test's tmp folder; with ``NDCG_LABELING_SCREENSHOTS=DIR`` also to DIR.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from ndcg_labeling.db import models as m
from tests.web.conftest import graded_two_ways
from tests.web.test_browser import ARGS, CHROMIUM, screenshot, serve, sign_in  # noqa: F401 (serve: a fixture)

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / ".venv" / "node" / "node_modules" / "axe-core" / "axe.min.js"
PAGES = {"create-batch": "/lead/create-batch", "data": "/lead/data", "graders": "/lead/graders",
         "activity": "/lead/activity", "consensus": "/lead/consensus", "downloads": "/lead/downloads"}
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (.ci/run installs it)")]

UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea')]
  .filter(el => el.type !== 'hidden' && !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
  .map(el => el.outerHTML)"""
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
IMPORTING = """() => { const s = document.querySelector('#upload-queries .importing');
  return s.hidden ? null : {text: s.innerText.trim(), disabled: document.querySelector('#upload-queries button').disabled}; }"""
AXE_RUN = """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => v.id + ': ' + v.nodes[0].html)"""


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def check_page(page, tmp_path: Path, name: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_load_state("load")
    text = page.inner_text("body")
    for bad in ("None", "<built-in", "object at 0x", "{{"):
        assert bad not in text, (name, bad)
    assert page.evaluate(UNLABELLED) == [], name
    assert page.evaluate(OVERFLOW) <= 0, (name, width)
    if AXE.exists():
        page.add_script_tag(path=str(AXE))
        assert page.evaluate(AXE_RUN) == [], (name, width)
    screenshot(page, tmp_path, f"lead-{name}-{width}.png")


def counts(db) -> dict[str, int]:
    return db.counts()


def test_every_admin_page_at_desktop_and_phone_width(browser, serve, sqlite_db, tmp_path):  # noqa: F811
    ws = graded_two_ways(sqlite_db, tmp_path)
    server = serve(sqlite_db)
    page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)  # axe is injected inline
    sign_in(page, server, ws, "lee")
    for name, path in PAGES.items():
        page.goto(f"{server.base}{path}")
        for width in (1280, 390):
            check_page(page, tmp_path, name, width)
    page.close()


def test_a_lead_afternoon_without_a_terminal(browser, serve, sqlite_db, tmp_path):  # noqa: F811
    ws = graded_two_ways(sqlite_db, tmp_path)
    server = serve(sqlite_db)
    page = browser.new_page(viewport={"width": 390, "height": 900})
    sign_in(page, server, ws, "lee")
    page.goto(f"{server.base}/lead")
    page.click("text=Upload")

    bad = tmp_path / "queries.csv"
    bad.write_text("query_id,text,query_type\nq9,a,x\nq9,b,y\n")
    before = counts(sqlite_db)
    page.set_input_files("#queries-file", str(bad))
    with page.expect_navigation():
        page.click("#upload-queries button")
    assert page.inner_text("#error") == ("Error: queries.csv:3: duplicate query_id (query_id='q9'), first seen "
                                         "at line 2")
    assert counts(sqlite_db) == before

    good = tmp_path / "more-queries.csv"
    good.write_text("query_id,text,query_type\n" + "".join(f"n{i},question {i},navigational\n" for i in range(2000)))
    page.set_input_files("#queries-file", str(good))
    # First a submit the test cancels (the page's own listener runs before the test's): the state it shows
    page.evaluate("() => document.querySelector('#upload-queries form').addEventListener('submit', e => e.preventDefault())")
    page.click("#upload-queries button")
    size_kb = good.stat().st_size / 1024
    assert page.evaluate(IMPORTING) == {"text": f"Importing more-queries.csv ({size_kb:.1f} KB)…", "disabled": True}
    page.goto(f"{server.base}/lead/data")
    page.set_input_files("#queries-file", str(good))
    with page.expect_navigation():
        page.click("#upload-queries button")
    assert page.inner_text("#done") == "queries from more-queries.csv: 2000 new, 0 unchanged"

    page.click("text=New batch")
    page.fill("#batch", "week2")
    page.fill("#depth", "5")
    page.fill("#overlap", "1")
    page.check("input[name=graders][value=ann]")
    page.check("input[name=graders][value=bob]")
    with page.expect_navigation():
        page.click("#preview-button")
    preview = page.inner_text("#preview")
    with sqlite_db.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(m.GradingBatch)).scalar_one() == 1
    items = int(preview.split("items to grade")[0].split()[-1])
    with page.expect_navigation():
        page.click("#create-button")
    assert page.inner_text("#done").startswith(f"batch week2: {items} items")
    screenshot(page, tmp_path, "lead-create-done-390.png")

    page.click("text=Graders")
    page.select_option("#token-grader", "ann")
    with page.expect_navigation():
        page.click("#token-form button")
    link = page.input_value("#issued-url")
    assert link.startswith(f"{server.base}/login?token=")
    screenshot(page, tmp_path, "lead-graders-link-390.png")

    page.click("text=Consensus")
    page.select_option("#method", "median")
    with page.expect_navigation():
        page.click("#run-consensus")
    flagged = page.inner_text("#adjudicate-link")
    assert flagged.startswith("Open the adjudication queue (") and not flagged.startswith("Open the adjudication queue (0")
    with page.expect_navigation():
        page.click("#adjudicate-link")
    assert page.url == f"{server.base}/lead/adjudication"
    assert page.query_selector("#queue tbody tr") is not None

    grader = browser.new_page()
    sign_in(grader, server, ws, "ann")
    for path in PAGES.values():
        assert grader.goto(f"{server.base}{path}").status == 403, path
