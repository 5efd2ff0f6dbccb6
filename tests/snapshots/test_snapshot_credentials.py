"""The engine's credential: read from the variable ``--key-env`` names at take time, sent as each engine
expects it, and never in the database, the output, the logs or an error (as the judge's key is tested)."""

from __future__ import annotations

import base64
import logging

import pytest
from fake_engines import FakeEngine, serving
from snapshot_world import add_config
from sqlalchemy import select

from ndcg_labeling.db import models as m

SECRET = "es-key-SECRET-7d1e4c"
USERPASS = "elastic:pw-SECRET-5a"


def take(runner, db, name: str, secret: str | None, *extra: str):
    from ndcg_labeling.cli import app

    env = {"SEARCH_KEY": secret} if secret is not None else {}
    return runner.invoke(app, ["snapshot", "take", name, *extra, "--db", db.url], env=env, catch_exceptions=False)


def dump(db) -> list[str]:
    rows = []
    with db.engine.connect() as conn:
        for table in m.Base.metadata.tables.values():
            rows += [repr(tuple(r)) for r in conn.execute(select(table))]
    return rows


@pytest.mark.parametrize(("kind", "secret", "header"), [
    ("elasticsearch", SECRET, f"ApiKey {SECRET}"),
    ("opensearch", USERPASS, "Basic " + base64.b64encode(USERPASS.encode()).decode()),
    ("solr", USERPASS, "Basic " + base64.b64encode(USERPASS.encode()).decode()),
    ("vespa", SECRET, f"Bearer {SECRET}"),
    ("http-json", SECRET, f"Bearer {SECRET}"),
])
def test_the_credential_is_sent_as_each_engine_expects(kind, secret, header, qdb, runner, template_file):
    with serving(FakeEngine(kind, search=lambda q, k: [("D1", 1.0)])) as engine:
        assert add_config(runner, qdb, "c", kind, engine.url, template_file(kind), "--key-env", "SEARCH_KEY").exit_code == 0
        result = take(runner, qdb, "c", secret)
    assert result.exit_code == 0, result.output
    assert {h.get("Authorization") for _, h, _ in engine.requests} == {header}


def test_the_credential_never_appears_in_output_logs_errors_or_database(qdb, runner, template_file, caplog):
    caplog.set_level(logging.DEBUG)
    engine = FakeEngine("elasticsearch", search=lambda q, k: [("D1", 1.0)], script=["401"])
    with serving(engine):
        assert add_config(runner, qdb, "es", "elasticsearch", engine.url, template_file("elasticsearch"),
                          "--key-env", "SEARCH_KEY").exit_code == 0
        refused = take(runner, qdb, "es", SECRET)
        # its own engine: a request of the refused take still in flight would take a step scripted here
        with serving(FakeEngine("elasticsearch", search=lambda q, k: [("D1", 1.0)], script=["echo"])) as echo:
            assert add_config(runner, qdb, "echo", "elasticsearch", echo.url, template_file("elasticsearch"),
                              "--key-env", "SEARCH_KEY").exit_code == 0
            echoed = take(runner, qdb, "echo", SECRET)
        unset = take(runner, qdb, "es", None)
        ok = take(runner, qdb, "es", SECRET, "--format", "json")
    assert refused.exit_code == 1 and "HTTP 401" in refused.stderr and "$SEARCH_KEY" in refused.stderr
    assert echoed.exit_code == 1 and "bad header [ApiKey [credential]]" in echoed.stderr
    assert unset.exit_code == 1 and "$SEARCH_KEY (--key-env) is not set" in unset.stderr
    assert ok.exit_code == 0, ok.output
    assert all(h.get("Authorization") == f"ApiKey {SECRET}" for _, h, _ in engine.requests[:2])  # it was sent
    assert SECRET not in refused.output + echoed.output + unset.output + ok.output + caplog.text
    rows = dump(qdb)
    assert any("SEARCH_KEY" in r for r in rows) and not any(SECRET in r for r in rows)
    from ndcg_labeling.snapshots.fetch import Target

    assert SECRET not in repr(Target("x", "vespa", "http://h", None, "a[].b", None, "K", SECRET))


def test_a_basic_credential_echoed_back_is_redacted_in_every_form(qdb, runner, template_file):
    engine = FakeEngine("elasticsearch", search=lambda q, k: [("D1", 1.0)], script=["echo"])
    with serving(engine):
        assert add_config(runner, qdb, "es", "elasticsearch", engine.url, template_file("elasticsearch"),
                          "--key-env", "SEARCH_KEY").exit_code == 0
        echoed = take(runner, qdb, "es", USERPASS)
    encoded = base64.b64encode(USERPASS.encode()).decode()
    assert echoed.exit_code == 1 and "bad header [Basic [credential]]" in echoed.stderr
    assert encoded not in echoed.output and "pw-SECRET-5a" not in echoed.output


def test_a_header_of_the_apis_own_carries_the_credential_bare(qdb, runner, template_file):
    with serving(FakeEngine("http-json", search=lambda q, k: [("D1", 1.0)], script=["echo"])) as engine:
        assert add_config(runner, qdb, "api", "http-json", engine.url, template_file("http-json"), "--key-env",
                          "SEARCH_KEY", "--key-header", "X-Api-Key").exit_code == 0
        echoed = take(runner, qdb, "api", SECRET)
        ok = take(runner, qdb, "api", SECRET)
    assert ok.exit_code == 0, ok.output
    assert all(h.get("X-Api-Key") == SECRET and "Authorization" not in h for _, h, _ in engine.requests)
    assert echoed.exit_code == 1 and SECRET not in echoed.output + ok.output
    assert not any(SECRET in r for r in dump(qdb))
    refused = add_config(runner, qdb, "es", "elasticsearch", engine.url, template_file("elasticsearch"), "--key-env",
                         "SEARCH_KEY", "--key-header", "X-Api-Key")
    assert refused.exit_code == 1 and "--key-header" in refused.stderr
