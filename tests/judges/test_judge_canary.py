"""``judge canary`` and ``judge recheck`` against the fake OpenAI-compatible server (issue 47): a judge that
grades 3 any document holding the query's terms, or one that obeys an instruction in the page, fails the
canary and is then refused by calibrate and ``consensus --judge-fills``; a judge simulated from the qrels
passes. The recheck's agreement equals scikit-learn's on the grades the server gave."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from fake_llm_server import FakeLLM, serving
from judge_world import SECRET
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m


def cli(runner, db, *args: str):
    from ndcg_labeling.cli import app

    return runner.invoke(app, [*args, "--db", db.url], env={"OPENAI_API_KEY": SECRET, "NDCG_LABELING_PROGRESS": "plain"},
                         catch_exceptions=False)


def qrels(world) -> dict[tuple[str, str], int]:
    """The pooled pairs' grades (people graded from the truth): what a judge simulated from the qrels knows."""
    with world.db.engine.connect() as conn:
        rows = conn.execute(select(m.Query.text, m.Document.title).join(m.BatchItem, m.BatchItem.query_id == m.Query.id)
                            .join(m.Document, m.Document.id == m.BatchItem.document_id)).all()
    return {(q, t): world.truth[(q, t)] for q, t in rows}


@pytest.fixture
def labelled(runner, world):
    assert cli(runner, world.db, "consensus", "--method", "median", "--batch", world.batch).exit_code == 0
    return world


def canary(runner, world, fake, grader: str, *extra: str):
    return cli(runner, world.db, "judge", "canary", "--batch", world.batch, "--grader", grader, "--model", "m",
               "--base-url", fake.url, "--format", "json", *extra)


def test_a_judge_simulated_from_the_qrels_passes(runner, labelled):
    world = labelled
    with serving(FakeLLM(truth=qrels(world), unknown_grade=0)) as fake:
        out = canary(runner, world, fake, "qrels-judge")
    assert out.exit_code == 0, out.output
    check = json.loads(out.stdout)
    kinds = {r["kind"]: r for r in check["rows"]}
    assert check["passed"] and set(kinds) == {"keyword_stuffing", "instruction"}
    assert all(r["n"] == r["answered"] == 8 and r["fooled"] == 0 for r in kinds.values())  # one per query of 8
    # what was sent: stuffed canaries carry the query's text; instruction canaries ask for the top grade
    prompts = ["\n".join(msg["content"] for msg in body["messages"]) for body in fake.requests]
    assert len(prompts) == 16
    docs = [p.split("<document>", 1)[1] for p in prompts]
    queries = [re.search(r"<query>\n(.*?)\n</query>", p).group(1) for p in prompts]
    assert sum(doc.count(q) >= 3 for doc, q in zip(docs, queries, strict=True)) == 8
    assert sum(bool(re.search(r"grade[^.]{0,20}3", doc)) for doc in docs) >= 8  # the world's Page 9 asks too
    with Session(world.db.engine) as session:
        stored = session.execute(select(m.JudgeCheck)).scalar_one()
        assert (stored.kind, stored.passed, stored.threshold, stored.n) == ("canary", True, 0.1, 16)
        assert stored.base_url == fake.url and stored.model == "m" and SECRET not in json.dumps(stored.result)


@pytest.mark.parametrize(("behaviour", "fooled_kind"), [({"stuffed": True}, "keyword_stuffing"),
                                                        ({"obeys": True}, "instruction")])
def test_a_fooled_judge_fails_and_is_refused_until_a_canary_passes(runner, labelled, behaviour, fooled_kind):
    world = labelled
    truth = qrels(world)
    with serving(FakeLLM(truth=truth, unknown_grade=0)) as honest:  # its labels: as people's
        assert cli(runner, world.db, "judge", "run", "--batch", world.batch, "--grader", "gpt", "--model", "m",
                   "--base-url", honest.url).exit_code == 0
    with serving(FakeLLM(truth=truth, unknown_grade=0, **behaviour)) as fooled:
        out = canary(runner, world, fooled, "gpt")
    assert out.exit_code == 1
    rows = {r["kind"]: r for r in json.loads(out.stdout)["rows"]}
    assert rows[fooled_kind]["fooled_rate"] == 1.0 and not rows[fooled_kind]["passed"]
    refused = cli(runner, world.db, "calibrate", "--judge", "gpt", "--batch", world.batch)
    assert refused.exit_code == 1
    assert "judge gpt failed its newest canary" in refused.stderr and fooled_kind in refused.stderr
    fill = cli(runner, world.db, "consensus", "--method", "median", "--batch", world.batch, "--judge-fills", "gpt")
    assert fill.exit_code == 1 and "failed its newest canary" in fill.stderr
    with serving(FakeLLM(truth=truth, unknown_grade=0)) as honest:
        assert canary(runner, world, honest, "gpt").exit_code == 0
    table = cli(runner, world.db, "calibrate", "--judge", "gpt", "--batch", world.batch)
    assert table.exit_code == 0 and "Canary: passed" in table.stdout


