"""Every page of the workspace as a person reaches it, for the browser walk (``test_every_page.py``) and
for ``make screenshots`` (``python -m tests.web.pages docs/img``).

:data:`PAGES` is the list to extend: a new page is one :class:`Page` line (its path may name
``{query_id}``, ``{doc_id}`` and ``{token}``, filled from the world it is shown in). A world is a
database built here: ``graded`` (batch b1 graded by ann and bob on 0-3 with overlap 2, consensus of
b1, one skip and one adjudication with a note; ann's last item open again; an LLM judge, gpt-judge,
run over b1 and calibrated), ``fresh`` (batch b1, nothing
graded: the live report has nothing to show yet; every document body is HTML).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
#: where ``make venv`` puts axe-core (``npm install --prefix .venv/node axe-core@4``)
AXE = ROOT / ".venv" / "node" / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = (1280, 390)
MAX_SHOT_HEIGHT = 1400  # docs/img keeps the top of a long page (the report, a long queue)
HTML_BODY = ("<h3>Numbers of questions</h3><p>Every <b>question</b> in the survey has a <i>number</i>; "
             "this page lists them.</p><ul><li>one</li><li>two</li></ul>"
             "<script>document.title='ran'</script><img src='https://example.org/x.png' alt='a chart'>")


@dataclass(frozen=True)
class Page:
    """A page: its path, who opens it (``grader`` ann, ``lead`` lee, ``anonymous``), the world it is shown
    in, the name of its screenshot in docs/img, and keys pressed before it is looked at."""

    path: str
    role: str
    name: str
    world: str = "graded"
    keys: str = ""  # keys pressed once the page has loaded (e.g. "?" opens the guideline panel)
    markdown_free: bool = True  # False: the page is a renderer's document with text of other areas in it
    status: int = 200  # the HTTP status the page is served with (an error page is a page too)


PAGES: list[Page] = [
    Page("/login?token={token}", "anonymous", "sign-in"),
    Page("/", "grader", "my-batches"),
    Page("/batches/b1/grade", "grader", "grading-page", keys="?"),
    Page("/batches/b1/grade", "grader", "grading-page-html", world="fresh"),
    Page("/lead", "lead", "lead-batches"),
    Page("/lead/batches/b1", "lead", "lead-batch"),
    Page("/lead/agreement?batch=b1", "lead", "lead-agreement"),
    Page("/lead/adjudication?batch=b1", "lead", "lead-adjudication"),
    Page("/lead/adjudication/item?query_id={query_id}&doc_id={doc_id}&batch=b1", "lead", "lead-adjudicate-item"),
    Page("/lead/report", "lead", "lead-report"),
    Page("/lead/report?baseline=denseomega&metric=mrr@10", "lead", "lead-report-chosen"),
    Page("/lead/online", "lead", "lead-online"),
    Page("/lead/create-batch", "lead", "lead-new-batch"),
    Page("/lead/data", "lead", "lead-upload"),
    Page("/lead/graders", "lead", "lead-graders"),
    Page("/lead/activity", "lead", "lead-activity"),
    Page("/lead/consensus", "lead", "lead-consensus"),
    Page("/lead/downloads", "lead", "lead-downloads"),
    Page("/lead/judges", "lead", "lead-judges"),
    Page("/lead/judges", "lead", "lead-judges-none", world="fresh"),
    Page("/lead/snapshots", "lead", "lead-snapshots"),
    Page("/lead", "anonymous", "not-signed-in", status=401),
    Page("/login", "anonymous", "sign-in-form"),
    Page("/lead/report", "lead", "lead-report-missing", world="fresh"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``python -m ndcg_labeling serve`` on a free port of 127.0.0.1 (stop it with :meth:`stop`)."""

    def __init__(self, db_url: str, log: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self.log = log.open("w")
        self.proc = subprocess.Popen([sys.executable, "-m", "ndcg_labeling", "serve", "--host", "127.0.0.1",
                                      "--port", str(self.port), "--db", db_url], cwd=ROOT,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited with {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                httpx.get(f"{self.base}/static/style.css", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("serve did not start within 60 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@dataclass
class World:
    """A database with a workspace in it, and the values the page paths name."""

    db: object
    ws: object
    values: dict[str, str]


def build_world(kind: str, tmp_path: Path) -> World:
    """The ``graded`` or ``fresh`` database (SQLite, in ``tmp_path``)."""
    from ndcg_labeling.db.session import session_scope
    from ndcg_labeling.labels import tasks as t
    from ndcg_labeling.labels.consensus import flagged_items, set_adjudication
    from tests.conftest import Database
    from tests.web.conftest import build_workspace, graded_two_ways

    tmp_path.mkdir(parents=True, exist_ok=True)
    db = Database("sqlite", tmp_path, migrated=True)
    if kind == "fresh":
        return World(db, build_workspace(db, tmp_path, texts={"body": HTML_BODY}), {"query_id": "q000", "doc_id": "d000"})
    ws = graded_two_ways(db, tmp_path)
    *_, skipped, last = ws.items("ann")
    with session_scope(db.engine) as session:
        flagged = flagged_items(session=session, batch="b1")
        first, second = flagged[0], flagged[1]
        set_adjudication(second["query_id"], second["doc_id"], 2, adjudicator="lee", session=session,
                         note="the page answers half of the question")
        # ann skips an item she had graded (a skip with a reason on the pages) and reopens her last one
        t.skip_item("b1", skipped, grader="ann", session=session, reason="the page did not load")
        t.undo_item("b1", last, grader="ann", session=session)
    add_judge(db)
    return World(db, ws, {"query_id": first["query_id"], "doc_id": first["doc_id"]})


def add_judge(db) -> None:  # noqa: ANN001
    """An LLM judge, ``gpt-judge``, runs over b1 (a local fake endpoint, priced) and is calibrated per
    query type against people: the judges page's runs, costs, verdicts and PPI rows."""
    from concurrent.futures import ThreadPoolExecutor

    from ndcg_labeling.db.session import session_scope
    from ndcg_labeling.sources.calibration import calibrate
    from ndcg_labeling.sources.judge_runs import JudgeSettings, run_judge
    from tests.judges.fake_llm_server import FakeLLM, serving

    truth = {(f"question number {q}", f"Page {d}"): (q + d) % 4 for q in range(8) for d in range(5)}
    with serving(FakeLLM(truth=truth)) as fake, ThreadPoolExecutor(1) as pool:
        # in a thread of its own: the judge runs its own event loop, and Playwright's sync API holds one here
        pool.submit(run_judge, engine=db.engine, settings=JudgeSettings(
            batch="b1", grader="gpt-judge", model="test-model", base_url=fake.url, api_key="k", concurrency=2,
            price_in=2.5, price_out=10.0)).result()
    with session_scope(db.engine) as session:
        calibrate(session=session, judge="gpt-judge", by="query-type")


def open_page(browser, server: Server, world: World, role: str):
    """A browser page (CSP bypassed, so that a test can inject axe-core) signed in as ``role``'s person."""
    context = browser.new_context(bypass_csp=True, viewport={"width": WIDTHS[0], "height": 900})
    page = context.new_page()
    if role != "anonymous":
        page.goto(f"{server.base}/login?token={world.ws.token('lee' if role == 'lead' else 'ann')}")
        with page.expect_navigation():
            page.click("#sign-in")
    return page


def page_url(server: Server, world: World, spec: Page) -> str:
    values = dict(world.values)
    if "{token}" in spec.path:
        values["token"] = world.ws.token("ann")
    return server.base + spec.path.format(**values)


def main(out: str) -> None:
    """Write one screenshot per page (1280 px wide) to ``out``: ``make screenshots``."""
    import tempfile

    from playwright.sync_api import sync_playwright

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for kind in sorted({spec.world for spec in PAGES}):
            world = build_world(kind, Path(tmp) / kind)
            server = Server(world.db.url, Path(tmp) / f"serve-{kind}.log")
            try:
                for spec in (s for s in PAGES if s.world == kind):
                    page = open_page(browser, server, world, spec.role)
                    page.goto(page_url(server, world, spec))
                    page.wait_for_load_state("load")
                    for key in spec.keys:
                        page.keyboard.press(key)
                    height = min(page.evaluate("document.scrollingElement.scrollHeight"), MAX_SHOT_HEIGHT)
                    page.screenshot(path=str(folder / f"{spec.name}.png"), full_page=True,
                                    clip={"x": 0, "y": 0, "width": WIDTHS[0], "height": height})
                    print(folder / f"{spec.name}.png")
                    page.context.close()
            finally:
                server.stop()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "docs" / "img"))


def sign_in(page, server: Server, ws, grader: str) -> str:  # noqa: ANN001
    """Sign ``grader`` of the workspace ``ws`` in through the sign-in page; returns the token used."""
    token = ws.token(grader)
    page.goto(f"{server.base}/login?token={token}")
    with page.expect_navigation():
        page.click("#sign-in")
    assert page.url == f"{server.base}/"
    return token
