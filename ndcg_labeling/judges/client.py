"""The Chat Completions client: one request body, its cache key, retries and a rate limit.

A request is a pure function of (model, messages, parameters), so its cache key is a hash: the
sha256 of the model, the base URL, the sha256 of the prompt (the messages) and the other parameters
(temperature, max_tokens, seed, response_format), as canonical JSON. The API key is not part of it:
the same request under another key is the same request.

Retries, ``Retry-After``, the rate limit and the whole-request deadline are :mod:`ndcg_labeling.io.http`'s
(the one owner of that policy, shared with ``snapshot take``): a 429, any 5xx, a timeout or a broken
connection is retried; another 4xx (a bad key, an unknown model) stops the run at once. The key travels in the
``Authorization`` header only: it is never in a message, a log line, the cache key or the database
(every error text is stripped of it before it leaves this module, and so is every raw answer kept:
:meth:`ChatClient.kept`).

Bounds, so that no answer can exhaust memory or the parser (issue 46): ``timeout`` is a deadline for
the whole request, from sending to the last byte of the answer (a server dripping bytes cannot hold a
request longer), and a request abandoned at its deadline is counted (``abandoned``: the server may
have billed its tokens, which no answer reports). A response body is read up to
:data:`MAX_RESPONSE_BYTES`; a longer one is not read further and is an answer without content (its
item is skipped like any unparseable answer). A body is parsed only when it is nested at most
:data:`MAX_RESPONSE_DEPTH` deep; an integer of more than 1,000 digits in it is not converted (no token count). A raw
answer kept for the database is cut to :data:`MAX_RAW_CHARS` characters (:func:`kept_text`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from ndcg_labeling.errors import JudgeRequestError, NdcgLabelingError
from ndcg_labeling.io.http import (
    RETRY_STATUS as RETRY_STATUS,  # re-exported: the judge's callers name them here
)
from ndcg_labeling.io.http import GaveUp, Reply, RetryingHttp, RetryPolicy
from ndcg_labeling.io.http import parse_retry_after as parse_retry_after
from ndcg_labeling.judges.parser import json_size_problem

MAX_RESPONSE_BYTES = 1 << 20  # 1 MiB: a Chat Completions answer of 16 tokens is under 2 KB
MAX_RESPONSE_DEPTH = 32  # nesting a response body may have before it is parsed (a real one has 4)
MAX_RAW_CHARS = 4_000  # characters of a raw answer kept in the database (judge_responses.raw)


def kept_text(text: str, api_key: str | None) -> str:
    """``text`` as it may be stored: the API key replaced by ``[key]`` wherever it occurs, then cut to
    :data:`MAX_RAW_CHARS` characters with a note of the length it had (the key is replaced first, so a
    cut never leaves a piece of it)."""
    if api_key:
        text = text.replace(api_key, "[key]")
    if len(text) > MAX_RAW_CHARS:
        text = f"{text[:MAX_RAW_CHARS]} [... cut: {len(text):,} characters in all]"
    return text


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
    problem: str | None = None  # why the body was not read as a Chat Completions answer (too large, too deep)


# More tokens than any model's context holds: a count above it (or negative, or not a JSON integer) is
# not a token count, and is ignored rather than stored. Every count kept fits a signed 64-bit integer, and so
# does every run's sum: a run stores at most one answer per row of judge_responses (a 32-bit id), and
# (2**31 - 1) * 10**7 < 2**63, the most the BIGINT token counts of migration 0014 hold (a test checks it).
# A bound of 2**63 - 1 for one answer would let two answers overflow the run's sum at its end.
MAX_TOKENS = 10_000_000


# A JSON integer of more digits than this in a response body is not converted (Python refuses more than
# 4,300 digits with a ValueError, which would lose the whole answer over its usage).
_MAX_JSON_DIGITS = 1_000


class _HugeInt(int):
    """A JSON integer of more than _MAX_JSON_DIGITS digits, never converted: it stands as -1 with its
    digit count, so it is no token count."""

    digits: int


def _json_int(text: str) -> int:
    n = len(text.lstrip("-"))
    if n <= _MAX_JSON_DIGITS:
        return int(text)
    huge = _HugeInt(-1)
    huge.digits = n
    return huge


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
            shown = _shown_count(value)
            return 0, 0, f"usage ignored: {name} {shown} is not a token count (0 to {MAX_TOKENS:,})"
        counts.append(value)
    return counts[0], counts[1], None


def _shown_count(value: object) -> str:
    """A bad token count as a note may quote it: a number as written (cut to 40 characters), anything else
    by its kind and size only, never its text (a server can echo the API key there, and a cut key would
    escape the redaction of stored answers)."""
    if isinstance(value, _HugeInt):
        return f"(a number of {value.digits:,} digits)"
    if isinstance(value, int | float) and not isinstance(value, bool):
        shown = json.dumps(value)
        return shown if len(shown) <= 40 else shown[:40] + "..."
    if isinstance(value, str):
        return f"(text of {len(value):,} character{'' if len(value) == 1 else 's'})"
    return f"(a JSON {'boolean' if isinstance(value, bool) else 'array' if isinstance(value, list) else 'object'})"


def read_answer(text: str) -> ChatAnswer:
    """A Chat Completions response body as an answer; a body that is not the expected JSON is an answer
    without content (the raw text kept), so that the parser refuses it like any bad answer. A body
    nested deeper than MAX_RESPONSE_DEPTH is not parsed (``problem`` says so)."""
    problem = json_size_problem(text, max_chars=MAX_RESPONSE_BYTES, max_depth=MAX_RESPONSE_DEPTH)
    if problem:
        return ChatAnswer(None, None, text, problem=f"response not parsed: {problem}")
    try:
        data = json.loads(text, parse_int=_json_int)
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
        policy = RetryPolicy(timeout=endpoint.timeout, max_retries=endpoint.max_retries, backoff=endpoint.backoff,
                             max_wait=endpoint.max_wait, rate=endpoint.rate)
        self._http = RetryingHttp(policy, headers=headers, max_body=MAX_RESPONSE_BYTES, transport=transport)

    @property
    def requests_sent(self) -> int:
        return self._http.requests_sent

    @property
    def retries(self) -> int:
        return self._http.retries

    @property
    def abandoned(self) -> int:
        """Requests given up at their deadline (the server may bill them all the same)."""
        return self._http.abandoned

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.__aexit__(*exc)

    def kept(self, text: str) -> str:
        """``text`` as it may be stored: the key redacted, cut to MAX_RAW_CHARS (:func:`kept_text`)."""
        return kept_text(text, self.endpoint.api_key)

    def _redact(self, text: str) -> str:
        key = self.endpoint.api_key
        return text.replace(key, "[key]") if key else text

    async def complete(self, body: dict[str, Any]) -> ChatAnswer:
        """Send one request (retrying as :mod:`ndcg_labeling.io.http` says) and return the answer."""
        try:
            reply = await self._http.send("POST", self.url, json=body)
        except GaveUp as exc:
            raise JudgeRequestError(f"{self.url}: {exc}") from None
        if reply.status != 200:
            raise JudgeRequestError(self._refused(reply, reply.text))
        if reply.cut:
            return ChatAnswer(None, None, reply.text, problem=f"response not read: larger than the "
                                                              f"{MAX_RESPONSE_BYTES:,} bytes read")
        return read_answer(reply.text)

    def _refused(self, response: Reply, text: str) -> str:
        status = response.status
        if status in (401, 403):
            return f"{self.url}: HTTP {status}: the endpoint refused the API key (check --api-key-env)"
        problem = json_size_problem(text, max_chars=MAX_RESPONSE_BYTES, max_depth=MAX_RESPONSE_DEPTH)
        try:
            if problem:
                raise ValueError(problem)
            detail = str(json.loads(text, parse_int=_json_int).get("error", {}).get("message", ""))
        except (ValueError, AttributeError):
            detail = text
        detail = " ".join(self._redact(detail).split())[:300]
        return f"{self.url}: HTTP {status}{': ' + detail if detail else ''}"
