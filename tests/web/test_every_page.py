"""Every page of :data:`tests.web.pages.PAGES` in real Chromium, as a person sees it, at 1280 px and at
390 px (a phone): the visible text holds no Python repr, no ``None``, no raw Markdown; the numbers
are the CLI's for the same database; nothing overflows sideways; every form control has a label;
axe-core finds no serious or critical violation.

axe-core is npm's (``make venv`` installs it into ``.venv/node``); the test is skipped only where
chromium or npm is missing, and fails where npm exists but axe-core was not installed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.web.pages import CHROMIUM, PAGES, WIDTHS, Server, build_world, open_page, page_url

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (.ci/run installs it)")]

REPR = re.compile(r"<built-in|<bound method|object at 0x|\bNone\b|Traceback|\{\{|\{%|\('|\(\"")
#: a command-line option in a page's words ("use --replace"): a page says what to click or choose instead
CLI_OPTION = re.compile(r"(?<![\w-])--[a-z]")
MARKDOWN = re.compile(r"\*\*|^#{1,6} |\]\(|`", re.MULTILINE)
UNLABELLED = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
  .filter(el => {
    const named = (el.getAttribute('aria-label') || '').trim() || (el.labels && el.labels.length)
      || (el.tagName === 'BUTTON' && el.innerText.trim()) || (el.getAttribute('title') || '').trim();
    return !named;
  }).map(el => el.outerHTML.slice(0, 120))"""
# words of table cells drawn over two lines ("grade rs", "ope n"): a Range over a word has one client
# rectangle per line it is drawn on (long ids and URLs may wrap: only words up to 20 characters count)
BROKEN_WORDS = """() => {
  const out = [];
  for (const cell of document.querySelectorAll('table th, table td')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/[^\\s-]+/g)) {  // a break after a hyphen is no break inside
        if (m[0].length > 20) continue;
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (lines.size > 1) out.push(m[0]);
      }
    }
  }
  return out;
}"""
# elements whose right edge lies past the viewport's, other than inside a box that scrolls sideways
# (overflow-x auto or scroll) and itself fits: what a person cannot see without the page scrolling
OUTSIDE = """() => {
  const width = document.documentElement.clientWidth, out = [];
  const scrolls = el => { for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const s = getComputedStyle(p);
      if ((s.overflowX === 'auto' || s.overflowX === 'scroll') && p.getBoundingClientRect().right <= width + 1) return true;
    } return false; };
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= width + 1 || scrolls(el)) continue;
    const s = getComputedStyle(el);
    if (s.visibility === 'hidden' || s.clip === 'rect(0px, 0px, 0px, 0px)') continue;
    out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + Math.round(r.right) + ' px');
  }
  return out.slice(0, 5);
}"""
AXE_RUN = """async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => v.id + ': ' + v.help + ' | ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
}"""


def cli_json(db_url: str, *args: str) -> object:
    """The CLI's JSON for the same database, run in this process (the command line's own code, without a
    new interpreter and its imports for each of the walk's seven look-ups)."""
    from typer.testing import CliRunner

    from ndcg_labeling.cli import app

    done = CliRunner().invoke(app, [*args, "--format", "json", "--db", db_url], catch_exceptions=False)
    assert done.exit_code == 0, done.stderr
    return json.loads(done.stdout)


def row_texts(page, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"{selector} tbody tr",
                                     "rows => rows.map(r => [...r.cells].map(c => c.innerText.trim()))")


