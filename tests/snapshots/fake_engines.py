"""Local search engines for the snapshot tests and the benchmark, on 127.0.0.1 (a free port).

One server speaks one kind: Elasticsearch/OpenSearch ``POST /{index}/_search`` answering ``hits.hits[]``
with ``_id``/``_score``; Solr ``POST /solr/{collection}/select`` (the JSON Request API) answering
``response.docs[]``; Vespa ``POST /search/`` answering ``root.children[]`` with ``relevance`` and ``fields``;
and a plain JSON API (``POST /api/search`` answering ``data.results[].doc.key`` / ``.s``). The error bodies
are the ones these engines send: Elasticsearch's ``index_not_found_exception`` (404) and
``security_exception`` (401), Solr's query parse error (400, ``error.msg``), Vespa's ``root.errors``, a 429
with ``Retry-After``, a 503, an answer slower than the client's deadline.

The results of a query come from ``results`` (query text -> ``[(doc id, score or None), ...]``), else from
``search`` (a function of the query text and the depth: the tantivy index of test_tantivy_engine.py). A
``script`` of behaviours is served first, one per request (``"429"``, ``"503"``, ``"slow"``, ``"401"``,
``"404"``, ``"400"``, ``"echo"``: a 400 quoting the Authorization header); ``fail_query`` answers 500 to one query every time; ``delay`` makes every answer
wait. Every request's path, headers and body are recorded.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Hit = tuple[str, float | None]

TEMPLATES = {
    "elasticsearch": '{\n  "query": {"multi_match": {"query": "{{query}}", "fields": ["title", "body"]}},\n'
                     '  "size": {{depth}}\n}\n',
    "solr": '{"query": "{{query}}", "limit": {{depth}}, "fields": "id,score",\n'
            ' "params": {"defType": "edismax", "qf": "title body"}}\n',
    "vespa": '{"yql": "select * from doc where userQuery()", "query": "{{query}}", "hits": {{depth}},\n'
             ' "ranking": "bm25"}\n',
    "http-json": '{"q": "{{query}}", "n": {{depth}}, "type": "{{query_type}}"}\n',
}
TEMPLATES["opensearch"] = TEMPLATES["elasticsearch"]


def query_of(kind: str, body: dict[str, Any]) -> tuple[str, int]:
    """The query text and the depth a request of the test templates asks for."""
    if kind in ("elasticsearch", "opensearch"):
        return body["query"]["multi_match"]["query"], int(body["size"])
    if kind == "solr":
        return body["query"], int(body["limit"])
    if kind == "vespa":
        return body["query"], int(body["hits"])
    return body["q"], int(body["n"])


def answer(kind: str, hits: list[Hit], index: str = "docs") -> dict[str, Any]:
    """The response body each engine sends for ``hits`` (a score of None: the field left out)."""
    scores = [s for _, s in hits if s is not None]
    if kind in ("elasticsearch", "opensearch"):
        out = [{"_index": index, "_id": d, **({"_score": s} if s is not None else {}), "_source": {"title": d}}
               for d, s in hits]
        return {"took": 2, "timed_out": False, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
                "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": max(scores, default=None),
                         "hits": out}}
    if kind == "solr":
        docs = [{"id": d, **({"score": s} if s is not None else {})} for d, s in hits]
        return {"responseHeader": {"status": 0, "QTime": 1, "params": {"json": "..."}},
                "response": {"numFound": len(hits), "start": 0, "maxScore": max(scores, default=0.0),
                             "numFoundExact": True, "docs": docs}}
    if kind == "vespa":
        children = [{"id": f"id:test:doc::{d}", **({"relevance": s} if s is not None else {}), "source": "content",
                     "fields": {"sddocname": "doc", "id": d, "title": d}} for d, s in hits]
        return {"root": {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": len(hits)},
                         "coverage": {"coverage": 100, "documents": 360, "full": True, "nodes": 1, "results": 1,
                                      "resultsFull": 1}, "children": children}}
    return {"data": {"results": [{"doc": {"key": d}, **({"s": s} if s is not None else {})} for d, s in hits]}}


def error(kind: str, what: str, index: str = "docs") -> tuple[int, dict[str, str], dict[str, Any]]:
    """(status, headers, body) of an engine's real error ``what``."""
    if what == "404":
        cause = {"type": "index_not_found_exception", "reason": f"no such index [{index}]",
                 "resource.type": "index_or_alias", "resource.id": index, "index_uuid": "_na_", "index": index}
        return 404, {}, {"error": {"root_cause": [cause], **cause}, "status": 404}
    if what == "401":
        cause = {"type": "security_exception", "reason": "unable to authenticate with provided credentials and "
                 "anonymous access is not allowed for this request", "additional_unsuccessful_credentials": "API key"}
        return 401, {"WWW-Authenticate": 'ApiKey, Basic realm="security", charset="UTF-8"'}, \
            {"error": {"root_cause": [cause], **cause, "header": {"WWW-Authenticate": "ApiKey"}}, "status": 401}
    if what == "400" and kind == "solr":
        return 400, {}, {"responseHeader": {"status": 400, "QTime": 2}, "error": {
            "metadata": ["error-class", "org.apache.solr.common.SolrException", "root-error-class",
                         "org.apache.solr.parser.ParseException"],
            "msg": "org.apache.solr.search.SyntaxError: Cannot parse 'title:(': Encountered \"<EOF>\" at line 1, "
                   "column 7.", "code": 400}}
    if what == "400" and kind == "vespa":
        return 400, {}, {"root": {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": 0}, "errors": [
            {"code": 4, "summary": "Invalid query parameter", "source": "content",
             "message": "Could not parse query: expected a term"}]}}
    if what == "400":
        return 400, {}, {"error": {"root_cause": [], "type": "parsing_exception",
                                   "reason": "[multi_match] unknown token [START_ARRAY]", "line": 1, "col": 30},
                         "status": 400}
    if what == "429":
        return 429, {"Retry-After": "1"}, {"error": {"type": "es_rejected_execution_exception",
                                                     "reason": "rejected execution of search"}, "status": 429}
    return 503, {}, {"error": {"type": "search_phase_execution_exception", "reason": "all shards failed"},
                     "status": 503}


