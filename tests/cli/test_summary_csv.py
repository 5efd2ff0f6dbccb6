"""``--format csv`` of the commands that print a summary (``tasks create | extend | delete``, ``keys add``,
``graders token``) and ``--summary-format csv`` of the import commands (whose ``--format`` is the input
file's): the CSV, read back with the csv module, has the keys of the same command's JSON, in order, and
its values as strings; on SQLite and PostgreSQL. Twin databases that went through the same commands give
the two formats the same state where a command cannot run twice on one."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ndcg_labeling.spreadsheet import restore
from tests.budget.test_budget_cli import BASE, grade_all
from tests.conftest import Database, invoke
from tests.labels.test_tasks import assignments, fill, make_corpus


@pytest.fixture
def twin(db: Database, tmp_path: Path) -> Iterator[Database]:
    """A second fresh database on the same backend as ``db``."""
    folder = tmp_path / "twin"
    folder.mkdir()
    database = Database(db.backend, folder, migrated=True)
    yield database
    database.drop()


def as_cell(value: object) -> str:
    """How a value of the JSON summary reads in the CSV: lists and dicts as compact JSON, None empty."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def same_summary(as_csv, as_json, *, differ: tuple[str, ...] = ()) -> dict[str, str]:
    """Assert that the CSV output has the JSON output's keys (in order) and values (but ``differ``);
    return the CSV row as a dict."""
    assert as_csv.exit_code == 0, as_csv.output
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    rows = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert len(rows) == 2, as_csv.stdout
    assert rows[0] == list(data)
    got = dict(zip(rows[0], rows[1], strict=True))
    assert {k: v for k, v in got.items() if k not in differ} == {k: as_cell(v) for k, v in data.items()
                                                                 if k not in differ}
    return got


def test_tasks_create_and_delete(runner, db, tmp_path):
    make_corpus(db, tmp_path, queries=3, docs=6)
    args = ["week1", "--scale", "0-3", "--depth", "2", "--overlap", "2", "--graders", "ann,bob,cat", "--seed", "5",
            "--gold-feedback"]
    as_json = invoke(runner, db, "tasks", "create", *args, "--format", "json")
    deleted_csv = invoke(runner, db, "tasks", "delete", "week1", "--format", "csv")
    as_csv = invoke(runner, db, "tasks", "create", *args, "--format", "csv")  # the same batch again
    got = same_summary(as_csv, as_json)
    # lists are one cell of compact JSON, a flag reads True
    assert (got["systems"], got["graders"], got["warnings"]) == ('["bm25","dense"]', '["ann","bob","cat"]', "[]")
    assert (got["batch"], got["gold_feedback"], got["seed"]) == ("week1", "True", "5")
    deleted = same_summary(deleted_csv, invoke(runner, db, "tasks", "delete", "week1", "--format", "json"))
    assert deleted == {"batch": "week1", "items": got["items"], "assignments": got["assignments"]}


def test_tasks_create_with_a_strategy_and_extend(runner, db, twin, tmp_path):
    results = {}
    for database, fmt in ((db, "csv"), (twin, "json")):
        make_corpus(database, tmp_path)
        created = invoke(runner, database, "tasks", "create", "b1", *BASE, "--strategy", "mtf", "--budget", "8",
                         "--format", fmt)
        grade_all(database, "b1")
        results[fmt] = (created, invoke(runner, database, "tasks", "extend", "b1", "--budget", "6", "--format", fmt))
    same_summary(results["csv"][0], results["json"][0])
    got = same_summary(results["csv"][1], results["json"][1])
    assert (got["batch"], got["strategy"], got["round"], got["items"]) == ("b1", "mtf", "2", "6")


def test_tasks_import_summary_format(runner, db, twin, tmp_path):
    for database in (db, twin):
        make_corpus(database, tmp_path)
        assert invoke(runner, database, "tasks", "create", "b1", "--scale", "0-3", "--depth", "3", "--overlap", "1",
                      "--graders", "ann,bob", "--seed", "9").exit_code == 0
    out = tmp_path / "ann, the \"first\".csv"  # a comma and quotes: the CSV cell is quoted
    argv = ["tasks", "import", str(out), "--grader", "ann", "--format", "csv"]
    printed = {}
    for database, fmt in ((db, ["--summary-format", "csv"]), (twin, ["--json"])):  # item ids are random: a file each
        assert invoke(runner, database, "tasks", "export", "b1", "--grader", "ann", "--out", str(out),
                      "--force").exit_code == 0
        keys = assignments(database, "b1").query("grader == 'ann'")["item_key"].tolist()
        fill(out, "csv", {k: ("2" if i else "") for i, k in enumerate(keys)})
        printed[fmt[0]] = invoke(runner, database, *argv, *fmt)
    as_csv, as_json = printed["--summary-format"], printed["--json"]
    got = same_summary(as_csv, as_json)
    assert (got["path"], got["new"], got["left_open"]) == (str(out), str(len(keys) - 1), "1")
    assert f'"{str(out).replace(chr(34), 2 * chr(34))}"' in as_csv.stdout
    # --json and --summary-format json agree; the same file again is unchanged
    again = invoke(runner, twin, *argv, "--json", "--summary-format", "json")
    assert json.loads(again.stdout)["unchanged"] == len(keys) - 1


