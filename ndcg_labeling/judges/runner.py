"""Many judge requests at a bounded concurrency, each outcome handed over as it arrives.

:func:`run_jobs` sends one request per job (at most ``concurrency`` at once), parses the answer with
:func:`~ndcg_labeling.judges.parser.parse_answer`, asks once more when the answer does not parse (a
refusal included), and calls ``on_outcome`` with the final outcome of each job, in a single writer
thread, before the job counts as done: an outcome is stored before the next is taken up by the
writer, so an interruption (Ctrl+C, a kill) loses at most the answers in flight. A request error that
outlasts the client's retries (:class:`~ndcg_labeling.judges.client.JudgeRequestError`) stops the
run: jobs not started are not sent, the error is raised after the outcomes in hand are stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from ndcg_labeling.judges.client import ChatAnswer, ChatClient, Endpoint
from ndcg_labeling.judges.parser import AnswerError, parse_answer

GRADED, UNPARSEABLE, REFUSED = "graded", "unparseable", "refused"


@dataclass
class Job:
    """One request: ``key`` (its cache key), ``body`` (the request JSON), ``ref`` (the caller's item)."""

    key: str
    body: dict[str, Any]
    ref: Any


@dataclass
class Outcome:
    """The final result of a job: a grade, or none with the raw answer and why (``status``)."""

    job: Job
    status: str
    grade: int | None
    raw: str
    reason: str | None
    prompt_tokens: int
    completion_tokens: int
    attempts: int


@dataclass
class RunStats:
    sent: int = 0  # jobs sent
    graded: int = 0
    skipped: int = 0
    http_requests: int = 0
    http_retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: list[str] = field(default_factory=list)


async def _one(client: ChatClient, job: Job, values: Sequence[int]) -> Outcome:
    tokens = [0, 0]
    answer: ChatAnswer | None = None
    reason = ""
    for attempt in (1, 2):
        answer = await client.complete(job.body)
        tokens[0] += answer.prompt_tokens
        tokens[1] += answer.completion_tokens
        if answer.refusal is not None and not answer.content:
            reason = "the model refused"
            continue
        try:
            grade = parse_answer(answer.content, values)
        except AnswerError as exc:
            reason = str(exc) if answer.content is not None else "no answer text in the response"
            continue
        return Outcome(job, GRADED, grade, answer.content or "", None, tokens[0], tokens[1], attempt)
    assert answer is not None
    status = REFUSED if answer.refusal is not None and not answer.content else UNPARSEABLE
    raw = answer.refusal if status == REFUSED else (answer.content if answer.content is not None else answer.raw)
    return Outcome(job, status, None, raw or "", reason, tokens[0], tokens[1], 2)


async def _run(jobs: Sequence[Job], endpoint: Endpoint, values: Sequence[int], on_outcome: Callable[[Outcome], None],
               concurrency: int, stats: RunStats, transport: httpx.AsyncBaseTransport | None) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Job] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    stop = asyncio.Event()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-writer") as writer:
        async with ChatClient(endpoint, transport=transport) as client:

            async def worker() -> None:
                while not stop.is_set():
                    try:
                        job = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    stats.sent += 1
                    try:
                        outcome = await _one(client, job, values)
                    except Exception as exc:
                        stop.set()
                        stats.errors.append(str(exc))
                        raise
                    await loop.run_in_executor(writer, on_outcome, outcome)
                    stats.graded += outcome.status == GRADED
                    stats.skipped += outcome.status != GRADED
                    stats.prompt_tokens += outcome.prompt_tokens
                    stats.completion_tokens += outcome.completion_tokens

            try:
                results = await asyncio.gather(*(worker() for _ in range(max(1, concurrency))), return_exceptions=True)
            finally:
                stats.http_requests, stats.http_retries = client.requests_sent, client.retries
    for result in results:
        if isinstance(result, BaseException):
            raise result


def run_jobs(jobs: Sequence[Job], endpoint: Endpoint, values: Sequence[int], on_outcome: Callable[[Outcome], None],
             *, concurrency: int = 8, transport: httpx.AsyncBaseTransport | None = None) -> RunStats:
    """Send ``jobs`` (see the module docstring); ``values``: the scale's grades. Returns the counts."""
    if concurrency < 1:
        raise ValueError(f"run_jobs: concurrency must be at least 1, got {concurrency}")
    stats = RunStats()
    if jobs:
        asyncio.run(_run(jobs, endpoint, values, on_outcome, concurrency, stats, transport))
    return stats
