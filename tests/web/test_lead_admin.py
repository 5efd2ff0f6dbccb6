"""The lead's admin pages through HTTP (TestClient): each action changes the database exactly as the
equivalent CLI command does on a second database built the same way; a bad upload shows the CLI's
one-line error and changes nothing; graders get 403 on every route; the visible text holds no repr."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text

import ndcg_labeling.db.models as m
from ndcg_labeling.db.base import Base
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import tasks as t
from ndcg_labeling.web.app import create_app
from ndcg_labeling.web.wording import page_words
from tests.conftest import BACKENDS, Database, invoke
from tests.web.conftest import build_workspace, graded_two_ways

PAGES = ("/lead/create-batch", "/lead/data", "/lead/graders", "/lead/activity", "/lead/consensus", "/lead/downloads")
POSTS = ("/lead/create-batch", "/lead/delete-batch", "/lead/consensus", "/lead/graders/add", "/lead/graders/token",
         "/lead/graders/revoke", "/lead/graders/role", "/lead/data/queries")
FULL = {"batch": "b1", "confirm": "b1", "names": "x", "grader": "ann", "role": "lead", "method": "median",
        "scale": "0-3", "depth": "1", "overlap": "1"}
GETS = (*PAGES, "/lead/downloads/qrels", "/lead/downloads/report.csv", "/lead/downloads/tasks?batch=b1&grader=ann")
# columns that differ between two databases for reasons of time or chance, not of what was done
VOLATILE = {"id", "created_at", "updated_at", "item_key", "expires_at", "token_sha256", "session_sha256",
            "revoked_at", "seed", "guideline_sha256"}


def sign_in(client: TestClient, token: str) -> str:
    """Follow the sign-in link and press the button; returns the CSRF token of the pages."""
    page = client.get(f"/login?token={token}")
    assert page.status_code == 200, page.text
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)
    done = client.post("/login", data={"token": token, "nonce": nonce})
    assert done.status_code == 303 and done.headers["location"] == "/"
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)


def client_for(db) -> TestClient:
    return TestClient(create_app(db.engine), base_url="http://127.0.0.1:8000", follow_redirects=False)


def as_lead(ws) -> tuple[TestClient, str]:
    client = client_for(ws.db)
    return client, sign_in(client, ws.token("lee"))


def snapshot(db, skip: tuple[str, ...] = ("grader_tokens", "web_sessions", "server_secrets"),
             ) -> dict[str, list[tuple]]:
    """Every table's rows without the volatile columns, sorted; a foreign key is replaced by the row it
    points to (so row ids, which differ when a sequence moved on, as a rolled-back preview's did on
    PostgreSQL, do not count; what the rows say does). The sign-in secret (server_secrets) is random per
    database by design."""
    natural: dict[str, dict[object, tuple]] = {}
    out = {}
    with db.engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            natural[table.name] = {}
            cols = [c for c in table.columns if c.name not in VOLATILE]
            rows = []
            for r in conn.execute(select(table.c.id if "id" in table.c else table.c[cols[0].name], *cols)):
                values = []
                for col, v in zip(cols, r[1:], strict=True):
                    fk = next(iter(col.foreign_keys), None)
                    if fk is not None and fk.column.name == "id" and v is not None:
                        values.append(natural[fk.column.table.name][v])
                    else:
                        values.append(str(v))
                natural[table.name][r[0]] = tuple(values)
                rows.append(tuple(values))
            if table.name not in skip:
                out[table.name] = sorted(rows, key=repr)
    return out


@pytest.fixture(params=BACKENDS)
def pair(request, tmp_path):
    """Two databases built alike: ``web`` (driven through the pages) and ``cli`` (the CLI)."""
    dbs = []
    for name in ("web", "cli"):
        (tmp_path / name).mkdir()
        db = Database(request.param, tmp_path / name, migrated=True)
        dbs.append(build_workspace(db, tmp_path / name))
    yield dbs
    for ws in dbs:
        ws.db.drop()


def visible(page: str) -> str:
    body = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", page)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def assert_clean(page: str) -> None:
    shown = visible(page)
    for bad in ("None", "<built-in", "object at 0x", "{{", "{%", "Traceback"):
        assert bad not in shown, (bad, shown[:2000])


# --- batches --------------------------------------------------------------------------------------------


def test_preview_stores_nothing_and_create_stores_what_tasks_create_does(pair, runner):
    web, cli = pair
    form = {"batch": "wk2", "scale": "0-3", "depth": "3", "overlap": "2", "graders": ["ann", "bob"],
            "systems": ["bm25zeta"], "gold_rate": "0", "seed": "77"}
    client, csrf = as_lead(web)
    before = web.db.counts()
    preview = client.post("/lead/create-batch", data={**form, "csrf": csrf, "action": "preview"})
    assert preview.status_code == 200, preview.text
    assert web.db.counts() == before  # the preview rolled its savepoint back
    assert_clean(preview.text)
    out = invoke(runner, cli.db, "tasks", "create", "wk2", "--scale", "0-3", "--depth", "3", "--overlap", "2",
                 "--graders", "ann,bob", "--system", "bm25zeta", "--seed", "77", "--format", "json")
    made = json.loads(out.stdout)
    shown = visible(preview.text)
    assert f"{made['items']} items to grade" in shown and f"{made['assignments']} assignments" in shown
    with cli.db.engine.connect() as conn:
        load = dict(conn.execute(text("SELECT g.name, COUNT(*) FROM assignments a JOIN graders g ON g.id = a.grader_id "
                                      "JOIN grading_batches b ON b.id = a.batch_id WHERE b.name = 'wk2' GROUP BY g.name")).all())
    rows = re.findall(r'<td data-label="grader">(\w+)</td><td data-label="items to grade">(\d+)</td>', preview.text)
    assert {g: int(n) for g, n in rows} == load
    assert 'name="seed" value="77"' in preview.text
    done = client.post("/lead/create-batch", data={**form, "csrf": csrf, "action": "create"})
    assert done.status_code == 303
    assert snapshot(web.db) == snapshot(cli.db)
    assert str(made["items"]) in client.get(done.headers["location"]).text


def test_create_batch_error_is_shown_with_the_form_and_stores_nothing(pair):
    web, _ = pair
    client, csrf = as_lead(web)
    before = web.db.counts()
    bad = client.post("/lead/create-batch", data={"batch": "b1", "scale": "0-3", "depth": "3", "overlap": "1",
                                                  "graders": ["ann"], "csrf": csrf, "action": "create"})
    assert bad.status_code == 409
    assert "batch &#39;b1&#39; already exists" in bad.text and 'value="b1"' in bad.text
    assert web.db.counts() == before


def test_delete_an_ungraded_batch_as_tasks_delete_does_and_refuse_a_graded_one(pair, runner):
    web, cli = pair
    client, csrf = as_lead(web)
    refused = client.post("/lead/delete-batch", data={"batch": "b1", "confirm": "b", "csrf": csrf})
    assert refused.status_code == 400 and "type the batch name" in refused.text
    done = client.post("/lead/delete-batch", data={"batch": "b1", "confirm": "b1", "csrf": csrf})
    assert done.status_code == 303, done.text
    assert invoke(runner, cli.db, "tasks", "delete", "b1").exit_code == 0
    assert snapshot(web.db) == snapshot(cli.db)
    assert snapshot(web.db)["grading_batches"] == []


def test_a_batch_someone_graded_is_not_deleted(pair, runner):
    web, cli = pair
    for ws in pair:
        with session_scope(ws.db.engine) as session:
            t.skip_item("b1", ws.items("ann")[0], grader="ann", session=session, reason="broken page")
    client, csrf = as_lead(web)
    before = web.db.counts()
    refused = client.post("/lead/delete-batch", data={"batch": "b1", "confirm": "b1", "csrf": csrf})
    assert refused.status_code == 409
    assert "cannot be deleted: 1 of its assignments were graded or skipped" in visible(refused.text)
    assert web.db.counts() == before
    out = invoke(runner, cli.db, "tasks", "delete", "b1")
    assert out.exit_code == 1 and "cannot be deleted: 1 of its assignments" in out.output


def test_the_form_offers_no_graded_batch_for_deletion_and_no_behavior_grader(pair):
    web, _ = pair
    with session_scope(web.db.engine) as session:
        t.skip_item("b1", web.items("ann")[0], grader="ann", session=session, reason="broken page")
        clicks = m.Grader(name="clicks-pbm", active=True, role="grader", kind="model")
        session.add(clicks)
        session.flush()
        session.add(m.BehaviorDerivation(grader_id=clicks.id, model="pbm", scale="0-3", sources=["log.parquet"],
                                         parameters={}, min_impressions=10, thresholds=[0.1, 0.3, 0.6],
                                         position_bias=[1.0], position_bias_kind="examination", n_impressions=100,
                                         n_pairs_graded=3, n_pairs_left_out=0))
    client, _ = as_lead(web)
    page = client.get("/lead/create-batch").text
    text = visible(page)
    assert "Every batch has grades, and a batch with grades is kept." in text
    assert "assignments, none graded" not in text
    offered = set(re.findall(r'name="graders" value="([^"]+)"', page))
    assert "ann" in offered and "clicks-pbm" not in offered


# --- uploads --------------------------------------------------------------------------------------------

GOOD = {
    "queries": ("queries2.csv", "query_id,text,query_type\nq100,new question,navigational\nq000,changed text,informational\n", []),
    "documents": ("docs2.jsonl", '{"doc_id": "d100", "title": "New", "body": "b", "lang": "en"}\n', []),
    "graders": ("people.csv", "grader,display_name\ncat,Cat C.\nann,Ann A.\n", []),
    "run": ("run3.txt", "q000 Q0 d000 1 3.5 x\nq000 Q0 d001 2 2.5 x\nq001 Q0 d999 1 1.0 x\n", ["--system", "sys3"]),
    "judgments": ("qrels.txt", "q000 0 d000 2\nq000 0 d001 0\n", ["--scale", "0-3", "--format", "trec-qrels",
                                                                  "--grader", "ann"]),
    "gold": ("gold.csv", "query_id,doc_id,grade,explanation\nq000,d000,3,exact match\n", ["--scale", "0-3"]),
}
FORM = {"--system": "system", "--scale": "scale", "--format": "fmt", "--grader": "grader"}
COMMAND = {"queries": ["import", "queries"], "documents": ["import", "documents"], "graders": ["import", "graders"],
           "run": ["import", "run"], "judgments": ["import", "judgments"], "gold": ["gold", "import"]}


def upload(client: TestClient, csrf: str, kind: str, name: str, content: str, options: list[str]):
    data = {"csrf": csrf, **{FORM[options[i]]: options[i + 1] for i in range(0, len(options), 2)}}
    return client.post(f"/lead/data/{kind}", data=data, files={"file": (name, content.encode(), "text/plain")})


@pytest.mark.parametrize("kind", list(GOOD))
def test_an_upload_stores_what_the_import_command_stores(pair, runner, tmp_path, monkeypatch, kind):
    web, cli = pair
    name, content, options = GOOD[kind]
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / name).write_text(content)
    monkeypatch.chdir(folder)  # the CLI records the path it was given; the page, the uploaded file's name
    out = invoke(runner, cli.db, *COMMAND[kind], name, *options)
    assert out.exit_code == 0, out.output
    client, csrf = as_lead(web)
    done = upload(client, csrf, kind, name, content, options)
    assert done.status_code == 303, done.text
    page = client.get(done.headers["location"])
    assert out.stdout.strip() in visible(page.text)  # the importer's own summary, with the file's name
    assert snapshot(web.db) == snapshot(cli.db)


BAD = {
    "queries": ("queries.csv", "query_id,text,query_type\nq1,a,x\nq1,b,y\n", []),
    "documents": ("documents.csv", "doc_id,title\nd1,t\n", []),
    "run": ("run.txt", "q000 Q0 d000 1 3.5 x\nq000 Q0 d001 2 high x\n", ["--system", "sys3"]),
    "judgments": ("judgments.csv", "query_id,doc_id,grader,grade\nq000,d000,ann,2\nq000,d001,ann,7\n", ["--scale", "0-3"]),
    "gold": ("gold.csv", "query_id,doc_id,grade\nq000,d000,1\nq404,d000,1\n", ["--scale", "0-3"]),
    "graders": ("graders.csv", "grader\nann\n\n,x\n", []),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_upload_shows_the_cli_error_line_and_changes_nothing(pair, runner, tmp_path, monkeypatch, kind):
    web, cli = pair
    name, content, options = BAD[kind]
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / name).write_text(content)
    monkeypatch.chdir(folder)
    out = invoke(runner, cli.db, *COMMAND[kind], name, *options)
    assert out.exit_code != 0
    line = out.output.strip().splitlines()[-1]
    assert line.startswith(f"Error: {name}")
    client, csrf = as_lead(web)
    before = snapshot(web.db)
    failed = upload(client, csrf, kind, name, content, options)
    assert 400 <= failed.status_code < 500
    shown = re.search(r'<p class="error" id="error" role="alert">(.*?)</p>', failed.text, re.S)
    # the CLI's line in the page's words (no option, no Python repr): the same facts, file and line first
    assert shown is not None and html.unescape(shown.group(1)) == page_words(line)
    assert html.unescape(shown.group(1)).startswith(f"Error: {name}:")
    assert "ndcg-upload-" not in failed.text  # the temporary file's path never shows
    assert snapshot(web.db) == before


def test_a_conflicting_upload_is_worded_for_the_page_and_the_cli_keeps_its_words(pair, runner, tmp_path,
                                                                                monkeypatch):
    web, cli = pair
    first = "query_id,doc_id,grader,grade\nq000,d000,ann,2\n"
    again = "query_id,doc_id,grader,grade\nq000,d000,ann,1\n"
    monkeypatch.chdir(tmp_path)
    for content in (first, again):
        (tmp_path / "judgments.csv").write_text(content)
        out = invoke(runner, cli.db, "import", "judgments", "judgments.csv", "--scale", "0-3")
    assert out.exit_code != 0 and "('q000', 'd000')" in out.output and "use --replace" in out.output
    client, csrf = as_lead(web)
    assert upload(client, csrf, "judgments", "judgments.csv", first, ["--scale", "0-3"]).status_code == 303
    failed = upload(client, csrf, "judgments", "judgments.csv", again, ["--scale", "0-3"])
    assert 400 <= failed.status_code < 500
    shown = html.unescape(re.search(r'<p class="error" id="error" role="alert">(.*?)</p>', failed.text, re.S).group(1))
    assert shown == ("Error: judgments.csv:2: grader 'ann' already graded query q000, document d000 as 2 on 0-3, "
                     "not 1; tick the box to overwrite what is stored and upload the file again")
    assert "Overwrite judgments whose grade differs" in visible(failed.text)  # the box the message means


def test_upload_page_labels_every_control_and_shows_the_importing_state(pair):
    client, _ = as_lead(pair[0])
    page = client.get("/lead/data").text
    assert page.count('class="importing"') == len(GOOD)
    assert '<script src="/static/lead_admin.js" defer></script>' in page
    assert "Importing " in client.get("/static/lead_admin.js").text


# --- graders --------------------------------------------------------------------------------------------


def test_graders_add_role_token_and_revoke_as_the_cli_does(pair, runner):
    web, cli = pair
    client, csrf = as_lead(web)
    assert client.post("/lead/graders/add", data={"names": "cat, dan", "role": "grader", "csrf": csrf}).status_code == 303
    assert client.post("/lead/graders/add", data={"names": "eve", "role": "lead", "kind": "human", "csrf": csrf}).status_code == 303
    role = client.post("/lead/graders/role", data={"grader": "bob", "role": "lead", "csrf": csrf})
    assert "bob: role lead (was grader)" in visible(client.get(role.headers["location"]).text)
    invoke(runner, cli.db, "graders", "add", "cat", "dan")
    invoke(runner, cli.db, "graders", "add", "eve", "--role", "lead")
    invoke(runner, cli.db, "graders", "set-role", "bob", "lead")
    assert snapshot(web.db) == snapshot(cli.db)

    issued = client.post("/lead/graders/token", data={"grader": "cat", "expires": "12h", "csrf": csrf})
    assert issued.status_code == 200
    url = html.unescape(re.search(r'id="issued-url" readonly value="([^"]+)"', issued.text).group(1))
    assert url.startswith("http://127.0.0.1:8000/login?token=")
    cat = client_for(web.db)
    sign_in(cat, url.split("token=", 1)[1])
    assert cat.get("/").status_code == 200
    revoked = client.post("/lead/graders/revoke", data={"grader": "cat", "csrf": csrf})
    assert "cat: 1 sign-in token(s) revoked, 1 browser session(s) ended" in visible(client.get(revoked.headers["location"]).text)
    assert cat.get("/").status_code == 401
    bad = client.post("/lead/graders/role", data={"grader": "nobody", "role": "lead", "csrf": csrf})
    assert bad.status_code == 404 and "unknown grader" in bad.text


# --- consensus and downloads ----------------------------------------------------------------------------


def test_consensus_from_the_page_writes_what_the_cli_writes_and_fills_the_queue(tmp_path, runner):
    made = []
    for name in ("web", "cli"):
        (tmp_path / name).mkdir()
        db = Database("sqlite", tmp_path / name, migrated=True)
        made.append(graded_two_ways(db, tmp_path / name))
    web, cli = made
    client, csrf = as_lead(web)
    page = client.post("/lead/consensus", data={"method": "mean", "batch": "", "max_spread": "1", "min_graders": "2",
                                                "csrf": csrf})
    assert page.status_code == 200, page.text
    out = invoke(runner, cli.db, "consensus", "--method", "mean", "--format", "json")
    summary = json.loads(out.stdout)
    assert snapshot(web.db) == snapshot(cli.db)
    shown = visible(page.text)
    assert f"{summary['flagged']} flagged for adjudication" in shown
    assert f"Open the adjudication queue ({summary['flagged']} flagged)" in shown
    listed = json.loads(invoke(runner, cli.db, "adjudicate", "list", "--format", "json").stdout)
    assert len(listed) == summary["flagged"] > 0
    assert_clean(page.text)
    bad = client.post("/lead/consensus", data={"method": "mode", "csrf": csrf})
    assert bad.status_code == 400 and "method" in visible(bad.text)
    for ws in made:
        ws.db.drop()


def test_downloads_are_the_cli_outputs(sqlite_db, tmp_path, runner):
    ws = graded_two_ways(sqlite_db, tmp_path)
    client, _ = as_lead(ws)
    assert client.get("/lead/downloads/qrels").status_code == 200
    qrels = client.get("/lead/downloads/qrels")
    assert qrels.headers["content-disposition"].startswith('attachment; filename="qrels.txt"')
    assert qrels.text == invoke(runner, ws.db, "export", "qrels").stdout
    for fmt in ("csv", "json"):
        got = client.get(f"/lead/downloads/report.{fmt}")
        assert got.status_code == 200
        assert got.text.strip() == invoke(runner, ws.db, "report", "--format", fmt).stdout.strip()
    report = client.get("/lead/downloads/report.html")
    assert report.status_code == 200 and "<html" in report.text.lower()
    assert report.headers["content-security-policy"].startswith("default-src 'none'")
    with session_scope(ws.db.engine) as session:  # leave some items open to export
        for item in ws.items("ann")[:3]:
            t.undo_item("b1", item, grader="ann", session=session)
    out_file = tmp_path / "ann.jsonl"
    invoke(runner, ws.db, "tasks", "export", "b1", "--grader", "ann", "--out", str(out_file))
    got = client.get("/lead/downloads/tasks", params={"batch": "b1", "grader": "ann", "fmt": "jsonl"})
    # the same rows as the CLI's file; each export stamps its own time (exported_at, issue 36)
    def rows(text: str) -> list[dict]:
        return [{k: v for k, v in json.loads(line).items() if k != "exported_at"} for line in text.splitlines()]

    assert got.status_code == 200 and rows(got.text) == rows(out_file.read_text()) and got.text.count("\n") == 3
    assert all("exported_at" in json.loads(line) for line in got.text.splitlines())
    missing = client.get("/lead/downloads/tasks", params={"batch": "nope", "grader": "ann", "fmt": "csv"})
    assert missing.status_code == 404 and "nope" in visible(missing.text)


def test_qrels_without_labels_says_what_is_missing(sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path)
    client, _ = as_lead(ws)
    page = client.get("/lead/downloads/qrels")
    assert page.status_code == 404
    assert "no labels to export: run consensus (the Consensus page) first" in visible(page.text)
    assert_clean(page.text)


# --- who may, and what is shown -------------------------------------------------------------------------


def test_graders_get_403_on_every_route_and_strangers_401(pair):
    ws = pair[0]
    ann = client_for(ws.db)
    csrf = sign_in(ann, ws.token("ann"))
    stranger = client_for(ws.db)
    before = ws.db.counts()
    for path in GETS:
        assert ann.get(path).status_code == 403, path
        assert stranger.get(path).status_code == 401, path
    for path in POSTS:
        assert ann.post(path, data={"csrf": csrf, **FULL},
                        files={"file": ("q.csv", b"query_id,text,query_type\nz,z,z\n")}).status_code == 403, path
    assert ws.db.counts() == before


def test_every_post_needs_the_csrf_token(pair):
    ws = pair[0]
    client, _ = as_lead(ws)
    before = ws.db.counts()
    for path in POSTS:
        for data in (FULL, {**FULL, "csrf": "0" * 64}):
            assert client.post(path, data=data, files={"file": ("q.csv", b"query_id,text,query_type\nz,z,z\n")}
                               ).status_code == 403, path
    assert ws.db.counts() == before


def test_every_page_has_labels_for_its_controls_and_no_repr(pair):
    ws = pair[0]
    client, _ = as_lead(ws)
    for path in PAGES:
        page = client.get(path)
        assert page.status_code == 200, path
        assert_clean(page.text)
        ids = set(re.findall(r'<label for="([^"]+)"', page.text))
        for tag in re.findall(r"<(?:input|select|textarea)\b[^>]*>", page.text):
            if 'type="hidden"' in tag:
                continue
            control = re.search(r'id="([^"]+)"', tag)
            wrapped = re.search(r'type="checkbox" name="(graders|systems|query_types)"', tag)
            assert wrapped or (control and control.group(1) in ids), (path, tag)


def test_names_with_markup_are_inert(sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path)
    evil = "<script>alert(1)</script>"
    client, csrf = as_lead(ws)
    client.post("/lead/graders/add", data={"names": evil, "csrf": csrf})
    for path in ("/lead/graders", "/lead/create-batch", "/lead/downloads"):
        page = client.get(path).text
        assert evil not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_activity_page_matches_the_quality_pipeline_and_states_the_pace_rule(sqlite_db, tmp_path):
    from datetime import datetime, timedelta
    from statistics import median

    from sqlalchemy import update

    ws = build_workspace(sqlite_db, tmp_path)
    items = ws.items("ann")
    offsets = [0, 7, 19, 24, 2000, 2011]  # one pause of 1976 s (left out)
    start = datetime(2026, 1, 5, 9, 0, 0)
    with session_scope(ws.db.engine) as session:
        for item in items[:6]:
            t.save_grade("b1", item, 1, grader="ann", session=session)
        t.skip_item("b1", items[6], grader="ann", session=session, reason="page is empty")
        t.skip_item("b1", items[7], grader="ann", session=session, reason="page is empty")
        keys = {item: i for i, item in enumerate(items[:6])}
        for key, row_id in session.execute(select(m.BatchItem.item_key, m.Judgment.id).join(
                m.Judgment, (m.Judgment.query_id == m.BatchItem.query_id) & (m.Judgment.document_id == m.BatchItem.document_id))):
            if key in keys:
                session.execute(update(m.Judgment).where(m.Judgment.id == row_id)
                                .values(created_at=start + timedelta(seconds=offsets[keys[key]])))
    expected = median([7, 12, 5, 11])
    client, _ = as_lead(ws)
    page = client.get("/lead/activity", params={"batch": "b1"})
    assert page.status_code == 200
    assert_clean(page.text)
    row = re.search(r"(?s)<td data-label=\"grader\">ann</td>(.*?)</tr>", page.text).group(1)
    cells = [" ".join(visible(c).split()) for c in re.findall(r"(?s)<td[^>]*>(.*?)</td>", row)]
    assert cells[1:4] == ["6", "2", str(len(items) - 8)]
    assert cells[4] == f"{expected:.1f} s (4 intervals)"
    assert cells[5] == "page is empty: 2"
    assert "An interval longer than 10 minutes is a pause" in visible(page.text)
    assert "No gold answers in this scope" in visible(page.text)


def test_activity_gold_figures_are_those_of_graders_quality(sqlite_db, tmp_path, runner):
    from ndcg_labeling.demo.quality import load_quality_data, play_graders

    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        t.create_batch("g1", scale="0-3", depth=8, overlap=2, graders=["ana", "ben", "chloe", "dev", "emma"],
                       session=session, seed=4, gold_rate=0.2)
        play_graders("g1", session=session, out_dir=tmp_path)
        from ndcg_labeling.labels import importing

        importing.add_graders(["lee"], session=session, role="lead")
    from tests.web.conftest import Workspace

    client, _ = as_lead(Workspace(sqlite_db, "g1"))
    page = client.get("/lead/activity", params={"batch": "g1"}).text
    assert_clean(page)
    quality = json.loads(invoke(runner, sqlite_db, "graders", "quality", "--batch", "g1", "--format", "json").stdout)
    assert len(quality["rows"]) == 5
    for q in quality["rows"]:
        row = re.search(rf'(?s)<td data-label="grader">{q["grader"]}</td>(.*?)</tr>', page).group(1)
        cells = {k: " ".join(visible(v).split()) for k, v in re.findall(r'(?s)<td data-label="([^"]+)">(.*?)</td>', row)}
        assert cells["gold answers"] == str(q["n_gold"])
        assert cells["gold accuracy"] == f"{q['gold_accuracy']:.2f}"
        assert cells["trusted"] == {True: "yes", False: "no"}.get(q["trusted"], q["trusted"])
        drift = "—" if q["drift"] is None else f"{q['drift']:+.2f}" + (" (drifts)" if q["drift_flagged"] else "")
        assert cells["drift"] == drift
        assert cells["median seconds per item"] == "—"  # imported task files carry no per-item time
    # the page states the rule of graders quality as the CLI's JSON does, not a rule of its own
    assert " ".join(quality["rule"].split()) in " ".join(visible(page).split())


def test_docs_describe_the_pages():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "web.md").read_text()
    for path in PAGES:
        assert f"`{path}`" in doc, path


def test_an_upload_name_with_folders_or_dots_is_its_base_name(sqlite_db, tmp_path):
    ws = build_workspace(sqlite_db, tmp_path)
    client, csrf = as_lead(ws)
    for sent, kept in (("../../etc/queries9.csv", "queries9.csv"), ("C:\\\\temp\\\\q.csv", "q.csv")):
        done = upload(client, csrf, "queries", sent, "query_id,text,query_type\nz1,a,b\n", [])
        assert done.status_code == 303, done.text
        assert f"queries from {kept}: " in visible(client.get(done.headers["location"]).text)
    assert not (tmp_path.parent / "etc").exists()
