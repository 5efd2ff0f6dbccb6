"""The workspace in real Chromium (Python playwright driving Debian's /usr/bin/chromium) against a
``ndcg-labeling serve`` process started here on a free loopback port.

Skipped only when chromium is missing (``.ci/run`` installs it). Screenshots of the grading page and
of a lead page are written to the test's tmp folder; with ``NDCG_LABELING_SCREENSHOTS=DIR`` also to DIR
(that is how ``docs/img/grading-page.png`` was made).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import tasks as t
from tests.web.conftest import build_workspace, grade_for, graded_two_ways
from tests.web.pages import ARGS, CHROMIUM, sign_in

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (.ci/run installs it)")]


def screenshot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    extra = os.environ.get("NDCG_LABELING_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / name)
    assert path.stat().st_size > 10_000
    return path


def press(page, key: str) -> None:
    # The page's keys work once its deferred script has run: wait for "load" first, or a busy machine
    # can take the key press before grading.js listens (the press is then lost and nothing navigates).
    page.wait_for_load_state("load")
    with page.expect_navigation():
        page.keyboard.press(key)


def shown_item(page) -> str | None:
    return page.get_attribute("#item", "data-item-id") if page.query_selector("#item") else None


def test_grader_grades_ten_with_the_keyboard_skips_undoes_and_resumes(browser, serve, sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path, queries=8, docs=8, depth=4)
    items = ws.items("ann")
    total = len(items)
    assert total >= 13
    server = serve(sqlite_db)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    token = sign_in(page, server, ws, "ann")
    log = server.log_path.read_text()
    assert "GET /login?token=[redacted]" in log and token not in log  # the access log keeps no token
    with page.expect_navigation():
        page.click("text=Continue")
    for i in range(10):
        assert shown_item(page) == items[i]
        press(page, str(grade_for(items[i])))
    assert shown_item(page) == items[10]
    page.keyboard.press("s")
    page.keyboard.type("the page does not load")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert shown_item(page) == items[11]
    press(page, "1")
    assert shown_item(page) == items[12]
    assert page.inner_text("#notice") == "Saved: 1 — Somewhat relevant."
    press(page, "u")  # reopens items[11], the newest grade
    assert shown_item(page) == items[11]
    assert page.inner_text("#notice") == "Undone: your grade 1 — Somewhat relevant. The item is open again."
    page.reload()
    assert shown_item(page) == items[11]
    with session_scope(sqlite_db.engine) as session:
        resume = t.next_item("b1", grader="ann", session=session)
    assert resume is not None and resume.item_id == items[11]
    assert page.inner_text("#progress-text") == f"10/{total} items done, 1 skipped, {total - 11} open"
    assert sorted(ws.judgments()) == sorted(("ann", item, grade_for(item)) for item in items[:10])
    assert ws.statuses("ann")[10:12] == [(items[10], "skipped", "the page does not load"), (items[11], "open", None)]
    assert page.is_hidden("#guideline")
    page.keyboard.press("?")
    assert page.is_visible("#guideline")
    page.keyboard.press("?")
    screenshot(page, tmp_path, "grading-page.png")


@pytest.mark.parametrize("backend_texts", [{"query": '<script>window.pwned="query";alert(1)</script>',
                                            "title": '<img src=x onerror="window.pwned=\'title\';alert(2)">',
                                            "body": '<script>window.pwned="body"</script><b onmouseover=alert(3)>x</b>'}])
def test_script_in_query_title_or_body_is_inert(browser, serve, sqlite_db, tmp_path, backend_texts):
    ws = build_workspace(sqlite_db, tmp_path, texts=backend_texts)
    server = serve(sqlite_db)
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in(page, server, ws, "ann")
    page.goto(f"{server.base}/batches/b1/grade")
    page.hover("#body")
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert dialogs == []
    assert page.inner_text("#query") == backend_texts["query"]
    assert page.inner_text("#title") == backend_texts["title"]
    assert page.query_selector("#item script, #item img, #item b") is None
    # the HTML body is rendered in a sandboxed frame, where its script did not run either
    assert page.get_attribute("iframe#body", "sandbox") == ""
    frame = page.frame_locator("iframe#body")
    assert frame.locator("b").inner_text() == "x"
    assert frame.locator("script").count() == 1  # present, inert
    assert page.frames[1].evaluate("typeof window.pwned") == "undefined"


def test_lead_resolves_an_adjudication(browser, serve, sqlite_db, tmp_path):
    ws = graded_two_ways(sqlite_db, tmp_path)
    server = serve(sqlite_db)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, server, ws, "lee")
    page.click("text=Lead")
    page.click("text=adjudication")
    row = page.query_selector("#queue tbody tr")
    query_id, doc_id = row.get_attribute("data-query"), row.get_attribute("data-doc")
    assert "ann: " in row.inner_text() and "bob: " in row.inner_text()
    with page.expect_navigation():
        page.click("#start")  # the first open item, as its graders saw it
    assert (page.get_attribute("#item", "data-query"), page.get_attribute("#item", "data-doc")) == (query_id, doc_id)
    page.wait_for_load_state("load")
    page.keyboard.press("n")
    page.keyboard.type("both readings are fair; 2")
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.keyboard.press("2")
    assert page.inner_text("#done").startswith(f"Saved: query {query_id}, document {doc_id} now has grade 2 ")
    assert (page.get_attribute("#item", "data-query"), page.get_attribute("#item", "data-doc")) != (query_id, doc_id)
    page.goto(f"{server.base}/lead/adjudication?batch=b1")
    final = page.inner_text(f'#queue tr[data-query="{query_id}"][data-doc="{doc_id}"] .final')
    assert final == "2 by lee\n“both readings are fair; 2”"
    screenshot(page, tmp_path, "lead-adjudication.png")
    with sqlite_db.engine.connect() as conn:
        rows = conn.execute(select(m.Adjudication.grade, m.Adjudication.adjudicator, m.Adjudication.note)).all()
    assert [tuple(r) for r in rows] == [(2.0, "lee", "both readings are fair; 2")]
    # a grader signed in the same browser gets 403 on the lead page
    grader = browser.new_page()
    sign_in(grader, server, ws, "ann")
    assert grader.goto(f"{server.base}/lead/adjudication").status == 403


async def _grade_everything(browser, base: str, link: str) -> int:
    """One browser context (its own cookies: a person's browser): sign in from the link and grade with the
    keyboard until nothing is open."""
    context = await browser.new_context()
    page = await context.new_page()
    page.set_default_timeout(30_000)
    await page.goto(link)
    async with page.expect_navigation():
        await page.click("#sign-in")
    await page.goto(f"{base}/batches/b1/grade")
    graded = 0
    while await page.query_selector("#item"):
        item = await page.get_attribute("#item", "data-item-id")
        async with page.expect_navigation():
            await page.keyboard.press(str(grade_for(item)))
        graded += 1
    await context.close()
    return graded


async def _grade_all_at_once(base: str, links: list[str]) -> list[int]:
    """The links' people grade at the same time, each in a context of its own of one Chromium (one driver
    and one browser process: contexts share no cookies or storage, as four browsers would not)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            return list(await asyncio.gather(*(_grade_everything(browser, base, link) for link in links)))
        finally:
            await browser.close()


