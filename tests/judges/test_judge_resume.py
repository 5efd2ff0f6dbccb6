"""Kill and resume: a ``judge run`` stopped by SIGKILL or Ctrl+C (SIGINT) after some answers loses
none of the answers it stored, and the rerun sends exactly the items not stored, each once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from judge_world import SECRET
from sqlalchemy import func, select

from ndcg_labeling.db import models as m


def stored(world) -> int:
    """Items of the judge that are done or skipped (each answer stored with its judgment)."""
    with world.db.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(m.Assignment)
                                .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                                .where(m.Grader.name == "gpt-judge", m.Assignment.status != "open")).scalar_one())


def start(world, fake) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "ndcg_labeling", "judge", "run", "--batch", world.batch, "--grader", "gpt-judge",
           "--model", "test-model", "--base-url", fake.url, "--concurrency", "2", "--format", "json",
           "--db", world.db.url]
    env = {**os.environ, "NDCG_LABELING_PROGRESS": "plain", "OPENAI_API_KEY": SECRET}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(world, proc: subprocess.Popen[str], k: int) -> None:
    deadline = time.monotonic() + 60
    while stored(world) < k:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run stored nothing within 60 s"
        time.sleep(0.02)


@pytest.mark.parametrize("how", ["kill", "ctrl-c"])
def test_an_interrupted_run_loses_nothing_stored_and_the_rerun_completes_it(runner, world, fake, how):
    from ndcg_labeling.cli import app

    fake.delay = 0.05
    proc = start(world, fake)
    try:
        wait_for(world, proc, 10)
        proc.send_signal(signal.SIGKILL if how == "kill" else signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    kept = stored(world)
    assert 10 <= kept < world.items
    if how == "ctrl-c":
        assert proc.returncode == 130, err
        summary = json.loads(out)
        assert summary["interrupted"] and summary["graded"] + summary["skipped"] == kept
        # every answer received was stored: only the requests in flight (at most 2) went unread
        assert kept <= fake.answered <= kept + 2
        # the counts survive the interrupt (issue 46: they read 0): the summary's and the run row's
        assert kept <= summary["sent"] <= kept + 2 and summary["http_requests"] >= summary["sent"]
        with world.db.engine.connect() as conn:
            run = conn.execute(select(m.JudgeRun)).one()
        assert run.n_sent == summary["sent"] and run.n_graded + run.n_skipped == kept and run.finished_at is None
    sent_before = len(fake.requests)
    fake.delay = 0.0
    result = runner.invoke(app, ["judge", "run", "--batch", world.batch, "--grader", "gpt-judge", "--model",
                                 "test-model", "--base-url", fake.url, "--format", "json", "--db", world.db.url],
                           env={"OPENAI_API_KEY": SECRET, "NDCG_LABELING_PROGRESS": "plain"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sent"] == world.items - kept
    assert len(fake.requests) - sent_before == world.items - kept
    assert stored(world) == world.items
    with world.db.engine.connect() as conn:
        n, distinct = conn.execute(select(func.count(), func.count(func.distinct(m.Judgment.query_id * 100000
                                                                                 + m.Judgment.document_id)))
                                   .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                                   .where(m.Grader.name == "gpt-judge")).one()
    assert n == distinct == world.items
