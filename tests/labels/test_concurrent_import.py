"""Several processes import at once into one database (issue "team trust", item 1).

Eight processes import files that share 2,000 new query and document ids (six `import judgments`, two
graders' files twice, and two `import run` of the same system and ranking): every process exits 0, no
traceback, and every table holds exactly the union of the files. Then `import documents` and `import
queries` race runs that create the same ids as placeholders (and, made certain, an id is committed
between an import's look-up and its insert). Then `tasks import` of a grader's filled task file races
two library grading sessions of the same grader over the same items.
On PostgreSQL the writers overlap; on SQLite they queue on the busy timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import invoke
from tests.labels.grade_worker import grade_for

ROOT = Path(__file__).resolve().parents[2]
SHARED = 2_000  # query and document ids every file names
OWN = 100  # ids only one file names
JUDGMENT_PROCS = 6
RUN_PROCS = 2


def _grade(i: int) -> int:
    return (i * 7) % 4


def _start(argv: list[str], start_at: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "tests.labels.import_worker", start_at, *argv], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(procs: dict[str, subprocess.Popen[str]]) -> dict[str, tuple[int, str, str]]:
    results = {name: (p.wait(timeout=600), *p.communicate()) for name, p in procs.items()}
    for name, (code, out, err) in results.items():
        assert code == 0, f"{name} exited {code}: {out[-1000:]} {err[-3000:]}"
        assert "Traceback" not in err and "Error" not in err, f"{name}: {err[-3000:]}"
    return results


def _counts(db) -> dict[str, int]:
    with db.engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
                for t in ("queries", "documents", "graders", "systems", "judgments", "ranking_entries")}


def test_eight_imports_share_new_ids(db, tmp_path):
    procs = {}
    start_at = str(time.time() + 8)
    for p in range(JUDGMENT_PROCS):
        grader = f"g{p % 3}"  # processes p and p + 3 import the same grader's judgments: they race on every key
        rows = [f"q{i},d{i},{grader},{_grade(i)}" for i in range(SHARED)]
        rows += [f"p{p}q{j},p{p}d{j},{grader},{_grade(j)}" for j in range(OWN)]
        path = tmp_path / f"judgments{p}.csv"
        path.write_text("query_id,doc_id,grader,grade\n" + "\n".join(rows) + "\n")
        procs[f"judgments{p}"] = _start(["import", "judgments", str(path), "--scale", "0-3", "--create-graders",
                                         "--db", db.url], start_at)
    for p in range(JUDGMENT_PROCS, JUDGMENT_PROCS + RUN_PROCS):
        # the same system and ranking of the shared ids, in reverse order, plus ids of their own
        lines = [f"q{i} Q0 d{i} 1 1.0 s" for i in reversed(range(SHARED))]
        lines += [f"q{i} Q0 d{(i + 1) % SHARED} 2 0.5 s" for i in range(SHARED)]
        lines += [f"p{p}q{j} Q0 p{p}d{j} 1 1.0 s" for j in range(OWN)]
        path = tmp_path / f"run{p}.txt"
        path.write_text("\n".join(lines) + "\n")
        procs[f"run{p}"] = _start(["import", "run", str(path), "--system", "bm25", "--db", db.url], start_at)
    results = _finish(procs)

    n_procs = JUDGMENT_PROCS + RUN_PROCS
    assert _counts(db) == {"queries": SHARED + n_procs * OWN, "documents": SHARED + n_procs * OWN, "graders": 3,
                           "systems": 1, "judgments": 3 * SHARED + JUDGMENT_PROCS * OWN,
                           "ranking_entries": 2 * SHARED + RUN_PROCS * OWN}
    with db.engine.connect() as conn:
        stored = set(conn.execute(text(
            "SELECT g.name, q.external_id, d.external_id, j.grade FROM judgments j JOIN graders g ON g.id = j.grader_id "
            "JOIN queries q ON q.id = j.query_id JOIN documents d ON d.id = j.document_id")).all())
        ranking = set(conn.execute(text(
            "SELECT q.external_id, d.external_id, r.rank FROM ranking_entries r JOIN queries q ON q.id = r.query_id "
            "JOIN documents d ON d.id = r.document_id")).all())
    expected = {(f"g{g}", f"q{i}", f"d{i}", _grade(i)) for g in range(3) for i in range(SHARED)}
    expected |= {(f"g{p % 3}", f"p{p}q{j}", f"p{p}d{j}", _grade(j)) for p in range(JUDGMENT_PROCS) for j in range(OWN)}
    assert stored == expected
    expected_ranking = {(f"q{i}", f"d{i}", 1) for i in range(SHARED)} | {
        (f"q{i}", f"d{(i + 1) % SHARED}", 2) for i in range(SHARED)}
    expected_ranking |= {(f"p{p}q{j}", f"p{p}d{j}", 1) for p in range(JUDGMENT_PROCS, n_procs) for j in range(OWN)}
    assert ranking == expected_ranking

    # Each process's summary counts the ids it created; together they created each shared id once.
    created_q = 0
    for _code, out, _err in results.values():
        if "queries created without text" in out:
            created_q += int(out.split("; ")[1].split(" queries created")[0])
    assert created_q == SHARED + n_procs * OWN


def _items(runner, db, tmp_path: Path, grader: str) -> list[str]:
    out = tmp_path / f"{grader}.csv"
    assert invoke(runner, db, "tasks", "export", "b1", "--grader", grader, "--out", str(out)).exit_code == 0
    return [line.split(",")[0] for line in out.read_text().splitlines()[1:]]


def test_tasks_import_races_library_grading_of_the_same_grader(runner, db, tmp_path):
    assert invoke(runner, db, "graders", "add", "g1").exit_code == 0
    run = tmp_path / "run.txt"
    run.write_text("".join(f"q{q} Q0 d{q}_{d} {d + 1} {100 - d} s\n" for q in range(40) for d in range(10)))
    assert invoke(runner, db, "import", "run", str(run), "--system", "s").exit_code == 0
    created = invoke(runner, db, "tasks", "create", "b1", "--scale", "0-3", "--depth", "10", "--overlap", "1",
                     "--graders", "g1", "--seed", "5")
    assert created.exit_code == 0, created.output
    items = _items(runner, db, tmp_path, "g1")
    assert len(items) == 400
    graded = tmp_path / "g1-graded.csv"
    graded.write_text("item_id,grade\n" + "".join(f"{i},{grade_for(i)}\n" for i in items))

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start_at = str(time.time() + 8)
    procs: dict[str, subprocess.Popen[str]] = {}
    for name, order in (("forward", items), ("backward", items[::-1])):
        ids = tmp_path / f"{name}.ids"
        ids.write_text("\n".join(order))
        procs[name] = subprocess.Popen([sys.executable, "-m", "tests.labels.grade_worker", db.url, "b1", "g1",
                                        str(ids), start_at], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
    for k in range(2):
        procs[f"tasks-import{k}"] = _start(["tasks", "import", str(graded), "--grader", "g1", "--db", db.url],
                                           str(float(start_at) + 0.5 * k))
    results = _finish(procs)
    assert results["forward"][1].startswith("graded 400 ")
    with db.engine.connect() as conn:
        stored = conn.execute(text(
            "SELECT bi.item_key, j.grade FROM judgments j JOIN batch_items bi "
            "ON bi.query_id = j.query_id AND bi.document_id = j.document_id WHERE j.batch = 'b1'")).all()
        done = conn.execute(text("SELECT COUNT(*) FROM assignments WHERE status = 'done'")).scalar_one()
    assert len(stored) == len(set(stored)) == 400  # one grade per item, none lost, none twice
    assert set(stored) == {(i, grade_for(i)) for i in items}
    assert done == 400


def test_documents_and_queries_imports_race_runs_that_create_them(db, tmp_path):
    # Two `import documents` and two `import queries` of the same new ids race two `import run`, which
    # create the same ids as placeholders: every process exits 0, each id is stored once, and the
    # documents and queries carry their file's title and text whoever stored the id first.
    n = 2_000
    docs = tmp_path / "docs.csv"
    docs.write_text("doc_id,title,body\n" + "".join(f"d{i},title {i},body {i}\n" for i in range(n)))
    queries = tmp_path / "queries.csv"
    queries.write_text("query_id,text,query_type\n" + "".join(f"q{i},text {i},head\n" for i in range(n)))
    procs = {}
    start_at = str(time.time() + 8)
    for p in range(2):
        procs[f"documents{p}"] = _start(["import", "documents", str(docs), "--db", db.url], start_at)
        procs[f"queries{p}"] = _start(["import", "queries", str(queries), "--db", db.url], start_at)
        run = tmp_path / f"run{p}.txt"
        run.write_text("".join(f"q{i} Q0 d{i} 1 1.0 s{p}\n" for i in range(n)))
        procs[f"run{p}"] = _start(["import", "run", str(run), "--system", f"s{p}", "--db", db.url], start_at)
    _finish(procs)
    with db.engine.connect() as conn:
        stored_docs = set(conn.execute(text("SELECT external_id, title, body FROM documents")).all())
        stored_queries = set(conn.execute(text("SELECT external_id, text, query_type FROM queries")).all())
        entries = conn.execute(text("SELECT COUNT(*) FROM ranking_entries")).scalar_one()
    assert stored_docs == {(f"d{i}", f"title {i}", f"body {i}") for i in range(n)}
    assert stored_queries == {(f"q{i}", f"text {i}", "head") for i in range(n)}
    assert entries == 2 * n


def test_import_documents_over_an_id_stored_after_its_check(db, tmp_path, monkeypatch):
    # The race above made certain: between the import's look-up of existing ids and its insert, another
    # writer commits one of the new ids as a placeholder (as `import run` does). The import still
    # succeeds and the placeholder gets the file's title and body. SQLite serializes writers (BEGIN
    # IMMEDIATE), so the other writer cannot get in between there.
    if db.backend == "sqlite":
        pytest.skip("SQLite writers queue: no writer commits inside another's transaction")
    from ndcg_labeling.db import repository as repo
    from ndcg_labeling.db.session import session_scope
    from ndcg_labeling.labels import importing

    docs = tmp_path / "docs.csv"
    docs.write_text("doc_id,title,body\nd1,One,first body\nd2,Two,second body\n")
    original = repo.bulk_insert

    def racing_insert(*args, **kwargs):
        with db.engine.begin() as other:
            other.execute(text("INSERT INTO documents (external_id) VALUES ('d2')"))
        return original(*args, **kwargs)

    monkeypatch.setattr(repo, "bulk_insert", racing_insert)
    with session_scope(db.engine) as session:
        summary = importing.import_documents(docs, session=session)
    assert summary.new == 2
    with db.engine.connect() as conn:
        stored = set(conn.execute(text("SELECT external_id, title, body FROM documents")).all())
    assert stored == {("d1", "One", "first body"), ("d2", "Two", "second body")}
