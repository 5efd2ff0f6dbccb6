"""Many judge requests at a bounded concurrency, each outcome handed over as it arrives.

:func:`run_jobs` sends one request per job (at most ``concurrency`` at once), parses the answer with
:func:`~ndcg_labeling.judges.parser.parse_answer`, asks once more when the answer does not parse (a
refusal included), and hands the final outcome of each job to ``on_outcomes`` in a single writer
thread, in arrival order, while the workers go on sending: each call gets the outcomes that arrived
while the previous one was being stored (one short transaction each). Ctrl+C waits until every
outcome in hand is stored, so it loses only the requests in flight; a kill loses those and the
outcomes waiting for the writer (those of one commit at most). A failed store stops the run. A request error that
outlasts the client's retries (:class:`~ndcg_labeling.errors.JudgeRequestError`) stops the
run: jobs not started are not sent, the error is raised after the outcomes in hand are stored.

The counts (:class:`RunStats`) are kept as the run goes, in the caller's object, so that an
interrupted or failed run still says how many jobs it sent, how many HTTP requests it made and how
many it abandoned at their deadline. The raw answer and the reason of an outcome are as they may be
stored: the API key redacted and the raw text cut (:func:`ndcg_labeling.judges.client.kept_text`).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from ndcg_labeling.errors import AnswerError
from ndcg_labeling.judges.client import ChatAnswer, ChatClient, Endpoint
from ndcg_labeling.judges.parser import parse_answer

GRADED, UNPARSEABLE, REFUSED = "graded", "unparseable", "refused"
MAX_CONCURRENCY = 64  # requests in flight at once: more buys nothing from one endpoint, and costs memory


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
    usage_problem: str | None = None  # a usage count of an attempt was not a token count (ignored: 0)


@dataclass
class RunStats:
    sent: int = 0  # jobs sent (started: an interrupted run counts those in flight)
    graded: int = 0
    skipped: int = 0
    http_requests: int = 0
    http_retries: int = 0
    abandoned: int = 0  # HTTP requests given up at their deadline: their tokens are unknown (maybe billed)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: list[str] = field(default_factory=list)


async def _one(client: ChatClient, job: Job, values: Sequence[int]) -> Outcome:
    tokens = [0, 0]
    answer: ChatAnswer | None = None
    reason = ""
    usage_problem: str | None = None
    for attempt in (1, 2):
        answer = await client.complete(job.body)
        tokens[0] += answer.prompt_tokens
        tokens[1] += answer.completion_tokens
        if usage_problem is None and answer.usage_problem is not None:  # it may quote a string the server sent
            usage_problem = client.kept(answer.usage_problem)
        if answer.refusal is not None and not answer.content:
            reason = "the model refused"
            continue
        try:
            grade = parse_answer(answer.content, values)
        except AnswerError as exc:
            reason = str(exc) if answer.content is not None else (answer.problem or "no answer text in the response")
            continue
        return Outcome(job, GRADED, grade, client.kept(answer.content or ""), None, tokens[0], tokens[1], attempt,
                       usage_problem)
    if answer is None:  # pragma: no cover (the loop above runs at least once)
        raise RuntimeError("_one: no attempt made")
    status = REFUSED if answer.refusal is not None and not answer.content else UNPARSEABLE
    raw = answer.refusal if status == REFUSED else (answer.content if answer.content is not None else answer.raw)
    return Outcome(job, status, None, client.kept(raw or ""), client.kept(reason), tokens[0], tokens[1], 2,
                   usage_problem)


class _Writer:
    """One thread that stores outcomes in arrival order: each call of ``store`` gets every outcome that
    arrived while the previous call ran (one short transaction for them, instead of one per answer: a
    commit can take longer than an answer on a busy disk). ``close`` waits until all are stored."""

    def __init__(self, store: Callable[[list[Outcome]], None]) -> None:
        self.store = store
        self.queue: queue.SimpleQueue[Outcome | None] = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name="judge-writer", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        done = False
        while not done:
            batch = []
            item = self.queue.get()
            while item is not None:
                batch.append(item)
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
            done = item is None
            if batch and self.error is None:
                try:
                    self.store(batch)
                except BaseException as exc:  # raised in the caller's thread by close()
                    self.error = exc

    def put(self, outcome: Outcome) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put(outcome)

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


async def _run(jobs: Sequence[Job], endpoint: Endpoint, values: Sequence[int], writer: _Writer,
               concurrency: int, stats: RunStats, transport: httpx.AsyncBaseTransport | None) -> None:
    todo: asyncio.Queue[Job] = asyncio.Queue()
    for job in jobs:
        todo.put_nowait(job)
    stop = asyncio.Event()
    async with ChatClient(endpoint, transport=transport) as client:

        async def worker() -> None:
            while not stop.is_set():
                try:
                    job = todo.get_nowait()
                except asyncio.QueueEmpty:
                    return
                stats.sent += 1
                try:
                    outcome = await _one(client, job, values)
                    writer.put(outcome)
                except Exception as exc:
                    stop.set()
                    stats.errors.append(str(exc))
                    raise
                stats.graded += outcome.status == GRADED
                stats.skipped += outcome.status != GRADED
                stats.prompt_tokens += outcome.prompt_tokens
                stats.completion_tokens += outcome.completion_tokens

        try:
            results = await asyncio.gather(*(worker() for _ in range(max(1, concurrency))), return_exceptions=True)
        finally:  # on Ctrl+C (the task is cancelled) and on a failed request too
            stats.http_requests, stats.http_retries = client.requests_sent, client.retries
            stats.abandoned = client.abandoned
    for result in results:
        if isinstance(result, BaseException):
            raise result


def run_jobs(jobs: Sequence[Job], endpoint: Endpoint, values: Sequence[int],
             on_outcomes: Callable[[list[Outcome]], None], *, concurrency: int = 8,
             transport: httpx.AsyncBaseTransport | None = None, stats: RunStats | None = None) -> RunStats:
    """Send ``jobs`` (see the module docstring); ``values``: the scale's grades; ``on_outcomes`` stores a
    list of outcomes (in the writer thread). Returns the counts, kept in ``stats`` when given (so that
    the caller has them when the run is interrupted or fails)."""
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"run_jobs: concurrency must be 1 to {MAX_CONCURRENCY}, got {concurrency}")
    stats = RunStats() if stats is None else stats
    if not jobs:
        return stats
    writer = _Writer(on_outcomes)
    try:
        asyncio.run(_run(jobs, endpoint, values, writer, concurrency, stats, transport))
    finally:
        writer.close()  # on Ctrl+C too: every answer in hand is stored before the interrupt goes on
    return stats
