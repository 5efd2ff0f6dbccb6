"""``judge run`` against a local OpenAI-compatible server, on SQLite and PostgreSQL: every item graded
exactly once, blind prompts, a rerun sends nothing, failures on demand, the key never shown or stored."""

from __future__ import annotations

import json
import logging

import pytest
from judge_world import INJECTION, SECRET
from sqlalchemy import func, select, text

from ndcg_labeling.db import models as m
from ndcg_labeling.guidelines import load_guideline


def judge(runner, world, fake, *extra: str, key: str | None = SECRET):
    from ndcg_labeling.cli import app

    env = {"NDCG_LABELING_PROGRESS": "plain", "JUDGE_KEY": key} if key else {"NDCG_LABELING_PROGRESS": "plain"}
    argv = ["judge", "run", "--batch", world.batch, "--grader", "gpt-judge", "--model", "test-model",
            "--base-url", fake.url, "--api-key-env", "JUDGE_KEY", *extra, "--db", world.db.url]
    return runner.invoke(app, argv, env=env, catch_exceptions=False)


def judge_grades(world) -> dict[tuple[str, str], int]:
    with world.db.engine.connect() as conn:
        rows = conn.execute(select(m.Query.text, m.Document.title, m.Judgment.grade)
                            .join(m.Query, m.Query.id == m.Judgment.query_id)
                            .join(m.Document, m.Document.id == m.Judgment.document_id)
                            .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                            .where(m.Grader.name == "gpt-judge")).all()
    out = {(q, d): g for q, d, g in rows}
    assert len(out) == len(rows)  # one judgment per item
    return out


def test_every_item_graded_once_blind_and_a_rerun_sends_nothing(runner, world, fake):
    result = judge(runner, world, fake, "--format", "json", "--price-in", "2.5", "--price-out", "10")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["sent"] == summary["graded"] == world.items and summary["skipped"] == 0
    assert len(fake.requests) == world.items == fake.answered
    grades = judge_grades(world)
    assert len(grades) == world.items and all(grades[k] == world.truth[k] for k in grades)
    # token usage and cost: the fake server reports 100 + 7 tokens per answer
    assert summary["prompt_tokens"] == 100 * world.items and summary["completion_tokens"] == 7 * world.items
    assert summary["cost"] == pytest.approx(world.items * (100 * 2.5 + 7 * 10) / 1e6)
    with world.db.engine.connect() as conn:
        run = conn.execute(select(m.JudgeRun)).one()
        assert (run.n_graded, run.prompt_tokens, run.cost) == (world.items, 100 * world.items, summary["cost"])
        assert run.finished_at is not None and run.template_version == "umbrela-1"
        prov = conn.execute(select(func.count(), func.min(m.JudgmentProvenance.model),
                                   func.max(m.JudgmentProvenance.run_id))).one()
        assert tuple(prov) == (world.items, "test-model", run.id)
        # every label names its endpoint (the base URL, never the key) and its prompt template's hash (issue 47)
        ends = conn.execute(select(m.JudgmentProvenance.base_url, m.JudgmentProvenance.template_sha256).distinct()).all()
        assert ends == [(fake.url, run.template_sha256)] and SECRET not in str(ends)
        assert conn.execute(select(m.Grader.kind).where(m.Grader.name == "gpt-judge")).scalar_one() == "model"
    # blind: no rank, score or system name in any prompt; the guideline people read is in it
    guideline = load_guideline("0-3").text.strip()
    for body in fake.requests:
        prompt = "\n".join(msg["content"] for msg in body["messages"])
        assert guideline in prompt  # the text people read, whole
        rest = prompt.replace(guideline, "")
        assert "bm25" not in rest and "dense" not in rest and "rank" not in rest.lower()
        assert "90" not in rest  # the stored scores are 90x.yyy
        assert body["temperature"] == 0.0 and body["response_format"]["type"] == "json_schema"
    # a rerun: zero requests
    again = judge(runner, world, fake, "--format", "json")
    assert again.exit_code == 0 and json.loads(again.stdout)["sent"] == 0
    assert len(fake.requests) == world.items


def test_items_go_in_the_judges_own_random_order(runner, world, fake):
    assert judge(runner, world, fake, "--concurrency", "1").exit_code == 0
    from scipy.stats import kendalltau

    with world.db.engine.connect() as conn:
        order = conn.execute(select(m.Query.text, m.Document.title, m.Assignment.position)
                             .join(m.BatchItem, m.BatchItem.id == m.Assignment.item_id)
                             .join(m.Query, m.Query.id == m.BatchItem.query_id)
                             .join(m.Document, m.Document.id == m.BatchItem.document_id)
                             .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                             .where(m.Grader.name == "gpt-judge")).all()
        ranks = dict(((q, d), r) for q, d, r in conn.execute(text(
            "SELECT q.text, d.title, e.rank FROM ranking_entries e JOIN queries q ON q.id = e.query_id "
            "JOIN documents d ON d.id = e.document_id JOIN systems s ON s.id = e.system_id WHERE s.name = 'bm25'")))
    sent = [(b["messages"][1]["content"].split("<query>\n")[1].split("\n")[0],
             b["messages"][1]["content"].split("Title: ")[1].split("\n")[0]) for b in fake.requests]
    by_position = [(q, d) for q, d, _ in sorted(order, key=lambda r: r[2])]
    assert sent == by_position  # requests follow the judge's order (concurrency 1)
    tau = kendalltau(range(len(sent)), [ranks[k] for k in sent]).statistic
    assert abs(tau) < 0.3  # the order carries no trace of the ranking


