"""``snapshot take`` against local engines speaking each kind's real shapes: the stored run is exactly the
list each engine answered (in its order, with its scores), the request body the template filled
(JSON-escaped), and the engines' real errors each stop the take with nothing stored."""

from __future__ import annotations

import json

import pytest
from fake_engines import FakeEngine, query_of, serving
from snapshot_world import QUERIES, add_config, write_queries
from sqlalchemy import text

from tests.conftest import invoke

KINDS = ["elasticsearch", "opensearch", "solr", "vespa", "http-json"]
RESULTS = {"github login": [("D1", 9.5), ("D2", 7.25), ("D3", 1.0)],
           'say "hi" \\ back': [("D4", 3.0), ("D1", 2.0)],
           "cheap flights": [("D9", 12.0), ("D8", 11.0), ("D7", 10.0), ("D6", 9.0)]}


def stored(db, run: str | None = None) -> dict[str, list[tuple[str, int, float]]]:
    """query id -> [(doc id, rank, score)] of the one (or the named) stored run, from the tables."""
    sql = ("SELECT q.external_id, d.external_id, r.rank, r.score FROM ranking_entries r JOIN systems s "
           "ON s.id = r.system_id JOIN queries q ON q.id = r.query_id JOIN documents d ON d.id = r.document_id"
           + (" WHERE s.name = :n" if run else "") + " ORDER BY q.external_id, r.rank")
    out: dict[str, list[tuple[str, int, float]]] = {}
    with db.engine.connect() as conn:
        for q, d, rank, score in conn.execute(text(sql), {"n": run} if run else {}):
            out.setdefault(q, []).append((d, rank, score))
    return out


def counts(db) -> tuple[int, int, int]:
    with db.engine.connect() as conn:
        return tuple(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()  # type: ignore[return-value]
                     for t in ("systems", "ranking_entries", "search_snapshots"))