@pytest.mark.pg
def test_four_browsers_grade_one_batch_at_once_on_postgresql(serve, tmp_path):
    from tests.conftest import PG_URL, Database

    if not PG_URL:
        pytest.skip("NDCG_LABELING_TEST_PG_URL is not set")
    db = Database("postgresql", tmp_path, migrated=True)  # at head: the migrated template's copy
    try:
        ws = build_workspace(db, tmp_path, queries=6, docs=6, depth=4, graders=("g1", "g2", "g3"), overlap=2)
        server = serve(db)
        # g1 grades in two browsers at once: they race on the very same items
        links = [f"{server.base}/login?token={ws.token(g)}" for g in ("g1", "g1", "g2", "g3")]

        # in a thread of its own: a sync playwright of another test may hold this thread's event loop
        with ThreadPoolExecutor(1) as pool:
            counts = pool.submit(asyncio.run, _grade_all_at_once(server.base, links)).result()
        expected = {(g, item, grade_for(item)) for g in ("g1", "g2", "g3") for item in ws.items(g)}
        got = ws.judgments()
        assert len(got) == len(expected) >= 40
        assert set(got) == expected  # every grade exactly once, none lost
        assert {s for g in ("g1", "g2", "g3") for _, s, _ in ws.statuses(g)} == {"done"}
        assert counts[2] == len(ws.items("g2")) and counts[3] == len(ws.items("g3"))
        assert counts[0] + counts[1] >= len(ws.items("g1"))
    finally:
        db.drop()