def test_failures_on_demand_retry_then_grade_or_skip_with_the_raw_answer(runner, world, fake):
    fake.script.update({"Page 1": ["429", "500"], "Page 2": ["slow"], "Page 3": ["malformed", "malformed"],
                        "Page 4": ["refusal"], "Page 5": ["chatty", "chatty"], "Page 6": ["refusal", "refusal"]})
    fake.slow = 1.5
    result = judge(runner, world, fake, "--concurrency", "1", "--timeout", "0.5", "--format", "json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["skipped"] == 3 and summary["graded"] == world.items - 3
    assert summary["http_retries"] == 3  # 429, 500, the timeout
    with world.db.engine.connect() as conn:
        skipped = conn.execute(select(m.JudgeResponse.status, m.JudgeResponse.raw, m.JudgeResponse.reason)
                               .where(m.JudgeResponse.grade.is_(None)).order_by(m.JudgeResponse.id)).all()
        reasons = conn.execute(select(m.Assignment.skip_reason).where(m.Assignment.status == "skipped")).scalars().all()
    statuses = sorted(s for s, _, _ in skipped)
    assert statuses == ["refused", "unparseable", "unparseable"]
    raws = {r for _, r, _ in skipped}
    assert 'Sure! {"grade": 2} because it fits.' in raws and "I can't help with that." in raws
    assert any(r.startswith('{"choices"') for r in raws)  # the malformed body, kept as it came
    assert len(reasons) == 3 and all(r.startswith("judge: ") for r in reasons)
    assert len(judge_grades(world)) == world.items - 3
    # the skipped items are answered from the cache on a rerun: nothing is sent again
    n = len(fake.requests)
    assert judge(runner, world, fake).exit_code == 0 and len(fake.requests) == n


def test_the_injected_document_is_graded_on_its_merits_and_parsed_strictly(runner, world, fake):
    assert judge(runner, world, fake).exit_code == 0
    injected = [b for b in fake.requests if INJECTION in b["messages"][1]["content"]]
    assert injected  # the body reached the model, inside the document section
    for body in injected:
        content = body["messages"][1]["content"]
        assert content.rindex("<document>") < content.index(INJECTION) < content.rindex("</document>")
    grades = judge_grades(world)
    assert {g for (q, d), g in grades.items() if d == "Page 9"} == {0}


def test_the_key_never_appears_in_output_logs_or_database(runner, world, fake, caplog):
    caplog.set_level(logging.DEBUG)
    fake.script["Page 0"] = ["401"]
    failed = judge(runner, world, fake, "--concurrency", "1")
    assert failed.exit_code == 1 and "HTTP 401" in failed.output and "refused the API key" in failed.output
    ok = judge(runner, world, fake, "--format", "json")
    dry = judge(runner, world, fake, "--dry-run")
    assert ok.exit_code == 0 and dry.exit_code == 0
    assert all(h.get("Authorization") == f"Bearer {SECRET}" for h in fake.headers)  # it was sent
    assert SECRET not in failed.output + ok.output + dry.output + caplog.text
    dump = []
    with world.db.engine.connect() as conn:
        for table in m.Base.metadata.tables.values():
            dump += [repr(tuple(r)) for r in conn.execute(select(table))]
    assert dump and not any(SECRET in row for row in dump)


def test_dry_run_prints_the_first_prompt_and_the_count_and_writes_nothing(runner, world, fake):
    before = world.db.counts()
    result = judge(runner, world, fake, "--dry-run", "--max-requests", "5")
    assert result.exit_code == 0, result.output
    assert "--- user ---" in result.stdout and "<query>" in result.stdout
    assert f"dry run: 5 requests would be sent for {world.items} open items" in result.stdout
    assert fake.requests == [] and world.db.counts() == before


def test_max_requests_stops_and_the_next_run_goes_on(runner, world, fake):
    first = json.loads(judge(runner, world, fake, "--max-requests", "4", "--format", "json").stdout)
    assert (first["sent"], first["left"]) == (4, world.items - 4) and len(fake.requests) == 4
    rest = judge(runner, world, fake, "--format", "csv").stdout.splitlines()
    assert rest[0] == "what,count" and f"sent,{world.items - 4}" in rest and len(fake.requests) == world.items
    assert len(judge_grades(world)) == world.items


def test_a_human_grader_name_and_bad_options_are_refused(runner, world, fake):
    from ndcg_labeling.cli import app

    before = world.db.counts()
    bad = runner.invoke(app, ["judge", "run", "--batch", world.batch, "--grader", "ann", "--model", "x",
                              "--base-url", fake.url, "--db", world.db.url])
    assert bad.exit_code == 1 and "grader 'ann' is of kind human" in bad.output
    bad = judge(runner, world, fake, "--concurrency", "0")
    assert bad.exit_code == 1 and "--concurrency must be at least 1" in bad.output
    bad = judge(runner, world, fake, "--prompt", "missing.txt")
    assert bad.exit_code == 1 and "missing.txt: no such prompt template file" in bad.output
    assert world.db.counts() == before and fake.requests == []
