"""A local OpenAI-compatible Chat Completions server for the judge tests and the benchmark.

It answers ``POST /v1/chat/completions`` from a known truth: the item is recognised from the prompt
(the text between ``<query>`` and ``</query>`` and the ``Title:`` line), its true grade looked up, and
for the query types given as noisy a deterministic random grade instead, with probability ``noise``.
On demand (``script``: per document title, a list of behaviours served first, one per request) it
answers 429 with Retry-After, 500, slowly (past the client's timeout), with a malformed body, with a
refusal, with text that is not the JSON object (a NUL or a lone surrogate after a grade
included), or with a usage that is not a token count; and the misbehaviours of issue 46: a grade of
5,000 digits, an answer of 100,000 nested ``[`` (as the content, or as the whole body), a 5 MB answer,
an answer echoing the API key, a body dripped one byte at a time. It records every request body and header set, and
counts answers; ``lenient`` grades a share of items one above the truth, and the canary behaviours of
issue 47 (``stuffed``: a keyword matcher that grades 3 any document holding the query's terms; ``obeys``:
a judge that grades 3 a document asking for it; ``unknown_grade``: a judge simulated from qrels, 0 for an
item it has no grade for); ``delay`` makes every answer wait (the benchmark's 200 ms). Bound to 127.0.0.1 only,
on a free port; :func:`serving` stops it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_QUERY = re.compile(r"<query>\n(.*?)\n</query>", re.DOTALL)
_TITLE = re.compile(r"^Title: (.*)$", re.MULTILINE)


@dataclass
class FakeLLM:
    truth: dict[tuple[str, str], int]  # (query text, document title) -> true grade
    query_type: dict[str, str] = field(default_factory=dict)  # query text -> its type
    noisy: dict[str, float] = field(default_factory=dict)  # query type -> probability of a random grade
    grades: tuple[int, ...] = (0, 1, 2, 3)
    script: dict[str, list[str]] = field(default_factory=dict)  # title -> behaviours served first
    lenient: float = 0.0  # probability (deterministic per item) of one grade above the truth (issue 47)
    stuffed: bool = False  # grade 3 any document whose body holds every term of the query (a keyword matcher)
    obeys: bool = False  # grade 3 any document asking for a grade 3 (a judge that follows injected instructions)
    unknown_grade: int | None = None  # the grade of an item not in ``truth`` (0: a judge simulated from qrels)
    delay: float = 0.0
    slow: float = 3.0
    drip: float = 0.5  # seconds between the bytes of a "drip" answer
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    answered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def grade_for(self, query: str, title: str) -> int:
        true = self.truth[(query, title)] if (query, title) in self.truth else int(self.unknown_grade or 0)
        p = self.noisy.get(self.query_type.get(query, ""), 0.0)
        h = int.from_bytes(hashlib.sha256(f"{query}\0{title}".encode()).digest()[:8], "big")
        if (h % 10_000) / 10_000 < p:
            return self.grades[(h // 10_000) % len(self.grades)]
        if ((h >> 20) % 10_000) / 10_000 < self.lenient:
            return min(true + 1, self.grades[-1])
        return true

    def fooled(self, query: str, prompt: str) -> bool:
        """The canary behaviours: a keyword matcher, or a judge that obeys a request for a grade in the text."""
        body = prompt.split("<document>", 1)[-1]
        if self.stuffed and all(term in body.lower() for term in query.lower().split()):
            return True
        return self.obeys and re.search(r"grade[^.]{0,20}3", body.lower()) is not None

    def respond(self, body: dict[str, Any], auth: str = "") -> tuple[int, dict[str, str], bytes]:
        prompt = "\n".join(m["content"] for m in body["messages"])
        query = _QUERY.search(prompt)
        title = _TITLE.search(prompt)
        key = (query.group(1) if query else "", title.group(1) if title else "")
        with self.lock:
            queue = self.script.get(key[1])
            behaviour = queue.pop(0) if queue else "ok"
        if behaviour == "401":  # as OpenAI does: the message names the key it was given
            return 401, {}, json.dumps({"error": {"message": f"Incorrect API key provided: {auth[7:]}"}}).encode()
        if behaviour == "429":
            return 429, {"Retry-After": "0.2"}, b'{"error": {"message": "slow down"}}'
        if behaviour == "500":
            return 500, {}, b'{"error": {"message": "oops"}}'
        if behaviour == "slow":
            time.sleep(self.slow)
        if behaviour == "malformed":
            return 200, {}, b'{"choices": [{"message": {"content": "{\\"grade\\": 1'
        if behaviour == "refusal":
            return 200, {}, _completion(None, refusal="I can't help with that.")
        if behaviour == "chatty":
            return 200, {}, _completion('Sure! {"grade": 2} because it fits.')
        if behaviour == "nul":  # a grade followed by a NUL character (PostgreSQL text cannot hold one)
            return 200, {}, _completion('{"grade": 1}\x00')
        if behaviour == "surrogate":  # a lone surrogate, sent as the JSON escape \ud800 (not UTF-8)
            return 200, {}, _completion('{"grade": 1} \ud800')
        if behaviour.startswith("usage="):  # the true grade with prompt_tokens set to the JSON after '='
            return 200, {}, _completion(json.dumps({"grade": self.grade_for(*key)}),
                                        usage=json.loads(behaviour[len("usage="):]))
        if behaviour == "digits":  # a grade of 5,000 digits
            return 200, {}, _completion('{"grade": 1' + "0" * 4999 + "}")
        if behaviour == "nested":  # the content: 100,000 nested [
            return 200, {}, _completion("[" * 100_000)
        if behaviour == "nested-body":  # the whole body: 100,000 nested [
            return 200, {}, b"[" * 100_000 + b"]" * 100_000
        if behaviour == "usage-digits":  # the true grade, prompt_tokens of 5,000 digits
            return 200, {}, _completion(json.dumps({"grade": self.grade_for(*key)}), usage=_Digits(5_000))
        if behaviour == "huge":  # a 5 MB answer
            return 200, {}, _completion("x" * 5_000_000)
        if behaviour == "echo-key":  # a 200 answer that echoes the key it was given, in the content
            return 200, {}, _completion(f"your key is {auth[7:]}; " + "y" * 10_000)
        if behaviour == "echo-key-grade":  # the key as the answer's one key
            return 200, {}, _completion(json.dumps({auth[7:]: 1}))
        if behaviour == "echo-key-usage":  # the true grade, the key as the usage's prompt_tokens
            return 200, {}, _completion(json.dumps({"grade": self.grade_for(*key)}), usage=auth[7:])
        if behaviour == "drip":  # the true grade, its body sent a byte at a time (see the handler)
            return 200, {"X-Drip": "1"}, _completion(json.dumps({"grade": self.grade_for(*key)}))
        if self.fooled(key[0], prompt):
            with self.lock:
                self.answered += 1
            return 200, {}, _completion(json.dumps({"grade": self.grades[-1]}))
        if key not in self.truth and self.unknown_grade is None:
            return 200, {}, _completion("I do not know this item.")
        with self.lock:
            self.answered += 1
        return 200, {}, _completion(json.dumps({"grade": self.grade_for(*key)}))


class _Digits:
    """A JSON number of ``n`` digits in the usage (json.dumps cannot write an int of more than 4,300)."""

    def __init__(self, n: int) -> None:
        self.n = n


def _completion(content: str | None, refusal: str | None = None, usage: object = 100) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    digits = usage.n if isinstance(usage, _Digits) else 0
    body = json.dumps({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message,
                       "finish_reason": "stop"}], "usage": {"prompt_tokens": "DIGITS" if digits else usage,
                                                             "completion_tokens": 7, "total_tokens": 107}})
    return body.replace('"DIGITS"', "1" * digits).encode()


def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out in separate writes: with Nagle's algorithm on, the body waits for the
        # client's delayed ACK (~40 ms on loopback), a delay no real server adds
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path != "/v1/chat/completions":
                self._send(404, {}, b'{"error": {"message": "no such route"}}')
                return
            body = json.loads(raw)
            with fake.lock:
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
            if fake.delay:
                time.sleep(fake.delay)
            status, headers, payload = fake.respond(body, self.headers.get("Authorization", ""))
            try:
                self._send(status, headers, payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            drip = headers.pop("X-Drip", None)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if not drip:
                self.wfile.write(payload)
                return
            for i in range(len(payload)):  # each byte well within a read timeout, the whole far beyond
                self.wfile.write(payload[i:i + 1])
                self.wfile.flush()
                time.sleep(fake.drip)

    return Handler


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet when the client hung up (an answer abandoned or not read whole: what the tests do)."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@contextmanager
def serving(fake: FakeLLM) -> Iterator[FakeLLM]:
    """Serve ``fake`` on 127.0.0.1 (a free port) in a daemon thread; ``fake.url`` is the base URL."""
    server = _Server(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
