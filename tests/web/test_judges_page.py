"""The judges page (``/lead/judges``, issue 45): a judge's runs with requests, cache hits, tokens, price and
cost; its calibration verdicts per query type; the labels it filled; the PPI estimate of ``report
--estimator ppi --judge``; and a canary section that says when there is none. Numbers are checked against
the stored run and the use cases' own results (``calibrate``, ``ppi_report``), read by a second path."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import select

import ndcg_labeling.db.models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.results import ReportOptions
from ndcg_labeling.scoring.ppi import ppi_report
from tests.web.conftest import build_workspace, graded_two_ways
from tests.web.pages import add_judge
from tests.web.test_lead_admin import as_lead


def visible(page: str) -> str:
    """The page's text as a person reads it: tags and the head out, entities decoded, spaces collapsed."""
    body = re.sub(r"(?s)<head>.*?</head>|<[^>]+>", " ", page)
    return " ".join(html.unescape(body).split())


def test_judges_page_shows_runs_costs_verdicts_ppi_and_no_canary(db, tmp_path):
    ws = graded_two_ways(db, tmp_path)
    add_judge(db)
    client, _ = as_lead(ws)
    page = client.get("/lead/judges")
    assert page.status_code == 200
    text = visible(page.text)
    with session_scope(db.engine) as session:
        run = session.scalars(select(m.JudgeRun)).one()
        session.expunge(run)
        verdicts = session.execute(select(m.CalibrationVerdict.scope, m.CalibrationVerdict.verdict)).all()
        kappas = session.execute(select(m.CalibrationVerdict.kappa, m.CalibrationVerdict.kappa_ci_low,
                                        m.CalibrationVerdict.kappa_ci_high)).all()
    # the fake endpoint answers 100 prompt and 7 completion tokens per request, priced 2.5 and 10 per million
    assert run.n_sent > 0 and run.cost == pytest.approx((100 * 2.5 + 7 * 10) * run.n_sent / 1e6)
    assert f"1 run: {run.n_sent} requests sent, 0 answered from the cache, {run.n_graded} items graded" in text
    assert f"{100 * run.n_sent:,} / {7 * run.n_sent:,}" in text and "2.5 / 10" in text and f"{run.cost:.4f}" in text
    assert "test-model" in text and "finished" in text
    for _scope, verdict in verdicts:
        assert verdict in text
    # the verdict's kappa with its stored 95 % bootstrap interval (scopes of five queries or more have one)
    with_interval = [(k, lo, hi) for k, lo, hi in kappas if lo is not None]
    assert with_interval and all(lo <= k <= hi for k, lo, hi in with_interval)
    for k, lo, hi in with_interval:
        assert f"{k:.2f} [{lo:.2f}, {hi:.2f}]" in text
    assert "all query types" in text and "navigational" in text
    assert "No label in force came from this judge: every one comes from people." in text
    with session_scope(db.engine) as session:
        ppi = ppi_report(session=session, judge="gpt-judge", options=ReportOptions(metrics=("ndcg@10",)))
    assert ppi.rows and f"with judge gpt-judge: {ppi.queries} queries judged" in text
    for r in ppi.rows:
        if r.baseline is None:
            assert f"{r.estimate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]" in text
    assert "Canary results No canary run yet" in text
    assert not re.search(r"(?<![\w-])--[a-z]|<built-in|object at 0x", text)


def test_judges_page_without_a_judge_says_how_to_get_one(db, tmp_path):
    ws = build_workspace(db, tmp_path)
    client, _ = as_lead(ws)
    text = visible(client.get("/lead/judges").text)
    assert "No LLM judge has graded anything yet" in text and "judge run" in text
    assert '<a href="/lead/judges">Judges</a>' in client.get("/lead").text  # in the lead's menu


def test_judges_page_shows_a_stored_canary_with_its_fooled_rates_and_the_gate(db, tmp_path):
    ws = graded_two_ways(db, tmp_path)
    add_judge(db)
    with session_scope(db.engine) as session:
        judge = session.scalars(select(m.Grader).where(m.Grader.name == "gpt-judge")).one()
        session.add(m.JudgeCheck(grader_id=judge.id, kind="canary", batch="b", model="test-model",
                                 base_url="http://127.0.0.1/v1", template_sha256="ab" * 32, n=16, passed=False,
                                 threshold=0.1, created_at=m.utcnow(), result={"kinds": {
                                     "keyword_stuffing": {"n": 8, "answered": 8, "fooled": 3, "fooled_rate": 0.375},
                                     "instruction": {"n": 8, "answered": 8, "fooled": 0, "fooled_rate": 0.0}}}))
    client, _ = as_lead(ws)
    text = visible(client.get("/lead/judges").text)
    assert "No canary run yet" not in text
    assert "keyword stuffing" in text and "38% of 8" in text and "instruction" in text and "0% of 8" in text
    assert "failed" in text and "10%" in text and "abababababab" in text
