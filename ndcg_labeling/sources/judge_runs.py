"""``judge run``: grade a batch with an OpenAI-compatible model, as a grader of kind ``model``.

The judge sees what people see and nothing more: the batch's guideline (the file people read, at the
version the batch recorded), the query, the document's title, URL and body (cut to
``max_doc_chars``), items in the judge's own random order; never a rank, score, system or other grade.

Each request's cache key is the sha256 of (model, base URL, prompt hash, parameters) (see
:mod:`ndcg_labeling.judges.client`). Before sending, the judge's open items whose key is already
answered are stored from the cache, so a rerun sends no request for them. Each answer is stored as it
arrives, with its judgment (or its skip), in a short transaction (one per answer when the database keeps
pace; else one for the answers that arrived during the previous commit): Ctrl+C loses only the
requests in flight, a kill at most those and the answers of one commit, and a rerun resumes. A run that
fails before its first answer is stored removes what it stored before sending (the run row; the grader
and assignments it added), so a bad key or endpoint leaves the database as it was. A run's token usage
and cost are the sums over the answers it stored (so an interrupted run's usage is known too).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import JudgeRequestError, NdcgLabelingError
from ndcg_labeling.guidelines import Guideline, load_guideline
from ndcg_labeling.judges import client as chat
from ndcg_labeling.judges.parser import response_format
from ndcg_labeling.judges.prompts import ItemText, PromptTemplate, load_template, render
from ndcg_labeling.judges.runner import MAX_CONCURRENCY, Job, Outcome, RunStats, run_jobs
from ndcg_labeling.labels.importing import grader_name_problem
from ndcg_labeling.labels.lookups import require_batch
from ndcg_labeling.labels.transactions import run_in_transaction
from ndcg_labeling.scales import get_scale
from ndcg_labeling.sources import judge_answers as store

SUMMARY_COLUMNS: tuple[str, ...] = ("what", "count")


@dataclass
class JudgeSettings:
    """What ``judge run`` was asked; ``api_key`` is never shown (``repr`` hides it) nor stored."""

    batch: str
    grader: str
    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    prompt: str = "umbrela"
    max_doc_chars: int = 4000
    concurrency: int = 8
    max_requests: int | None = None
    temperature: float = 0.0
    max_tokens: int = 16
    rate_limit: float | None = None
    timeout: float = 60.0
    max_retries: int = 5
    price_in: float | None = None
    price_out: float | None = None
    dry_run: bool = False


@dataclass
class JudgeRunSummary:
    batch: str
    grader: str
    model: str
    template: str
    run_id: int | None = None
    items: int = 0
    already_done: int = 0
    already_skipped: int = 0
    from_cache: int = 0
    to_send: int = 0
    sent: int = 0
    graded: int = 0
    skipped: int = 0
    left: int = 0
    http_requests: int = 0
    http_retries: int = 0
    abandoned: int = 0  # requests given up at their deadline: tokens unknown, so the totals are a lower bound
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    dry_run: bool = False
    interrupted: bool = False
    first_prompt: list[dict[str, str]] | None = None
    notes: list[str] = field(default_factory=list)

    def as_rows(self) -> list[dict[str, Any]]:
        names = ("items", "already_done", "already_skipped", "from_cache", "to_send", "sent", "graded", "skipped",
                 "left", "http_requests", "http_retries", "abandoned", "prompt_tokens", "completion_tokens", "cost")
        return [{"what": n, "count": getattr(self, n)} for n in names]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __str__(self) -> str:
        if self.dry_run:
            return (f"dry run: {self.to_send} requests would be sent for {self.items} open items of {self.grader} in "
                    f"batch {self.batch!r} ({self.from_cache} answered from the cache)")
        text = (f"judge {self.grader} ({self.model}, {self.template}) on batch {self.batch!r}, run {self.run_id}: "
                f"{self.sent} items sent, {self.graded} graded, {self.skipped} skipped, {self.from_cache} from the "
                f"cache, {self.left} left; {self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens")
        if self.cost is not None:
            text += f", cost {self.cost:.4f}"
        if self.abandoned:
            text += (f" (at least: {self.abandoned} requests abandoned at their deadline are not counted; "
                     f"the server may have billed them)")
        return text + (" (interrupted: a rerun resumes)" if self.interrupted else "")


@dataclass
class _Plan:
    batch: m.GradingBatch
    grader_id: int
    guideline: Guideline
    template: PromptTemplate
    params: dict[str, Any]
    items: list[store.JudgeItem]
    done: int
    skipped: int
    new_grader: bool = False  # this call added the grader ...
    added: int = 0  # ... and these assignments (removed again if the run stores no answer: _send)


def _params(settings: JudgeSettings, values: tuple[int, ...]) -> dict[str, Any]:
    return {"temperature": settings.temperature, "max_tokens": settings.max_tokens,
            "response_format": response_format(values)}


def _plan(settings: JudgeSettings, *, session: Session) -> _Plan:
    batch = require_batch(settings.batch, session=session)
    grader, new_grader = store.judge_grader(settings.grader, session=session)
    added = store.ensure_assignments(batch, grader, session=session)
    guideline = load_guideline(batch.scale)
    template = load_template(settings.prompt)
    items, done, skipped = store.open_items(batch, grader, session=session)
    session.expunge(batch)
    return _Plan(batch, grader.id, guideline, template, _params(settings, get_scale(batch.scale).values), items,
                 done, skipped, new_grader, added)


# The float options' ranges: a value outside is refused before anything is stored (NaN and infinity
# included: neither is JSON, and a NaN temperature cannot be stored). The temperature range is the
# Chat Completions API's; the timeout's upper end (a day) keeps it within what a socket accepts; the
# price's (1e6 per million tokens, a unit price of 1 per token) keeps a run's cost a finite number.
MAX_TEMPERATURE = 2.0
MAX_TIMEOUT_S = 86_400.0
MAX_PRICE = 1e6


def _check_float(name: str, value: float | None, low: float, high: float, *, open_low: bool = False) -> None:
    """``Error: NAME: must be ...`` unless ``value`` is None or a finite number in [low, high] (or (low, high])."""
    if value is None or (math.isfinite(value) and (value > low if open_low else value >= low) and value <= high):
        return
    lower = f"above {low:g}" if open_low else f"{low:g} or more"
    upper = "" if math.isinf(high) else f" and at most {high:g}"
    raise NdcgLabelingError(f"{name}: must be a finite number {lower}{upper}, got {value}")


def _check(settings: JudgeSettings) -> None:
    if not 1 <= settings.concurrency <= MAX_CONCURRENCY:
        raise NdcgLabelingError(f"--concurrency must be at least 1 and at most {MAX_CONCURRENCY}, "
                                f"got {settings.concurrency}")
    if settings.max_requests is not None and settings.max_requests < 0:
        raise NdcgLabelingError(f"--max-requests must be 0 or more, got {settings.max_requests}")
    _check_float("--temperature", settings.temperature, 0.0, MAX_TEMPERATURE)
    _check_float("--timeout", settings.timeout, 0.0, MAX_TIMEOUT_S, open_low=True)
    _check_float("--rate-limit", settings.rate_limit, 0.0, math.inf, open_low=True)
    _check_float("--price-in", settings.price_in, 0.0, MAX_PRICE)
    _check_float("--price-out", settings.price_out, 0.0, MAX_PRICE)
    if settings.max_doc_chars < 1:
        raise NdcgLabelingError(f"--max-doc-chars must be at least 1, got {settings.max_doc_chars}")
    problem = grader_name_problem(settings.grader)
    if problem:
        raise NdcgLabelingError(f"--grader: {problem}")
    chat.normalize_base_url(settings.base_url)
    if not settings.model.strip():
        raise NdcgLabelingError("--model must name a model")


def _jobs(plan: _Plan, settings: JudgeSettings) -> dict[str, Job]:
    """One job per distinct request key (two items with the same text share one request)."""
    base_url = chat.normalize_base_url(settings.base_url)
    jobs: dict[str, Job] = {}
    for item in plan.items:
        messages = render(plan.template, plan.guideline, ItemText(item.query, item.title, item.url, item.body),
                          max_doc_chars=settings.max_doc_chars)
        key = chat.cache_key(settings.model, base_url, messages, plan.params)
        if key in jobs:
            jobs[key].ref.append(item)
        else:
            jobs[key] = Job(key, chat.request_body(settings.model, messages, plan.params), [item])
    return jobs


def run_judge(*, engine: Engine, settings: JudgeSettings, progress: Callable[[int, int], None] | None = None,
              transport: httpx.AsyncBaseTransport | None = None) -> JudgeRunSummary:
    """Grade the judge's open items of the batch (module docstring). ``progress(done, total)`` after each
    stored answer. Ctrl+C returns the summary with ``interrupted=True``; what was answered is stored."""
    _check(settings)
    if settings.dry_run:  # nothing is written: the judge's order is worked out and rolled back
        with Session(engine) as session:
            plan = _plan(settings, session=session)
            session.rollback()
    else:
        plan = run_in_transaction(engine, lambda s: _plan(settings, session=s))
    summary = JudgeRunSummary(settings.batch, settings.grader, settings.model,
                              f"{plan.template.name} {plan.template.version}", items=len(plan.items),
                              already_done=plan.done, already_skipped=plan.skipped, dry_run=settings.dry_run)
    if plan.guideline.sha256 != plan.batch.guideline_sha256:
        summary.notes.append(f"the guideline file {plan.guideline.path} changed since batch {plan.batch.name!r} was "
                             f"created (version {plan.batch.guideline_version}); the prompt uses the file as it is now")
    jobs = _jobs(plan, settings)
    hits = run_in_transaction(engine, lambda s: store.cached(list(jobs), session=s))
    todo = [job for key, job in jobs.items() if key not in hits]
    summary.from_cache = sum(len(jobs[k].ref) for k in hits)
    limit = len(todo) if settings.max_requests is None else min(settings.max_requests, len(todo))
    summary.to_send, summary.left = limit, len(todo) - limit
    if settings.dry_run:
        first = todo[0] if todo else next(iter(jobs.values()), None)
        summary.first_prompt = first.body["messages"] if first is not None else None
        return summary
    prov = store.Provenance(None, settings.model, plan.template.version, plan.template.sha256, settings.temperature,
                            chat.public_endpoint(settings.base_url, settings.api_key))
    if hits:
        run_in_transaction(engine, lambda s: _store_hits(plan, jobs, hits, prov, session=s))
    if not todo[:limit]:
        return summary
    return _send(engine, settings, plan, todo[:limit], prov, summary, progress, transport)


def _store_hits(plan: _Plan, jobs: dict[str, Job], hits: dict[str, tuple[int, str, int | None]],
                prov: store.Provenance, *, session: Session) -> None:
    for key, (rid, _status, grade) in hits.items():
        for item in jobs[key].ref:
            store.apply_answer(item, session=session, batch=plan.batch, grader_id=plan.grader_id, response_id=rid,
                               grade=grade, reason="cached answer did not parse" if grade is None else None,
                               prompt_sha256=chat.prompt_sha256(jobs[key].body["messages"]), prov=prov)


def _new_run(settings: JudgeSettings, plan: _Plan, *, session: Session) -> int:
    run = m.JudgeRun(batch_id=plan.batch.id, grader_id=plan.grader_id, model=settings.model,
                     base_url=chat.normalize_base_url(settings.base_url), template_name=plan.template.name,
                     template_version=plan.template.version, template_sha256=plan.template.sha256,
                     temperature=settings.temperature, params={k: v for k, v in plan.params.items()},
                     price_in=settings.price_in, price_out=settings.price_out, started_at=m.utcnow())
    session.add(run)
    session.flush()
    return run.id


def _send(engine: Engine, settings: JudgeSettings, plan: _Plan, todo: list[Job], prov: store.Provenance,
          summary: JudgeRunSummary, progress: Callable[[int, int], None] | None,
          transport: httpx.AsyncBaseTransport | None) -> JudgeRunSummary:
    run_id = run_in_transaction(engine, lambda s: _new_run(settings, plan, session=s))
    summary.run_id = prov.run_id = run_id
    base_url = chat.normalize_base_url(settings.base_url)
    total = sum(len(job.ref) for job in todo)
    stored = [0]
    usage_problems: list[str] = []

    def on_outcomes(outcomes: list[Outcome]) -> None:
        def work(session: Session) -> None:
            for outcome in outcomes:
                messages = outcome.job.body["messages"]
                prompt_hash = chat.prompt_sha256(messages)
                reason = "; ".join(r for r in (outcome.reason, outcome.usage_problem) if r) or None
                rid = store.store_response(outcome.job.key, session=session, run_id=run_id, model=settings.model,
                                           base_url=base_url, prompt_sha256=prompt_hash, status=outcome.status,
                                           grade=outcome.grade, raw=outcome.raw, reason=reason,
                                           tokens=(outcome.prompt_tokens, outcome.completion_tokens))
                for item in outcome.job.ref:
                    store.apply_answer(item, session=session, batch=plan.batch, grader_id=plan.grader_id,
                                       response_id=rid, grade=outcome.grade, reason=outcome.reason,
                                       prompt_sha256=prompt_hash, prov=prov)
        run_in_transaction(engine, work)
        stored[0] += sum(len(outcome.job.ref) for outcome in outcomes)
        usage_problems.extend(o.usage_problem for o in outcomes if o.usage_problem)
        if progress is not None:
            progress(stored[0], total)

    endpoint = chat.Endpoint(base_url, settings.api_key, timeout=settings.timeout, max_retries=settings.max_retries,
                             rate=settings.rate_limit)
    finished = False
    stats = RunStats()  # kept as the run goes: an interrupted or failed run has its counts too
    try:
        run_jobs(todo, endpoint, get_scale(plan.batch.scale).values, on_outcomes, concurrency=settings.concurrency,
                 transport=transport, stats=stats)
        finished = True
    except KeyboardInterrupt:
        summary.interrupted = True
    except Exception as exc:
        # Nothing answered: what this call stored before sending goes again, as for any bad input.
        if stored[0] == 0 and not summary.from_cache and run_in_transaction(engine, lambda s: store.undo_start(
                run_id, session=s, batch_id=plan.batch.id, grader_id=plan.grader_id, assignments=bool(plan.added),
                grader=plan.new_grader)):
            if isinstance(exc, JudgeRequestError):
                raise JudgeRequestError(f"{exc}; nothing was stored") from None
            raise
        if isinstance(exc, JudgeRequestError):
            raise JudgeRequestError(f"{exc}; {stored[0]} answers of run {run_id} are stored: a rerun resumes") from None
        raise
    finally:
        summary.sent, summary.http_requests, summary.http_retries = stats.sent, stats.http_requests, stats.http_retries
        summary.abandoned = stats.abandoned
        fields = {"n_items": summary.items, "n_cached": summary.from_cache, "n_sent": summary.sent}
        usage = run_in_transaction(engine, lambda s: store.finish_run(
            run_id, session=s, finished=finished, fields=fields, prices=(settings.price_in, settings.price_out)))
        summary.prompt_tokens, summary.completion_tokens, summary.cost = usage
        if usage_problems:
            summary.notes.append(f"{len(usage_problems)} answers reported a usage that is not a token count "
                                 f"({usage_problems[0]}): their tokens count as 0 in the totals and the cost")
        if stats.abandoned:
            summary.notes.append(f"{stats.abandoned} requests were abandoned at their deadline (--timeout): the "
                                 f"tokens the server may have billed for them are unknown, so the token totals and "
                                 f"the cost are lower bounds")
    graded, skipped, _, _ = run_in_transaction(engine, lambda s: store.run_usage(run_id, session=s))
    summary.graded, summary.skipped = graded, skipped
    summary.left += len(todo) - (graded + skipped)
    return summary