@pytest.mark.parametrize("kind", KINDS)
def test_a_snapshot_stores_what_each_engine_answered(kind, qdb, runner, template_file):
    with serving(FakeEngine(kind, results=RESULTS)) as engine:
        assert add_config(runner, qdb, "prod", kind, engine.url, template_file(kind)).exit_code == 0
        result = invoke(runner, qdb, "snapshot", "take", "prod", "--depth", "3", "--format", "json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["snapshot"].startswith("prod@") and summary["queries"] == 3 and summary["hits"] == 3 + 2 + 3
    by_text = {t: q for q, t, _ in QUERIES}
    expected = {by_text[t]: [(d, i + 1, s) for i, (d, s) in enumerate(h[:3])] for t, h in RESULTS.items()}
    assert stored(qdb) == expected
    # every request was the template filled for its query: the text JSON-escaped, the depth bare
    asked = sorted(query_of(kind, body) for _, _, body in engine.requests)
    assert asked == sorted((t, 3) for _, t, _ in QUERIES)
    assert {p for p, _, _ in engine.requests} == {engine.path}
    listed = json.loads(invoke(runner, qdb, "snapshot", "list", "--format", "json").stdout)
    assert [(r["snapshot"], r["config"], r["depth"], r["results"]) for r in listed] == [
        (summary["snapshot"], "prod", 3, 8)]


def test_a_query_set_file_fills_any_column_and_the_query_type(qdb, runner, tmp_path):
    template = tmp_path / "t.json"
    template.write_text('{"q": "{{query}}", "n": {{depth}}, "type": "{{query_type}}", "market": "{{market}}"}')
    queries = write_queries(tmp_path / "qs.csv", QUERIES[:2], {"market": ["de", 'u"s']})
    with serving(FakeEngine("http-json", results=RESULTS)) as engine:
        assert add_config(runner, qdb, "api", "http-json", engine.url, str(template)).exit_code == 0
        result = invoke(runner, qdb, "snapshot", "take", "api", "--queries", str(queries))
    assert result.exit_code == 0, result.output
    bodies = sorted((b["q"], b["type"], b["market"], b["n"]) for _, _, b in engine.requests)
    assert bodies == [("github login", "navigational", "de", 10), ('say "hi" \\ back', "informational", 'u"s', 10)]
    missing = tmp_path / "m.json"
    missing.write_text('{"q": "{{query}}", "n": {{depth}}, "x": "{{nope}}"}')
    assert add_config(runner, qdb, "api2", "http-json", engine.url, str(missing)).exit_code == 0
    refused = invoke(runner, qdb, "snapshot", "take", "api2")
    assert refused.exit_code == 1 and "{{nope}}" in refused.stderr and "variables:" in refused.stderr


def test_duplicates_missing_scores_and_fewer_hits_are_kept_and_said(qdb, runner, template_file):
    odd = {"github login": [("D1", 5.0), ("D2", 4.0), ("D1", 3.0), ("D3", 2.0)],  # D1 twice
           'say "hi" \\ back': [("D4", None), ("D5", None)],  # no scores
           "cheap flights": [("D9", 1.0)]}  # one hit where 10 were asked
    with serving(FakeEngine("elasticsearch", results=odd)) as engine:
        assert add_config(runner, qdb, "es", "elasticsearch", engine.url, template_file("elasticsearch")).exit_code == 0
        result = invoke(runner, qdb, "snapshot", "take", "es")
    assert result.exit_code == 0, result.output
    assert "1 duplicate ids in 1 queries: each kept at its first rank" in result.stdout
    assert "1 queries had results without a score" in result.stdout and "pseudo-scores" in result.stdout
    assert stored(qdb) == {"Q1": [("D1", 1, 5.0), ("D2", 2, 4.0), ("D3", 3, 2.0)],
                           "Q2": [("D4", 1, 2.0), ("D5", 2, 1.0)], "Q3": [("D9", 1, 1.0)]}


@pytest.mark.parametrize(("kind", "script", "words"), [
    ("elasticsearch", ["404"], ["HTTP 404", "index_not_found_exception", "no such index [docs]"]),
    ("solr", ["400"], ["HTTP 400", "SyntaxError: Cannot parse 'title:('"]),
    ("vespa", ["400"], ["HTTP 400", "Invalid query parameter", "Could not parse query"]),
    ("elasticsearch", ["401"], ["HTTP 401", "refused the credential"]),
    ("opensearch", ["html"], ["the response is not JSON", "Service temporarily moved"]),
])
def test_an_engine_error_stops_the_take_and_stores_nothing(kind, script, words, qdb, runner, template_file):
    with serving(FakeEngine(kind, results=RESULTS, script=list(script))) as engine:
        assert add_config(runner, qdb, "c", kind, engine.url, template_file(kind)).exit_code == 0
        before = counts(qdb)
        result = invoke(runner, qdb, "snapshot", "take", "c")
    assert result.exit_code == 1 and result.stderr.startswith("Error: c: query ")
    assert all(w in result.stderr for w in words), result.stderr
    assert counts(qdb) == before == (0, 0, 0)


def test_a_failure_late_in_the_take_leaves_no_partial_snapshot(qdb, runner, template_file, tmp_path):
    many = [(f"Q{i:03d}", f"query {i}", "t") for i in range(60)]
    queries = write_queries(tmp_path / "many.csv", many)
    with serving(FakeEngine("elasticsearch", search=lambda q, k: [("D1", 1.0)], fail_query="query 47",
                            retry_after="0")) as engine:
        assert add_config(runner, qdb, "es", "elasticsearch", engine.url, template_file("elasticsearch")).exit_code == 0
        before = counts(qdb)
        result = invoke(runner, qdb, "snapshot", "take", "es", "--queries", str(queries))
    assert result.exit_code == 1 and "query 'Q047'" in result.stderr and "HTTP 500 after 6 attempts" in result.stderr
    assert counts(qdb) == before
    with qdb.engine.connect() as conn:  # the --queries file's import went with it
        assert conn.execute(text("SELECT count(*) FROM queries")).scalar_one() == 3


@pytest.fixture
def waits(monkeypatch):
    """The waits the retry policy chose (then not waited: the tests stay fast)."""
    from ndcg_labeling.io import http

    seen: list[float] = []
    real = http.RetryPolicy.wait

    def wait(self, attempt, retry_after):
        seen.append(real(self, attempt, retry_after))
        return 0.0

    monkeypatch.setattr(http.RetryPolicy, "wait", wait)
    return seen


def test_429_with_retry_after_503_and_a_slow_answer_are_retried(qdb, runner, template_file, waits):
    engine = FakeEngine("elasticsearch", results=RESULTS, script=["429", "503", "slow"], retry_after="7")
    with serving(engine):
        assert add_config(runner, qdb, "es", "elasticsearch", engine.url, template_file("elasticsearch"),
                          "--timeout", "0.5", "--concurrency", "1").exit_code == 0
        result = invoke(runner, qdb, "snapshot", "take", "es", "--format", "json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["retries"] == 3 and summary["requests"] == 6 and len(engine.requests) == 6
    assert waits[0] == 7.0  # Retry-After honoured
    assert 0.5 * 0.5 * 2 <= waits[1] <= 0.5 * 2 and 0.5 * 0.5 * 4 <= waits[2] <= 0.5 * 4  # backoff, doubling
    assert len(stored(qdb)) == 3


def test_a_slow_engine_past_every_retry_fails_with_the_deadline(qdb, runner, template_file, waits):
    with serving(FakeEngine("solr", results=RESULTS, script=["slow"] * 6)) as engine:
        assert add_config(runner, qdb, "s", "solr", engine.url, template_file("solr"), "--timeout", "0.2",
                          "--concurrency", "1").exit_code == 0
        result = invoke(runner, qdb, "snapshot", "take", "s")
    assert result.exit_code == 1 and "no answer within 0.2 s after 6 attempts" in result.stderr
    assert counts(qdb) == (0, 0, 0)


def test_config_add_refuses_bad_input_naming_it(qdb, runner, tmp_path, template_file):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "query": {{query}},\n  "size": {{depth}\n}\n')
    result = add_config(runner, qdb, "x", "elasticsearch", "http://127.0.0.1:9", str(bad))
    assert result.exit_code == 1 and result.stderr.startswith(f"Error: {bad}:") and "not JSON" in result.stderr
    es = template_file("elasticsearch")
    for args, words in [
        (["--kind", "solr", "--url", "http://h", "--template", es], "needs --index"),
        (["--kind", "http-json", "--url", "http://h", "--template", es], "needs --id-path"),
        (["--kind", "vespa", "--url", "http://u:p@h", "--template", es], "must not carry a user or password"),
        (["--kind", "vespa", "--url", "http://h", "--template", es, "--key-env", "sk-live-123"], "NAME of an "),
        (["--kind", "vespa", "--url", "http://h", "--template", es, "--id-path", "a[].id", "--score-path", "b[].s"],
         "same list"),
    ]:
        refused = invoke(runner, qdb, "snapshot", "config", "add", "x", *args)
        assert refused.exit_code == 1 and words in refused.stderr, (args, refused.stderr)
    assert add_config(runner, qdb, "x", "vespa", "http://h", es).exit_code == 0
    again = add_config(runner, qdb, "x", "vespa", "http://h", es)
    assert again.exit_code == 1 and "exists" in again.stderr
    shown = invoke(runner, qdb, "snapshot", "config", "list", "--format", "csv").stdout
    assert shown.count("\n") == 2 and shown.endswith("\n") and not shown.endswith("\n\n")  # header, one row
    listed = json.loads(invoke(runner, qdb, "snapshot", "config", "list", "--format", "json").stdout)
    assert [(c["name"], c["endpoint"], c["id_path"], c["score_path"]) for c in listed] == [
        ("x", "http://h/search/", "root.children[].fields.id", "root.children[].relevance")]


def test_take_and_a_failed_take_on_each_backend(db, runner, template_file, tmp_path):
    """SQLite and PostgreSQL: a snapshot stored with its notes (JSON), then a take that fails stores nothing."""
    assert invoke(runner, db, "import", "queries", str(write_queries(tmp_path / "q.csv"))).exit_code == 0
    odd = dict(RESULTS, **{"github login": [("D1", None), ("D1", None)]})
    with serving(FakeEngine("opensearch", results=odd)) as engine:
        assert add_config(runner, db, "os", "opensearch", engine.url, template_file("opensearch")).exit_code == 0
        ok = invoke(runner, db, "snapshot", "take", "os", "--format", "json")
        assert ok.exit_code == 0, ok.output
        before = counts(db)
        engine.script = ["404"]
        failed = invoke(runner, db, "snapshot", "take", "os")
    assert failed.exit_code == 1 and "index_not_found_exception" in failed.stderr and counts(db) == before
    listed = json.loads(invoke(runner, db, "snapshot", "list", "--format", "json").stdout)
    assert len(listed) == 1 and "duplicate ids" in listed[0]["notes"] and "pseudo-scores" in listed[0]["notes"]
    assert stored(db)["Q1"] == [("D1", 1, 1.0)]


def test_the_rate_limit_spaces_the_requests(qdb, runner, template_file):
    import time

    with serving(FakeEngine("vespa", results=RESULTS)) as engine:
        assert add_config(runner, qdb, "v", "vespa", engine.url, template_file("vespa"), "--rate", "5").exit_code == 0
        start = time.perf_counter()
        result = invoke(runner, qdb, "snapshot", "take", "v")
        took = time.perf_counter() - start
    assert result.exit_code == 0, result.output
    assert took >= 2 / 5 - 0.02  # three requests at 5 per second: the third starts 0.4 s after the first
    # none of the 8 documents was imported: created by id only, and said
    assert "8 documents the engine returned were not stored: created by id only" in result.stdout
