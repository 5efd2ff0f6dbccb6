"""A grading workspace in a fresh database: queries, documents, two systems' runs (names, ranks and
scores that must never reach a grader), graders ann and bob, a lead, and batch ``b1``."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import importing
from ndcg_labeling.labels import tasks as t
from ndcg_labeling.labels.consensus import run_consensus
from ndcg_labeling.workspace import auth

SYSTEMS = {"bm25zeta": 11, "denseomega": 12}  # names that appear nowhere else
SCORE_BASE = 731.0


@dataclass
class Workspace:
    db: object
    batch: str
    tokens: dict[str, str] = field(default_factory=dict)

    def token(self, grader: str, expires: str = "30d") -> str:
        with session_scope(self.db.engine) as session:
            return auth.issue_token(grader, session=session, expires=expires).token

    def items(self, grader: str) -> list[str]:
        """The grader's item ids in the grader's order (all statuses)."""
        with self.db.engine.connect() as conn:
            return list(conn.execute(
                select(m.BatchItem.item_key).join(m.Assignment, m.Assignment.item_id == m.BatchItem.id)
                .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                .where(m.Grader.name == grader).order_by(m.Assignment.position)).scalars())

    def statuses(self, grader: str) -> list[tuple[str, str, str | None]]:
        with self.db.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(
                select(m.BatchItem.item_key, m.Assignment.status, m.Assignment.skip_reason)
                .join(m.Assignment, m.Assignment.item_id == m.BatchItem.id)
                .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                .where(m.Grader.name == grader).order_by(m.Assignment.position))]

    def judgments(self) -> list[tuple[str, str, int]]:
        """(grader, item id, grade) of every judgment of the batch."""
        with self.db.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(
                select(m.Grader.name, m.BatchItem.item_key, m.Judgment.grade)
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .join(m.BatchItem, (m.BatchItem.query_id == m.Judgment.query_id)
                      & (m.BatchItem.document_id == m.Judgment.document_id))
                .where(m.Judgment.batch == self.batch))]


def grade_for(item_id: str) -> int:
    """A grade fixed by the item id (so a test knows which grade each item must end with)."""
    return int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % 4


def build_workspace(db, tmp_path: Path, *, queries: int = 6, docs: int = 8, graders: tuple[str, ...] = ("ann", "bob"),
                    overlap: int = 1, depth: int = 4, texts: dict[str, str] | None = None) -> Workspace:
    """``texts`` may replace the first query's text, the first document's title or body (keys
    ``query``, ``title``, ``body``)."""
    texts = texts or {}
    qtext = [f"question number {i}" for i in range(queries)]
    titles = [f"Page {i}" for i in range(docs)]
    bodies = [f"Text of page {i}.\nSecond line." for i in range(docs)]
    if "query" in texts:
        qtext = [texts["query"]] * queries
    if "title" in texts:
        titles = [texts["title"]] * docs
    if "body" in texts:
        bodies = [texts["body"]] * docs
    qpath, dpath = tmp_path / "queries.csv", tmp_path / "documents.csv"
    pd.DataFrame({"query_id": [f"q{i:03d}" for i in range(queries)], "text": qtext,
                  "query_type": [("navigational", "informational")[i % 2] for i in range(queries)]}).to_csv(qpath, index=False)
    pd.DataFrame({"doc_id": [f"d{i:03d}" for i in range(docs)], "title": titles, "body": bodies,
                  "url": [f"https://example.org/{i}" for i in range(docs)]}).to_csv(dpath, index=False)
    with session_scope(db.engine) as session:
        importing.import_queries(qpath, session=session)
        importing.import_documents(dpath, session=session)
        importing.add_graders(list(graders), session=session)
        importing.add_graders(["lee"], session=session, role="lead")
        for name, seed in SYSTEMS.items():
            rng = np.random.default_rng(seed)
            rows = [{"query_id": f"q{q:03d}", "doc_id": f"d{d:03d}", "rank": r,
                     "score": SCORE_BASE + seed + (docs - r) / 1000 + 0.0004321}
                    for q in range(queries) for r, d in enumerate(rng.permutation(docs), start=1)]
            path = tmp_path / f"run-{name}.csv"
            pd.DataFrame(rows).to_csv(path, index=False)
            importing.import_run(path, system=name, session=session)
        t.create_batch("b1", scale="0-3", depth=depth, overlap=overlap, graders=list(graders), session=session, seed=5)
    return Workspace(db, "b1")


@pytest.fixture
def workspace(db, tmp_path) -> Workspace:
    return build_workspace(db, tmp_path)


def secret_strings() -> list[str]:
    """What must not reach ann: the system names, score digits, and the other grader's name."""
    return [*SYSTEMS, "731.", "732.", "742.", "743.", "bob"]


def graded_two_ways(db, tmp_path):
    """Batch b1 with overlap 2, ann grading 0 or 1 and bob 3 or 2, then median consensus: the items whose
    grades differ by more than 1 are flagged for adjudication."""
    ws = build_workspace(db, tmp_path, queries=8, docs=5, depth=3, overlap=2)
    items = {g: ws.items(g) for g in ("ann", "bob")}
    with session_scope(db.engine) as session:
        for grader, grades in (("ann", (0, 1, 0)), ("bob", (3, 3, 2))):
            for i, item in enumerate(items[grader]):
                t.save_grade("b1", item, grades[i % 3], grader=grader, session=session)
        run_consensus(session=session, batch="b1", method="median")
    return ws


@pytest.fixture
def serve(tmp_path):
    """``start(db)`` runs ``ndcg-labeling serve`` on the database (tests/web/pages.py's Server); every
    server started is stopped at the end."""
    from tests.web.pages import Server

    started: list[Server] = []

    def start(db) -> Server:  # noqa: ANN001
        server = Server(db.url, tmp_path / f"serve-{len(started)}.log")
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def chromium():
    """Debian's chromium through Playwright, launched once per test process (each xdist worker)."""
    from playwright.sync_api import sync_playwright

    from tests.web.pages import ARGS, CHROMIUM

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def browser(chromium):
    """The process's chromium; the contexts (and pages) a test opens in it are closed after the test."""
    before = set(chromium.contexts)
    yield chromium
    for context in chromium.contexts:
        if context not in before:
            context.close()


@pytest.fixture(scope="module")
def axe_source() -> str:
    """axe-core's script (make venv and .ci/run install it under .venv/node): skipped only where npm is
    missing, a failure where npm exists but axe-core was not installed."""
    import shutil

    from tests.web.pages import AXE

    if not AXE.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is missing: axe-core cannot be installed (make venv installs it where npm exists)")
        pytest.fail(f"axe-core is missing at {AXE}: run `npm install --prefix .venv/node axe-core@4` (make venv)")
    return AXE.read_text(encoding="utf-8")
