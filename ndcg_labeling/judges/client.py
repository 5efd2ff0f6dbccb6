"""The Chat Completions client: one request body, its cache key, retries and a rate limit.

A request is a pure function of (model, messages, parameters), so its cache key is a hash: the
sha256 of the model, the base URL, the sha256 of the prompt (the messages) and the other parameters
(temperature, max_tokens, seed, response_format), as canonical JSON. The API key is not part of it:
the same request under another key is the same request.

Retries (after the ``openai`` package's design): a 429, any 5xx, a timeout or a broken connection is
retried up to ``max_retries`` times; the wait is the ``Retry-After`` header when the server sends one
(seconds or an HTTP date, capped at ``max_wait``), else ``backoff * 2**attempt`` seconds with jitter,
capped at ``max_wait``. Another 4xx (a bad key, an unknown model) stops the run at once. A rate limit
(``rate`` requests per second) spaces the starts of requests. The key travels in the
``Authorization`` header only: it is never in a message, a log line, the cache key or the database
(every error text is stripped of it before it leaves this module).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from ndcg_labeling.errors import JudgeRequestError, NdcgLabelingError

RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))


def prompt_sha256(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def request_body(model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of a Chat Completions request."""
    return {"model": model, "messages": messages, **params}


def cache_key(model: str, base_url: str, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """sha256 of (model, base URL, prompt sha256, parameters) as canonical JSON."""
    canon = json.dumps({"model": model, "base_url": normalize_base_url(base_url), "prompt": prompt_sha256(messages),
                        "params": params}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def normalize_base_url(url: str) -> str:
    """``http://host:8000/v1/`` -> ``http://host:8000/v1``; a URL without a scheme is an error."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise NdcgLabelingError(f"--base-url must start with http:// or https://, got {url!r}")
    return url


@dataclass
class ChatAnswer:
    """One answer: ``content`` (None when the model refused or sent none), the refusal text if any,
    the raw response text (kept for a skipped item), and the token usage the server reported."""

    content: str | None
    refusal: str | None
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_problem: str | None = None  # why the usage the server reported was ignored (counted as 0 tokens)


# More tokens than any model's context holds: a count above it (or negative, or not a JSON integer) is
# not a token count, and is ignored rather than stored. Every count kept fits a signed 64-bit integer, and so
# does every run's sum: a run stores at most one answer per row of judge_responses (a 32-bit id), and
# (2**31 - 1) * 10**7 < 2**63, the most the BIGINT token counts of migration 0014 hold (a test checks it).
# A bound of 2**63 - 1 for one answer would let two answers overflow the run's sum at its end.
MAX_TOKENS = 10_000_000


def _usage(usage: object) -> tuple[int, int, str | None]:
    """``(prompt tokens, completion tokens, problem)`` of a response's ``usage``; a missing count is 0;
    any count that is not an integer in 0..MAX_TOKENS makes both 0 with the problem said."""
    if usage is None:
        return 0, 0, None
    if not isinstance(usage, dict):
        return 0, 0, f"usage ignored: not an object ({type(usage).__name__})"
    counts = []
    for name in ("prompt_tokens", "completion_tokens"):
        value = usage.get(name)
        if value is None:
            value = 0
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
            shown = json.dumps(value)  # json.loads made it: an int has at most 4300 digits
            shown = shown if len(shown) <= 40 else shown[:40] + "..."
            return 0, 0, f"usage ignored: {name} {shown} is not a token count (0 to {MAX_TOKENS:,})"
        counts.append(value)
    return counts[0], counts[1], None


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


def read_answer(text: str) -> ChatAnswer:
    """A Chat Completions response body as an answer; a body that is not the expected JSON is an answer
    without content (the raw text kept), so that the parser refuses it like any bad answer."""
    try:
        data = json.loads(text)
        message = data["choices"][0]["message"]
        content = message.get("content")
        refusal = message.get("refusal")
        prompt_tokens, completion_tokens, problem = _usage(data.get("usage"))
        return ChatAnswer(content if isinstance(content, str) else None, refusal if isinstance(refusal, str) else None,
                          text, prompt_tokens, completion_tokens, problem)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return ChatAnswer(None, None, text)


@dataclass
class Endpoint:
    """Where and how to send: the base URL (``.../v1``), the key (never shown: ``repr`` hides it)."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    max_retries: int = 5
    backoff: float = 0.5
    max_wait: float = 60.0
    rate: float | None = None  # requests per second; None: no limit


class ChatClient:
    """POST ``{base_url}/chat/completions`` with retries; use as ``async with ChatClient(...)``."""

    def __init__(self, endpoint: Endpoint, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.endpoint = endpoint
        self.url = normalize_base_url(endpoint.base_url) + "/chat/completions"
        headers = {"Content-Type": "application/json"}
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        self._http = httpx.AsyncClient(headers=headers, timeout=endpoint.timeout, transport=transport,
                                       limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
        self._next_start = 0.0
        self._lock = asyncio.Lock()
        self.requests_sent = 0
        self.retries = 0

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    def _redact(self, text: str) -> str:
        key = self.endpoint.api_key
        return text.replace(key, "[key]") if key else text

    async def _pace(self) -> None:
        if not self.endpoint.rate:
            return
        async with self._lock:
            now = time.monotonic()
            wait = self._next_start - now
            self._next_start = max(now, self._next_start) + 1.0 / self.endpoint.rate
        if wait > 0:
            await asyncio.sleep(wait)

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.endpoint.max_wait)
        return float(min(self.endpoint.backoff * 2**attempt * (0.5 + random.random() / 2), self.endpoint.max_wait))

    async def complete(self, body: dict[str, Any]) -> ChatAnswer:
        """Send one request (retrying as the module docstring says) and return the answer."""
        last = ""
        for attempt in range(self.endpoint.max_retries + 1):
            await self._pace()
            self.requests_sent += 1
            retry_after = None
            try:
                response = await self._http.post(self.url, json=body)
            except httpx.TimeoutException:
                last = f"no answer within {self.endpoint.timeout:g} s"
            except httpx.TransportError as exc:
                last = f"connection failed ({type(exc).__name__})"
            else:
                if response.status_code == 200:
                    return read_answer(response.text)
                if response.status_code not in RETRY_STATUS:
                    raise JudgeRequestError(self._refused(response))
                last = f"HTTP {response.status_code}"
                retry_after = parse_retry_after(response.headers.get("retry-after"))
            if attempt < self.endpoint.max_retries:
                self.retries += 1
                await asyncio.sleep(self._wait(attempt, retry_after))
        raise JudgeRequestError(f"{self.url}: {last} after {self.endpoint.max_retries + 1} attempts")

    def _refused(self, response: httpx.Response) -> str:
        status = response.status_code
        if status in (401, 403):
            return f"{self.url}: HTTP {status}: the endpoint refused the API key (check --api-key-env)"
        try:
            detail = str(response.json().get("error", {}).get("message", ""))
        except (ValueError, AttributeError):
            detail = response.text
        detail = " ".join(self._redact(detail).split())[:300]
        return f"{self.url}: HTTP {status}{': ' + detail if detail else ''}"