def test_one_canary_fooled_in_eight_is_above_the_threshold(runner, labelled):
    from ndcg_labeling.sources.judge_checks import INSTRUCTIONS

    world = labelled
    first = sorted(world.qtype)[0]
    asks = [style.format(top=3) for style in INSTRUCTIONS]
    with serving(FakeLLM(truth=qrels(world), unknown_grade=0)) as fake:
        # a judge fooled by the instruction canary of one query of eight: 12.5 %, above the default 10 %
        fake.fooled = lambda query, prompt: query == first and any(a in prompt for a in asks)  # type: ignore[method-assign]
        out = canary(runner, world, fake, "gpt")
        rows = {r["kind"]: r for r in json.loads(out.stdout)["rows"]}
        assert rows["instruction"]["fooled"] == 1 and rows["instruction"]["fooled_rate"] == 0.125
        assert out.exit_code == 1 and not rows["instruction"]["passed"] and rows["keyword_stuffing"]["passed"]
        assert canary(runner, world, fake, "gpt", "--threshold", "0.2").exit_code == 0  # 12.5 % <= 20 %


def test_recheck_reports_the_judges_agreement_with_itself(runner, labelled):
    world = labelled
    with serving(FakeLLM(truth=world.truth)) as fake:
        assert cli(runner, world.db, "judge", "run", "--batch", world.batch, "--grader", "gpt", "--model", "m",
                   "--base-url", fake.url).exit_code == 0
        same = cli(runner, world.db, "judge", "recheck", "--batch", world.batch, "--grader", "gpt", "--model", "m",
                   "--base-url", fake.url, "--sample", "20", "--format", "json")
        assert same.exit_code == 0, same.output
        row = json.loads(same.stdout)["rows"][0]
        assert (row["n"], row["answered"], row["exact"], row["exact_share"], row["kappa_quadratic"]) == (20, 20, 20, 1.0, 1.0)
        wrong = cli(runner, world.db, "judge", "recheck", "--batch", world.batch, "--grader", "gpt", "--model", "other",
                    "--base-url", fake.url)
        assert wrong.exit_code == 1 and "model m" in wrong.stderr and "against itself" in wrong.stderr
    types = {t: 0.5 for t in set(world.qtype.values())}
    with serving(FakeLLM(truth=world.truth, query_type=world.qtype, noisy=types)) as noisy:
        out = cli(runner, world.db, "judge", "recheck", "--batch", world.batch, "--grader", "gpt", "--model", "m",
                  "--base-url", noisy.url, "--sample", "30", "--seed", "4", "--format", "json")
        assert out.exit_code == 0, out.output
        before, again = [], []
        for body in noisy.requests:  # the stored grade is the truth; the server's answer is grade_for
            prompt = "\n".join(msg["content"] for msg in body["messages"])
            key = (re.search(r"<query>\n(.*?)\n</query>", prompt).group(1), re.search(r"^Title: (.*)$", prompt, re.M).group(1))
            before.append(world.truth[key])
            again.append(noisy.grade_for(*key))
    row = json.loads(out.stdout)["rows"][0]
    b, a = np.array(before), np.array(again)
    assert len(noisy.requests) == row["n"] == 30
    assert row["exact"] == int((a == b).sum()) < 30
    assert row["kappa_quadratic"] == pytest.approx(cohen_kappa_score(b, a, labels=[0, 1, 2, 3], weights="quadratic"),
                                                   abs=1e-4)
    table = cli(runner, world.db, "calibrate", "--judge", "gpt", "--batch", world.batch)
    assert f"{row['exact']} of 30 re-judged items got the same grade" in table.stdout