def test_json_and_another_summary_format_are_refused(runner, db, tmp_path):
    make_corpus(db, tmp_path)
    path = tmp_path / "q.csv"
    path.write_text("query_id,text,query_type\nnew1,a question,navigational\n", encoding="utf-8")
    before = db.counts()
    for fmt in ("csv", "text"):
        result = invoke(runner, db, "import", "queries", str(path), "--json", "--summary-format", fmt)
        assert result.exit_code == 1
        assert result.stderr.splitlines() == [f"Error: --json and --summary-format {fmt} disagree: give one of them"]
        assert result.stdout == ""
    result = invoke(runner, db, "tasks", "import", str(path), "--grader", "ann", "--json", "--summary-format", "csv")
    assert result.stderr.splitlines() == ["Error: --json and --summary-format csv disagree: give one of them"]
    assert db.counts() == before


def test_import_commands_and_gold_import(runner, db, twin, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative file names: one starts with '=', as a spreadsheet formula does
    Path("=q.csv").write_text("query_id,text,query_type\nq1,\"cheap, \"\"flights\"\"\",transactional\n", encoding="utf-8")
    Path("d.csv").write_text("doc_id,title,body\nd1,Flights,Cheap\n", encoding="utf-8")
    Path("gold.csv").write_text("query_id,doc_id,grade\nq1,d1,2\n", encoding="utf-8")
    Path("run.tsv").write_text("query_id\tdoc_id\trank\nq1\td1\t1\n", encoding="utf-8")
    Path("j.csv").write_text("query_id,doc_id,grader,grade\nq1,d1,ann,3\nq1,d9,bob,1\n", encoding="utf-8")
    Path("g.csv").write_text("grader,display_name\nann,Ann\n", encoding="utf-8")
    commands = [["import", "queries", "=q.csv"], ["import", "documents", "d.csv"], ["import", "graders", "g.csv"],
                ["import", "run", "run.tsv", "--system", "bm25"],
                ["import", "judgments", "j.csv", "--scale", "0-3", "--create-graders"],
                ["gold", "import", "gold.csv", "--scale", "0-3"]]
    for argv in commands:
        got = same_summary(invoke(runner, db, *argv, "--summary-format", "csv"),
                           invoke(runner, twin, *argv, "--summary-format", "json"), differ=("path",))
        assert got["path"] == ("'=q.csv" if argv[2] == "=q.csv" else argv[2])  # neutralised, and restorable
        assert restore(got["path"]) == argv[2]
    assert got["new"] == "1"
    judged = same_summary(invoke(runner, db, "import", "judgments", "j.csv", "--scale", "0-3", "--summary-format", "csv"),
                          invoke(runner, twin, "import", "judgments", "j.csv", "--scale", "0-3", "--json"))
    assert judged["unchanged"] == "2"


def test_keys_add_and_graders_token(runner, db):
    assert invoke(runner, db, "graders", "add", "ann").exit_code == 0
    got = same_summary(invoke(runner, db, "keys", "add", "feeder-1", "--format", "csv"),
                       invoke(runner, db, "keys", "add", "feeder-2", "--format", "json"), differ=("name", "key"))
    assert got["name"] == "feeder-1" and got["key"].startswith("ndcgk_") and got["role"] == "ingest"
    got = same_summary(invoke(runner, db, "graders", "token", "ann", "--format", "csv", "--port", "8443"),
                       invoke(runner, db, "graders", "token", "ann", "--format", "json", "--port", "8443"),
                       differ=("token", "url", "expires"))
    # a token may start with '-', which the CSV writes with a leading ' (restore undoes it)
    assert got["url"] == f"http://127.0.0.1:8443/login?token={restore(got['token'])}" and got["expires"].endswith("Z")


def test_tasks_create_from_traffic(runner, db, twin, tmp_path):
    rng = np.random.default_rng(3)
    lines = ["request_id,query_id,doc_id,position,clicked,ts"]
    for r in range(60):
        q, ts = f"q{r % 3}", 1_700_000_000.0 - float(rng.uniform(0, 86400))
        lines += [f"r{r},{q},{q}d{d},{p},0,{ts}" for p, d in enumerate(rng.permutation(8)[:4], start=1)]
    (tmp_path / "traffic.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "q.csv").write_text("query_id,text,query_type\nq0,a,x\nq1,b,x\nq2,c,y\n", encoding="utf-8")
    argv = ["tasks", "create", "t", "--from-traffic", str(tmp_path / "traffic.csv"), "--budget", "5", "--scale", "0-3",
            "--overlap", "1", "--graders", "ann", "--seed", "1"]
    for database in (db, twin):
        assert invoke(runner, database, "import", "queries", str(tmp_path / "q.csv")).exit_code == 0
        assert invoke(runner, database, "graders", "add", "ann").exit_code == 0
    got = same_summary(invoke(runner, db, *argv, "--format", "csv"), invoke(runner, twin, *argv, "--format", "json"))
    assert json.loads(got["traffic"])["pairs_pooled"] == 5


def test_text_summaries_are_inert(runner, db, tmp_path):
    path = tmp_path / "evil\x1b[2J\nq.csv"  # a file name that would clear the screen and fake a second line
    path.write_text("query_id,text,query_type\nq1,a question,navigational\n", encoding="utf-8")
    result = invoke(runner, db, "import", "queries", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"queries from {tmp_path}/evil\\x1b[2J\\nq.csv: 1 new, 0 unchanged"]
    # csv goes as data: the name as it is, quoted by the csv module
    result = invoke(runner, db, "import", "queries", str(path), "--summary-format", "csv")
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[1][:2] == ["queries", str(path)]
