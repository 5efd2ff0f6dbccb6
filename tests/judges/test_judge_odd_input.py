"""``judge run`` on odd input, on SQLite and PostgreSQL: float options that are not finite or out of
range and a grader name that `graders add` refuses are refused before anything is stored; an answer
with a NUL or a lone surrogate is skipped as unparseable on both backends (its raw text stored with
U+FFFD); a usage count that is not a token count is ignored with a note, never stored."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from test_judge_run import judge, judge_grades

from ndcg_labeling.db import models as m

TEMPERATURE = "--temperature: must be a finite number 0 or more and at most 2, got"
TIMEOUT = "--timeout: must be a finite number above 0 and at most 86400, got"
RATE = "--rate-limit: must be a finite number above 0, got"
PRICE = "must be a finite number 0 or more and at most 1e+06, got"


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--temperature", "inf", f"{TEMPERATURE} inf"), ("--temperature", "nan", f"{TEMPERATURE} nan"),
    ("--temperature", "-0.5", f"{TEMPERATURE} -0.5"), ("--temperature", "2.5", f"{TEMPERATURE} 2.5"),
    ("--timeout", "0", f"{TIMEOUT} 0.0"), ("--timeout", "inf", f"{TIMEOUT} inf"), ("--timeout", "nan", f"{TIMEOUT} nan"),
    ("--rate-limit", "nan", f"{RATE} nan"), ("--rate-limit", "inf", f"{RATE} inf"), ("--rate-limit", "0", f"{RATE} 0.0"),
    ("--price-in", "nan", f"--price-in: {PRICE} nan"), ("--price-in", "-1", f"--price-in: {PRICE} -1.0"),
    ("--price-out", "inf", f"--price-out: {PRICE} inf"), ("--price-out", "1e300", f"--price-out: {PRICE} 1e+300"),
])
def test_a_float_option_not_finite_or_out_of_range_is_refused_and_nothing_is_stored(runner, world, fake, option,
                                                                                   value, message):
    before = world.db.counts()
    result = judge(runner, world, fake, option, value)
    assert result.exit_code == 1
    assert result.output == f"Error: {message}\n"
    assert world.db.counts() == before and fake.requests == []


def test_a_grader_name_that_graders_add_refuses_is_refused_here_too(runner, world, fake):
    from ndcg_labeling.cli import app

    name = "x\x1b[2Jy"
    before = world.db.counts()
    added = runner.invoke(app, ["graders", "add", name, "--db", world.db.url])
    result = runner.invoke(app, ["judge", "run", "--batch", world.batch, "--grader", name, "--model", "m",
                                 "--base-url", fake.url, "--db", world.db.url])
    problem = "'x\\x1b[2Jy' contains a control or non-printable character (U+001B); ids are printable text without white space"
    assert added.exit_code == 1 and added.output == f"Error: (command line): grader name {problem}\n"
    assert result.exit_code == 1 and result.output == f"Error: --grader: grader name {problem}\n"
    assert world.db.counts() == before and fake.requests == []


def _titles(fake) -> list[str]:
    return [b["messages"][1]["content"].split("Title: ")[1].split("\n")[0] for b in fake.requests]


def test_an_answer_with_a_nul_or_a_lone_surrogate_is_skipped_as_unparseable(runner, world, fake):
    fake.script.update({"Page 3": ["nul", "nul"], "Page 4": ["surrogate", "surrogate"]})
    result = judge(runner, world, fake, "--format", "json", "--concurrency", "1")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["graded"], summary["skipped"]) == (world.items - 2, 2)
    assert len(judge_grades(world)) == world.items - 2
    with world.db.engine.connect() as conn:
        rows = conn.execute(select(m.JudgeResponse.status, m.JudgeResponse.raw, m.JudgeResponse.reason)
                            .where(m.JudgeResponse.grade.is_(None)).order_by(m.JudgeResponse.raw)).all()
    note = "1 NUL or unpaired surrogate characters of the raw answer are stored as U+FFFD"
    assert [tuple(r) for r in rows] == [
        ("unparseable", '{"grade": 1} \ufffd', f"not one JSON object (Extra data at character 13); {note}"),
        ("unparseable", '{"grade": 1}\ufffd', f"not one JSON object (Extra data at character 12); {note}")]


def test_a_usage_count_that_is_not_a_token_count_is_ignored_with_a_note(runner, world, fake):
    huge = str(10**30)
    fake.script.update({"Page 1": ["usage=" + huge], "Page 2": ["usage=-5"]})
    result = judge(runner, world, fake, "--format", "json", "--price-in", "1", "--concurrency", "1")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["graded"] == world.items and len(judge_grades(world)) == world.items
    assert summary["prompt_tokens"] == 100 * (world.items - 2)
    assert summary["cost"] == pytest.approx(100 * (world.items - 2) / 1e6)
    problems = {"Page 1": f"usage ignored: prompt_tokens {huge} is not a token count (0 to 10,000,000)",
                "Page 2": "usage ignored: prompt_tokens -5 is not a token count (0 to 10,000,000)"}
    with world.db.engine.connect() as conn:
        reasons = conn.execute(select(m.JudgeResponse.reason).where(m.JudgeResponse.reason.is_not(None))).scalars()
        assert sorted(reasons) == sorted(problems.values())
        assert max(conn.execute(select(m.JudgeResponse.prompt_tokens)).scalars()) == 100
    first = next(t for t in _titles(fake) if t in problems)
    assert summary["notes"] == [f"2 answers reported a usage that is not a token count ({problems[first]}): their "
                                "tokens count as 0 in the totals and the cost"]


@pytest.mark.parametrize("existing", [False, True])
def test_a_run_that_fails_before_its_first_answer_leaves_the_database_unchanged(runner, world, fake, existing):
    from ndcg_labeling.cli import app

    if existing:  # a grader added beforehand stays; only what the run itself stored goes
        assert runner.invoke(app, ["graders", "add", "gpt-judge", "--kind", "model", "--db", world.db.url]).exit_code == 0
    before = world.db.counts()
    fake.script.update({title: ["401"] for _query, title in world.truth})  # the first request is refused
    result = judge(runner, world, fake, "--concurrency", "1")
    assert result.exit_code == 1 and len(fake.requests) == 1
    assert result.output.splitlines()[-1] == (f"Error: {fake.url}/chat/completions: HTTP 401: the endpoint refused the "
                                              "API key (check --api-key-env); nothing was stored")
    assert world.db.counts() == before
    fake.script.clear()
    again = judge(runner, world, fake, "--format", "json")  # and the next run starts afresh
    assert again.exit_code == 0 and json.loads(again.stdout)["graded"] == world.items
