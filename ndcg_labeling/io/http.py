"""HTTP requests with retries, ``Retry-After``, a rate limit, a whole-request deadline and a bounded body.

The one owner of the retry policy of the tool's HTTP clients (the LLM judge's Chat Completions client,
the search engines of ``snapshot take``), after the ``openai`` package's design: a 408, 409, 429, any
5xx, a timeout or a broken connection is retried up to ``max_retries`` times; the wait is the
``Retry-After`` header when the server sends one (seconds or an HTTP date, capped at ``max_wait``), else
``backoff * 2**attempt`` seconds with jitter (x0.5 to x1), capped at ``max_wait``. Any other status is
handed back to the caller at once (a bad key, an unknown index: retrying cannot help). A rate limit
(``rate`` requests per second) spaces the starts of requests. ``timeout`` bounds the whole request, from
sending to the last byte (a server dripping bytes cannot hold a request longer); a request given up at
its deadline is counted (``abandoned``). A body is read up to ``max_body`` bytes; the rest is not read.

Nothing here sees a credential except as a header value handed in; no message built here quotes a
header or a body (the callers redact what they quote).
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib.util
import random
import sys
import time
from dataclasses import dataclass
from typing import Any

import httpx

RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))


def _remember_sniffio_is_missing() -> None:
    """httpcore (1.0) asks ``import sniffio`` which event loop runs, on every request; where sniffio is not
    installed each ask is a failed import that searches all of ``sys.path`` again (0.5-1 ms: 40% of the
    client's time in ``snapshot take``'s profile, 1,000 requests). A ``None`` in ``sys.modules`` is Python's
    own record of a module known to be missing: the import then fails at once, and httpcore takes asyncio,
    which is what runs here."""
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait for one request, how often and how long to retry, and the pace of starts."""

    timeout: float = 60.0  # seconds for a whole request
    max_retries: int = 5
    backoff: float = 0.5  # seconds before the first retry without Retry-After (doubling, with jitter)
    max_wait: float = 60.0  # the longest wait between two attempts
    rate: float | None = None  # requests per second; None: no limit

    def wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_wait)
        return float(min(self.backoff * 2**attempt * (0.5 + random.random() / 2), self.max_wait))


@dataclass
class Reply:
    """A final answer: status, headers, the body text (at most ``max_body`` bytes of it, decoded) and
    whether the body was longer (then the rest was not read)."""

    status: int
    headers: httpx.Headers
    text: str
    cut: bool


class GaveUp(Exception):
    """Every attempt failed with a retryable status, a timeout or a broken connection: ``last`` says how
    the last one failed (``HTTP 503``, ``no answer within 10 s``), ``attempts`` how many were made."""

    def __init__(self, last: str, attempts: int) -> None:
        super().__init__(f"{last} after {attempts} attempts")
        self.last, self.attempts = last, attempts


class RetryingHttp:
    """An ``httpx.AsyncClient`` behind the retry policy; use as ``async with RetryingHttp(...)``.

    ``requests_sent``, ``retries`` and ``abandoned`` count what was done (for the callers' summaries)."""

    def __init__(self, policy: RetryPolicy, *, headers: dict[str, str] | None = None, max_body: int = 1 << 20,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.policy = policy
        self.max_body = max_body
        _remember_sniffio_is_missing()
        self._http = httpx.AsyncClient(headers=headers, timeout=policy.timeout, transport=transport,
                                       limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
        self._next_start = 0.0
        self._lock = asyncio.Lock()
        self.requests_sent = 0
        self.retries = 0
        self.abandoned = 0

    async def __aenter__(self) -> RetryingHttp:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def _pace(self) -> None:
        if not self.policy.rate:
            return
        async with self._lock:
            now = time.monotonic()
            wait = self._next_start - now
            self._next_start = max(now, self._next_start) + 1.0 / self.policy.rate
        if wait > 0:
            await asyncio.sleep(wait)

    async def send(self, method: str, url: str, *, json: Any = None) -> Reply:
        """Send one request, retrying as the module docstring says; the first answer whose status is not
        retryable (2xx included), or :class:`GaveUp`."""
        last = ""
        for attempt in range(self.policy.max_retries + 1):
            await self._pace()
            self.requests_sent += 1
            retry_after = None
            try:
                async with asyncio.timeout(self.policy.timeout):  # the whole request, not one read
                    reply = await self._once(method, url, json)
            except (TimeoutError, httpx.TimeoutException):
                self.abandoned += 1
                last = f"no answer within {self.policy.timeout:g} s"
            except httpx.TransportError as exc:
                last = f"connection failed ({type(exc).__name__})"
            else:
                if reply.status not in RETRY_STATUS:
                    return reply
                last = f"HTTP {reply.status}"
                retry_after = parse_retry_after(reply.headers.get("retry-after"))
            if attempt < self.policy.max_retries:
                self.retries += 1
                await asyncio.sleep(self.policy.wait(attempt, retry_after))
        raise GaveUp(last, self.policy.max_retries + 1)

    async def _once(self, method: str, url: str, body: Any) -> Reply:
        async with self._http.stream(method, url, json=body) as response:
            chunks: list[bytes] = []
            size, cut = 0, False
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self.max_body:
                    chunks.append(chunk[:len(chunk) - (size - self.max_body)])
                    cut = True
                    break
                chunks.append(chunk)
            text = b"".join(chunks).decode(response.encoding or "utf-8", errors="replace")
        return Reply(response.status_code, response.headers, text, cut)
