"""Several processes grade the same batch at once (four through the library, one through
`tasks import`): every grade is stored exactly once, no item gets more graders than its overlap, and
no process fails on a collision (deadlock, serialization or unique-key race) without retrying.
On SQLite the writers wait on the busy timeout instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text

from tests.conftest import invoke
from tests.labels.grade_worker import grade_for

ROOT = Path(__file__).resolve().parents[2]
OVERLAP = 3
PER_WORKER = 80


def _items(runner, db, tmp_path: Path, grader: str) -> list[str]:
    out = tmp_path / f"{grader}.csv"
    out.unlink(missing_ok=True)  # tasks export keeps an existing file (issue 11 item 8)
    assert invoke(runner, db, "tasks", "export", "b1", "--grader", grader, "--out", str(out)).exit_code == 0
    return [line.split(",")[0] for line in out.read_text().splitlines()[1:]]


def test_concurrent_graders(runner, db, tmp_path):
    graders = ["g1", "g2", "g3", "g4", "g5"]
    assert invoke(runner, db, "graders", "add", *graders).exit_code == 0
    run = tmp_path / "run.txt"
    run.write_text("".join(f"q{q} Q0 d{q}_{d} {d + 1} {100 - d} s\n" for q in range(30) for d in range(10)))
    assert invoke(runner, db, "import", "run", str(run), "--system", "s").exit_code == 0
    created = invoke(runner, db, "tasks", "create", "b1", "--scale", "0-3", "--depth", "10", "--overlap", str(OVERLAP),
                     "--graders", ",".join(graders), "--seed", "3")
    assert created.exit_code == 0, created.output

    # g1 is graded by two processes at once, in the same order: they race on the very same rows.
    plans = {"w1": ("g1", _items(runner, db, tmp_path, "g1")[:PER_WORKER]),
             "w2": ("g1", _items(runner, db, tmp_path, "g1")[:PER_WORKER]),
             "w3": ("g2", _items(runner, db, tmp_path, "g2")[:PER_WORKER]),
             "w4": ("g3", _items(runner, db, tmp_path, "g3")[:PER_WORKER])}
    g4_items = _items(runner, db, tmp_path, "g4")[:PER_WORKER]
    graded = tmp_path / "g4-graded.csv"
    graded.write_text("item_id,grade\n" + "".join(f"{i},{grade_for(i)}\n" for i in g4_items))

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = {}
    start_at = str(time.time() + 6)
    for name, (grader, items) in plans.items():
        ids = tmp_path / f"{name}.ids"
        ids.write_text("\n".join(items))
        procs[name] = subprocess.Popen([sys.executable, "-m", "tests.labels.grade_worker", db.url, "b1", grader,
                                        str(ids), start_at], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
    procs["import"] = subprocess.Popen([sys.executable, "-m", "ndcg_labeling", "tasks", "import", str(graded),
                                        "--grader", "g4", "--db", db.url], cwd=ROOT, env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = {name: (p.wait(timeout=300), *p.communicate()) for name, p in procs.items()}
    for name, (code, _out, err) in results.items():
        assert code == 0, f"{name} failed: {err[-2000:]}"
    for name in plans:
        assert results[name][1].startswith(f"graded {PER_WORKER} retries ")
    print({name: results[name][1].strip() for name in plans})

    expected = {("g1", i, grade_for(i)) for i in plans["w1"][1]}
    expected |= {("g2", i, grade_for(i)) for i in plans["w3"][1]}
    expected |= {("g3", i, grade_for(i)) for i in plans["w4"][1]}
    expected |= {("g4", i, grade_for(i)) for i in g4_items}
    with db.engine.connect() as conn:
        stored = conn.execute(text(
            "SELECT g.name, bi.item_key, j.grade FROM judgments j JOIN graders g ON g.id = j.grader_id "
            "JOIN batch_items bi ON bi.query_id = j.query_id AND bi.document_id = j.document_id "
            "WHERE j.batch = 'b1'")).all()
        max_graders = conn.execute(text(
            "SELECT MAX(n) FROM (SELECT COUNT(DISTINCT grader_id) AS n FROM judgments WHERE batch = 'b1' "
            "GROUP BY query_id, document_id) t")).scalar_one()
        done = conn.execute(text("SELECT COUNT(*) FROM assignments WHERE status = 'done'")).scalar_one()
    assert len(stored) == len(set(stored)) == len(expected)  # each grade exactly once
    assert set(stored) == expected
    assert max_graders <= OVERLAP
    assert done == len(expected)


def test_grade_retried_after_losing_a_race(runner, db, tmp_path):
    """A writer that loses a unique-key race on PostgreSQL is retried and then updates the winner's row;
    on SQLite the second writer waits for the lock (busy timeout) and needs no retry."""
    import threading

    from ndcg_labeling.labels.tasks import save_grade
    from ndcg_labeling.labels.transactions import run_in_transaction

    invoke(runner, db, "graders", "add", "g1")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2 s\n")
    invoke(runner, db, "import", "run", str(run), "--system", "s")
    assert invoke(runner, db, "tasks", "create", "b1", "--scale", "0-3", "--depth", "1", "--overlap", "1",
                  "--graders", "g1", "--seed", "1").exit_code == 0
    (item,) = _items(runner, db, tmp_path, "g1")
    retries: list[BaseException] = []
    result: dict[str, object] = {}

    conn = db.engine.connect()
    tx = conn.begin()
    conn.execute(text("INSERT INTO judgments (grader_id, query_id, document_id, grade, scale, batch, created_at) "
                      "SELECT g.id, bi.query_id, bi.document_id, 1, '0-3', 'b1', '2026-01-01 00:00:00' "
                      "FROM graders g, batch_items bi WHERE g.name = 'g1'"))

    def second_writer() -> None:
        result["grade"] = run_in_transaction(
            db.engine, lambda s: save_grade("b1", item, 2, grader="g1", session=s), on_retry=retries.append)

    thread = threading.Thread(target=second_writer)
    thread.start()
    time.sleep(1.5)  # the second writer is now blocked on the first one's uncommitted row (or lock)
    assert thread.is_alive()
    tx.commit()
    conn.close()
    thread.join(timeout=60)
    assert result["grade"] == 2
    with db.engine.connect() as c:
        assert c.execute(text("SELECT grade FROM judgments WHERE batch = 'b1'")).scalars().all() == [2]
    if db.backend == "postgresql":
        assert len(retries) == 1 and getattr(retries[0], "orig", None).sqlstate == "23505"
    else:
        assert retries == []