@dataclass
class FakeEngine:
    kind: str
    results: dict[str, list[Hit]] = field(default_factory=dict)
    search: Callable[[str, int], list[Hit]] | None = None
    index: str = "docs"
    script: list[str] = field(default_factory=list)
    fail_query: str | None = None
    delay: float = 0.0
    retry_after: str = "1"
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def path(self) -> str:
        return {"elasticsearch": f"/{self.index}/_search", "opensearch": f"/{self.index}/_search",
                "solr": f"/solr/{self.index}/select", "vespa": "/search/"}.get(self.kind, "/api/search")

    def respond(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        with self._lock:
            self.requests.append((path, headers, body))
            step = self.script.pop(0) if self.script else None
        if self.delay:
            time.sleep(self.delay)
        if step == "slow":
            time.sleep(1.5)
        elif step == "html":  # a proxy's page where the engine's JSON should be
            return 200, {}, b"<html><body>Service temporarily moved</body></html>"
        elif step == "echo":  # an engine quoting the request's credential back in its error
            said = {"error": {"type": "illegal_argument_exception",
                              "reason": f"bad header [{headers.get('Authorization', '')}]"}, "status": 400}
            return 400, {}, json.dumps(said).encode()
        elif step is not None:
            status, extra, out = error(self.kind, step, self.index)
            if step == "429":
                extra = {"Retry-After": self.retry_after}
            return status, extra, json.dumps(out).encode()
        expected = self.path if self.kind != "http-json" else "/api/search"
        if not path.startswith(expected):
            status, extra, out = error(self.kind, "404", path.strip("/").split("/")[0])
            return status, extra, json.dumps(out).encode()
        text, depth = query_of(self.kind, body)
        if text == self.fail_query:
            return 500, {}, json.dumps(error(self.kind, "503")[2]).encode()
        hits = self.results[text] if text in self.results else (self.search(text, depth) if self.search else [])
        return 200, {}, json.dumps(answer(self.kind, hits[:depth], self.index)).encode()


def _handler(engine: FakeEngine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # as a real engine does (Elasticsearch: http.tcp.no_delay, default true): else the body, a second write after the
        # headers, waits for the client's delayed ACK (about 40 ms on Linux) on every answer
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, headers, out = engine.respond(self.path, dict(self.headers), raw)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(out)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up at its deadline

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (a timeout, a refused take) closes its socket mid-answer; the stock server
    prints that to sys.stderr, which a CliRunner test reads as the command's own stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


@contextmanager
def serving(engine: FakeEngine) -> Iterator[FakeEngine]:
    """Serve ``engine`` on 127.0.0.1 in a thread; ``engine.url`` is its base URL (Solr's ends at /solr)."""
    server = _QuietServer(("127.0.0.1", 0), _handler(engine))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    engine.url = base + ("/solr" if engine.kind == "solr" else "/api/search" if engine.kind == "http-json" else "")
    try:
        yield engine
    finally:
        server.shutdown()
        server.server_close()
