"""The lead's admin pages in real Chromium against ``ndcg-labeling serve``: each page at 1280 px and at
390 px (a phone) without horizontal overflow, every control labelled, no repr or None in the visible
text, no serious or critical axe-core violation (axe-core from .venv/node, as the page walk); and a
lead's afternoon without a terminal: upload (a bad file first), preview and create a batch, make a
sign-in link, run consensus and open the queue.

Screenshots go to the test's tmp folder; with ``NDCG_LABELING_SCREENSHOTS=DIR`` also to DIR.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import tasks as t
from tests.web.conftest import Workspace, graded_two_ways
from tests.web.pages import CHROMIUM, sign_in

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
# words of table cells split over two lines ("grade r", "skippe d"): a word whose range has two boxes
BROKEN_WORDS = """() => { const out = [];
  for (const cell of document.querySelectorAll('th, td')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/\\S+/g)) {
        const r = document.createRange(); r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        const lines = new Set([...r.getClientRects()].map(b => Math.round(b.top)));
        if (lines.size > 1) out.push(m[0]);
      } } }
  return out; }"""
AXE_RUN = """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => v.id + ': ' + v.nodes[0].html)"""


def screenshot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    extra = os.environ.get("NDCG_LABELING_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / name)
    assert path.stat().st_size > 10_000
    return path


def check_page(page, tmp_path: Path, name: str, width: int, axe_source: str) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_load_state("load")
    text = page.inner_text("body")
    for bad in ("None", "<built-in", "object at 0x", "{{"):
        assert bad not in text, (name, bad)
    assert page.evaluate(UNLABELLED) == [], name
    assert page.evaluate(OVERFLOW) <= 0, (name, width)
    assert page.evaluate(BROKEN_WORDS) == [], (name, width)
    page.add_script_tag(content=axe_source)
    assert page.evaluate(AXE_RUN) == [], (name, width)
    screenshot(page, tmp_path, f"lead-{name}-{width}.png")


def counts(db) -> dict[str, int]:
    return db.counts()


def quality_workspace(db, tmp_path: Path) -> Workspace:
    """The demo's simulated graders (one random, one lenient) on a batch with gold items, a consensus run,
    and a few grades saved one by one in a second batch (so that the pace has intervals)."""
    from datetime import timedelta

    from sqlalchemy import update

    from ndcg_labeling.demo.quality import load_quality_data, play_graders
    from ndcg_labeling.labels import importing
    from ndcg_labeling.labels.consensus import run_consensus

    graders = ["ana", "ben", "chloe", "dev", "emma"]
    with session_scope(db.engine) as session:
        load_quality_data(session=session)
        importing.add_graders(["lee"], session=session, role="lead")
        t.create_batch("week1", scale="0-3", depth=3, overlap=2, graders=graders, session=session, seed=4, gold_rate=0.2)
        play_graders("week1", session=session, out_dir=tmp_path)
        run_consensus(session=session, batch="week1", method="median")
        t.create_batch("week2", scale="0-3", depth=10, overlap=2, graders=graders, session=session, seed=5)
    ws = Workspace(db, "week2")
    start = m.utcnow()
    with session_scope(db.engine) as session:
        for grader in graders:
            for i in range(6):
                item = t.next_item("week2", grader=grader, session=session)
                assert item is not None
                t.save_grade("week2", item.item_id, i % 4, grader=grader, session=session)
            item = t.next_item("week2", grader=grader, session=session)
            assert item is not None
            t.skip_item("week2", item.item_id, grader=grader, session=session, reason="page did not load")
        rows = session.execute(select(m.Judgment.id).where(m.Judgment.batch == "week2").order_by(m.Judgment.id)).scalars()
        for n, row in enumerate(rows):
            session.execute(update(m.Judgment).where(m.Judgment.id == row)
                            .values(created_at=start + timedelta(seconds=9 * n + (n % 6) * 3)))
    return ws


def test_every_admin_page_at_desktop_and_phone_width(browser, axe_source, serve, sqlite_db, tmp_path):
    ws = quality_workspace(sqlite_db, tmp_path)
    server = serve(sqlite_db)
    page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)  # axe is injected inline
    sign_in(page, server, ws, "lee")
    for name, path in PAGES.items():
        page.goto(f"{server.base}{path}")
        for width in (1280, 390):
            check_page(page, tmp_path, name, width, axe_source)
    page.goto(f"{server.base}/lead/create-batch")
    page.fill("#batch", "week3")
    for grader in ("ana", "ben", "chloe"):
        page.check(f"input[name=graders][value={grader}]")
    page.fill("#gold_rate", "0.1")
    with page.expect_navigation():
        page.click("#preview-button")
    for width in (1280, 390):
        check_page(page, tmp_path, "create-batch-preview", width, axe_source)
    page.close()


def test_a_lead_afternoon_without_a_terminal(browser, serve, sqlite_db, tmp_path):
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
    page.click("#upload-queries button")
    page.wait_for_selector("#error")
    assert page.url == f"{server.base}/lead/data"
    assert page.inner_text("#error") == ("Error: queries.csv:3: duplicate query_id (query_id='q9'), first seen "
                                         "at line 2")
    assert counts(sqlite_db) == before

    good = tmp_path / "more-queries.csv"
    good.write_text("query_id,text,query_type\n" + "".join(f"n{i},question {i},navigational\n" for i in range(2000)))
    held = []
    page.route("**/lead/data/queries", lambda route: held.append(route))  # the answer waits
    page.set_input_files("#queries-file", str(good))
    page.click("#upload-queries button")
    while not held:
        page.wait_for_timeout(50)
    expected = f"Importing more-queries.csv ({good.stat().st_size / 1024:.1f} KB)…"
    page.wait_for_function("(text) => document.querySelector('#upload-queries .importing').innerText.trim() === text",
                           arg=expected, timeout=10_000)  # once the file is sent, while the server imports
    assert page.evaluate(IMPORTING) == {"text": expected, "disabled": True}
    with page.expect_navigation():
        held[0].continue_()
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
