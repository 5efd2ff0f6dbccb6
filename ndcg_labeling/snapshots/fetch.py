"""Send one request per query to a search engine, ``concurrency`` at a time, and read each result list.

Every request goes through :class:`ndcg_labeling.io.http.RetryingHttp` (429 with ``Retry-After``, 5xx,
timeouts retried with backoff, as ``judge run`` does). The first request that fails for good stops the
whole fetch with a :class:`SearchEngineError` naming the query: the caller stores nothing. The credential
travels in one header; every text quoted from an engine is stripped of it first.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from ndcg_labeling.errors import NdcgLabelingError, SearchEngineError
from ndcg_labeling.io.http import GaveUp, RetryingHttp, RetryPolicy
from ndcg_labeling.snapshots.engine_kinds import Hits, auth_header, endpoint, error_detail, read_hits

MAX_BODY = 16 << 20  # 16 MiB: a result list of 1,000 hits with their sources is far below


@dataclass(frozen=True)
class Target:
    """Where and how to ask: kind, endpoint, paths, pacing, and the credential (never shown: no repr)."""

    name: str
    kind: str
    url: str
    index: str | None
    id_path: str
    score_path: str | None
    key_env: str | None
    secret: str | None = field(default=None, repr=False)
    key_header: str | None = None
    timeout: float = 10.0
    concurrency: int = 8
    rate: float | None = None
    max_retries: int = 5
    backoff: float = 0.5
    max_wait: float = 60.0


@dataclass
class Fetched:
    """Per query (in the order asked) its result list, and the request counts."""

    hits: list[Hits]
    requests: int = 0
    retries: int = 0


def _redact(text: str, secret: str | None) -> str:
    """``text`` without the credential in any form it travels or could be echoed in: as given, as the
    Basic header's base64, and the password of a ``user:password`` alone."""
    if not secret:
        return text
    forms = [secret, base64.b64encode(secret.encode()).decode()]
    if ":" in secret and len(secret.split(":", 1)[1]) >= 4:
        forms.append(secret.split(":", 1)[1])
    for form in forms:
        text = text.replace(form, "[credential]")
    return text


async def _one(http: RetryingHttp, target: Target, url: str, query_id: str, body: Any, depth: int,
               gate: asyncio.Semaphore) -> Hits:
    async with gate:
        try:
            reply = await http.send("POST", url, json=body)
        except GaveUp as exc:
            raise SearchEngineError(f"{target.name}: query {query_id!r}: {url}: {exc}") from None
    where = f"{target.name}: query {query_id!r}: {url}"
    if reply.status in (401, 403):
        via = f"${target.key_env}" if target.key_env else "no credential: add one with --key-env"
        raise SearchEngineError(f"{where}: HTTP {reply.status}: the engine refused the credential ({via})")
    if reply.status != 200:
        detail = _redact(error_detail(reply.text), target.secret)
        raise SearchEngineError(f"{where}: HTTP {reply.status}{': ' + detail if detail else ''}")
    if reply.cut:
        raise SearchEngineError(f"{where}: the response is larger than {MAX_BODY:,} bytes")
    try:
        parsed = json.loads(reply.text)
        return read_hits(parsed, target.id_path, target.score_path, depth)
    except ValueError:
        raise SearchEngineError(f"{where}: the response is not JSON: "
                                f"{_redact(' '.join(reply.text.split())[:120], target.secret)!r}") from None
    except NdcgLabelingError as exc:
        raise SearchEngineError(f"{where}: {_redact(str(exc), target.secret)}") from None


async def _all(target: Target, bodies: Sequence[tuple[str, Any]], depth: int,
               transport: httpx.AsyncBaseTransport | None) -> Fetched:
    url = endpoint(target.kind, target.url, target.index)
    headers = {"Content-Type": "application/json", **auth_header(target.kind, target.secret, target.key_env, target.key_header)}
    policy = RetryPolicy(timeout=target.timeout, max_retries=target.max_retries, backoff=target.backoff,
                         max_wait=target.max_wait, rate=target.rate)
    gate = asyncio.Semaphore(max(1, target.concurrency))
    async with RetryingHttp(policy, headers=headers, max_body=MAX_BODY, transport=transport) as http:
        tasks = [asyncio.ensure_future(_one(http, target, url, qid, body, depth, gate)) for qid, body in bodies]
        try:
            hits = await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return Fetched(list(hits), http.requests_sent, http.retries)


def fetch_all(target: Target, bodies: Sequence[tuple[str, Any]], depth: int, *,
              transport: httpx.AsyncBaseTransport | None = None) -> Fetched:
    """Ask ``target`` for each ``(query id, request body)``; the first ``depth`` results of each."""
    return asyncio.run(_all(target, bodies, depth, transport))
