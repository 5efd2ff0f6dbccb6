"""``judge run`` against a misbehaving server (issue 46), on SQLite and PostgreSQL: an answer too long,
nested too deep or with a 5,000-digit number skips its item and the run goes on; a raw answer is
stored with the key redacted and cut to MAX_RAW_CHARS; ``--timeout`` is a deadline per request;
``--concurrency`` is bounded; an interrupted or failed run keeps its counts."""

from __future__ import annotations

import json
import time

import pytest
from judge_world import SECRET
from sqlalchemy import select
from test_judge_run import judge, judge_grades

from ndcg_labeling.db import models as m
from ndcg_labeling.judges.client import MAX_RAW_CHARS


def _responses(world) -> list[tuple]:
    with world.db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(m.JudgeResponse.status, m.JudgeResponse.grade,
                                                      m.JudgeResponse.raw, m.JudgeResponse.reason))]


def _dump(world) -> list[str]:
    rows = []
    with world.db.engine.connect() as conn:
        for table in m.Base.metadata.tables.values():
            rows += [repr(tuple(r)) for r in conn.execute(select(table))]
    return rows


def test_an_answer_too_long_too_deep_or_with_a_huge_number_skips_its_item_and_the_run_goes_on(runner, world, fake):
    # each scripted title: its first item gets the behaviour on both attempts (concurrency 1)
    fake.script.update({"Page 1": ["digits", "digits"], "Page 2": ["nested", "nested"],
                        "Page 3": ["nested-body", "nested-body"], "Page 4": ["huge", "huge"],
                        "Page 5": ["usage-digits"]})
    result = judge(runner, world, fake, "--concurrency", "1", "--format", "json")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    summary = json.loads(result.stdout)
    assert (summary["graded"], summary["skipped"], summary["sent"]) == (world.items - 4, 4, world.items)
    assert len(judge_grades(world)) == world.items - 4
    skipped = [r for r in _responses(world) if r[1] is None]
    reasons = sorted(r[3] for r in skipped)
    assert any("5,011 characters, more than the 1,000 read" in r for r in reasons)  # {"grade": 1000...0}
    assert any("nested 100,000 levels deep" in r for r in reasons)  # the whole body
    assert any("100,000 characters" in r for r in reasons)  # the content: too long to be read
    assert any("larger than the 1,048,576 bytes read" in r for r in reasons)  # the 5 MB answer
    assert all(s == "unparseable" for s, *_ in skipped)
    # raw answers are kept, but never more than MAX_RAW_CHARS (and a note of the length)
    assert all(len(raw) <= MAX_RAW_CHARS + 60 for _, _, raw, _ in _responses(world))
    assert any(raw.endswith("characters in all]") for _, _, raw, _ in skipped)
    # the 5,000-digit usage: the grade is kept, the usage ignored with a note
    assert any("prompt_tokens (a number of 5,000 digits) is not a token count" in (r or "")
               for _, g, _, r in _responses(world) if g is not None)


def test_a_key_echoed_in_an_answer_is_never_stored_and_raw_answers_are_cut(runner, world, fake):
    fake.script.update({"Page 1": ["echo-key", "echo-key"], "Page 2": ["echo-key-grade", "echo-key-grade"],
                        "Page 3": ["echo-key-usage"]})
    result = judge(runner, world, fake, "--concurrency", "1", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["skipped"] == 2
    assert all(h.get("Authorization") == f"Bearer {SECRET}" for h in fake.headers)  # the key was sent
    dump = _dump(world)
    assert dump and not any(SECRET in row for row in dump)
    raws = {raw: reason for _, g, raw, reason in _responses(world) if g is None}
    echoed = [raw for raw in raws if raw.startswith("your key is [key]; ")]
    assert len(echoed) == 1 and len(echoed[0]) <= MAX_RAW_CHARS + 60
    assert echoed[0].endswith(f"[... cut: {len('your key is [key]; ') + 10_000:,} characters in all]")
    assert '{"[key]": 1}' in raws and "['[key]']" in raws['{"[key]": 1}']  # the reason names the key: redacted
    assert SECRET not in result.output
    # the usage that quoted the key: ignored with a note that names only its kind and size, not its text
    shown = f"usage ignored: prompt_tokens (text of {len(SECRET)} characters) is not a token count"
    assert shown in result.stderr
    assert any(shown in (reason or "") for _, g, _, reason in _responses(world) if g is not None)


def test_timeout_is_a_deadline_for_the_whole_answer(runner, world, fake):
    # a body dripped a byte every 30 ms: each read is quick, the whole answer takes ~6 s
    fake.drip = 0.03
    fake.script["Page 1"] = ["drip"]
    start = time.monotonic()
    result = judge(runner, world, fake, "--concurrency", "1", "--timeout", "1", "--format", "json")
    elapsed = time.monotonic() - start
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    # abandoned at its deadline and asked again (then answered at once): every item graded
    assert summary["abandoned"] == 1 and summary["http_retries"] == 1
    assert summary["graded"] == world.items and summary["http_requests"] == world.items + 1
    assert "lower bounds" in result.stderr  # the tokens of the abandoned request are unknown: said so
    assert elapsed < 6.0, elapsed  # the dripped answer alone takes longer


@pytest.mark.parametrize("value", ["65", "100000000"])
def test_concurrency_above_its_bound_is_refused_before_anything_is_stored(runner, world, fake, value):
    before = world.db.counts()
    result = judge(runner, world, fake, "--concurrency", value)
    assert result.exit_code == 1
    assert result.output == f"Error: --concurrency must be at least 1 and at most 64, got {value}\n"
    assert world.db.counts() == before and fake.requests == []


def test_a_failed_run_keeps_its_counts_in_the_summary_row(runner, world, fake):
    from ndcg_labeling.cli import app

    ok = judge(runner, world, fake, "--max-requests", "3")  # so the failing run has answers before it fails
    assert ok.exit_code == 0
    fake.script["Page 7"] = ["401"]
    failed = runner.invoke(app, ["judge", "run", "--batch", world.batch, "--grader", "gpt-judge", "--model",
                                 "test-model", "--base-url", fake.url, "--api-key-env", "JUDGE_KEY", "--concurrency",
                                 "1", "--db", world.db.url], env={"JUDGE_KEY": SECRET})
    assert failed.exit_code == 1 and failed.output.startswith("Error: ") and "a rerun resumes" in failed.output
    assert len(failed.output.splitlines()) == 1
    with world.db.engine.connect() as conn:
        run = conn.execute(select(m.JudgeRun).order_by(m.JudgeRun.id.desc())).first()
    assert run is not None and run.finished_at is None
    # every request the run made was answered but the last (the 401): n_sent counts them all
    assert run.n_graded + run.n_skipped >= 1
    assert run.n_sent == run.n_graded + run.n_skipped + 1 == len(fake.requests) - 3