def check_numbers(page, spec, db_url: str) -> None:
    """The figures a page shows against the CLI's for the same database."""
    text = page.inner_text("main") if page.query_selector("main") else page.inner_text("body")
    if spec.name == "lead-batches":
        for b in cli_json(db_url, "tasks", "list"):
            row = next(r for r in row_texts(page, "table.grid") if r[0] == b["batch"])
            assert row[1:5] == [b["scale"], str(b["items"]), str(b["graders"]), str(b["overlap"])]
            assert f"{b['done']}/{b['total']} grades given" in row[5]
            status = cli_json(db_url, "tasks", "status", b["batch"])  # progress in items, as tasks status counts
            assert f"{status['complete_items']} of {b['items']} items complete" in row[5]
    elif spec.name in ("lead-batch", "my-batches", "grading-page"):
        status = cli_json(db_url, "tasks", "status", "b1")
        for g in status["graders"]:
            cells = [g["grader"], str(g["done"]), str(g["skipped"]), str(g["total"] - g["done"] - g["skipped"])]
            if spec.name == "lead-batch":
                row = next(r for r in row_texts(page, "#graders") if r[0] == g["grader"])
                assert [row[0], *row[2:5]] == cells and row[5] == str(g["total"])
            elif g["grader"] == "ann":
                want = f"{g['done']}/{g['total']} items done, {g['skipped']} skipped, {cells[3]} open"
                if spec.name == "grading-page":
                    assert page.inner_text("#progress-text") == want
                else:
                    assert row_texts(page, "table.grid")[0][3:6] == cells[1:]
    elif spec.name == "lead-agreement":
        for r in cli_json(db_url, "agreement", "--batch", "b1", "--by", "query-type"):
            row = next(x for x in row_texts(page, "#by-query-type") if x[0] == r["scope"])
            assert row[1] == ("—" if r["alpha"] is None else f"{r['alpha']:.3f}")
            assert row[3:6] == [str(r["n_items"]), str(r["n_graders"]), str(r["n_grades"])]
    elif spec.name == "lead-adjudication":
        flagged = cli_json(db_url, "adjudicate", "list", "--batch", "b1")
        rows = row_texts(page, "#queue")
        assert len(rows) == len(flagged) > 0
        done = [r for r in flagged if r["adjudicated"] is not None]
        assert f"{len(flagged)} flagged: {len(flagged) - len(done)} open, {len(done)} decided." in text
        for want, got in zip(flagged, rows, strict=True):
            # people's grades and the model and behavior graders' apart; together, every grade the CLI lists
            shown = [x for cell in got[2:4] if cell != "—" for x in cell.split(", ")]
            assert sorted(re.sub(r" \((model|behavior)\):", ":", x) for x in shown) == want["grades"].split(", ")
            assert "(model)" not in got[2] and all("(" in x for x in got[3].split(", ") if got[3] != "—")
            assert got[6].startswith("open" if want["adjudicated"] is None
                                     else f"{want['adjudicated']:g} by {want['adjudicator']}")
    elif spec.name == "lead-report":
        report = cli_json(db_url, "report")
        for item in report["headline"]:
            assert item["text"] in page.inner_text("body")


def page_problems(page, spec, axe_source: str, shots: Path | None) -> list[str]:
    """What is wrong with a page, at each width (empty: nothing); screenshots go to ``shots`` (None: none
    taken, as nothing looks at them)."""
    problems = []
    text = page.inner_text("body")
    for name, pattern in (("Python text", REPR), ("a command-line option", CLI_OPTION)) + (
            (("raw Markdown", MARKDOWN),) if spec.markdown_free else ()):
        if found := pattern.search(text):
            problems.append(f"{spec.name}: {name}: ...{text[max(0, found.start() - 60):found.end() + 40]!r}")
    if unlabelled := page.evaluate(UNLABELLED):
        problems.append(f"{spec.name}: controls without a label: {unlabelled}")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(50)
        if shots is not None:
            page.screenshot(path=str(shots / f"{spec.name}-{width}.png"), full_page=True)
        where = f"{spec.name} at {width} px"
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        if overflow > 0:
            problems.append(f"{where} is {overflow} px too wide")
        if outside := page.evaluate(OUTSIDE):
            problems.append(f"{where}: past the right edge: {outside}")
        if broken := page.evaluate(BROKEN_WORDS):
            problems.append(f"{where}: words broken inside: {broken[:5]}")
        if not page.evaluate("typeof axe !== 'undefined'"):
            page.add_script_tag(content=axe_source)
        if violations := page.evaluate(AXE_RUN):
            problems.append(f"{where}: axe: {violations}")
    return problems


@pytest.mark.parametrize("world", sorted({p.world for p in PAGES}))
def test_every_page_reads_right_fits_a_phone_and_passes_axe(browser, axe_source, world, tmp_path):
    built = build_world(world, tmp_path / "db")
    server = Server(built.db.url, tmp_path / "serve.log")
    # NDCG_SHOTS=folder keeps a screenshot of every page at each width; without it none is taken (no check
    # reads them: 40 full-page screenshots thrown away were a quarter of the walk's browser time)
    shots = Path(os.environ["NDCG_SHOTS"]) if os.environ.get("NDCG_SHOTS") else None
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    # one signed-in page per role, reused from page to page (signing in again for each page was two more
    # navigations a page, a third of the walk); every page is still loaded afresh, at 1280 px, by goto
    pages: dict[str, object] = {}
    try:
        for spec in (p for p in PAGES if p.world == world):
            if spec.role not in pages:
                pages[spec.role] = open_page(browser, server, built, spec.role)
            page = pages[spec.role]
            page.set_viewport_size({"width": WIDTHS[0], "height": 900})
            response = page.goto(page_url(server, built, spec))
            assert response is not None and response.status == spec.status, spec.name
            page.wait_for_load_state("load")
            for key in spec.keys:
                page.keyboard.press(key)
            check_numbers(page, spec, built.db.url)
            problems += page_problems(page, spec, axe_source, shots)
    finally:
        for page in pages.values():
            page.context.close()
        server.stop()
    assert problems == [], "\n".join(problems)
