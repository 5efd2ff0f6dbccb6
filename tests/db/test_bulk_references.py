"""SQLite bulk imports write with foreign keys off and check each key once over the distinct values
(db/references.py). The reference here is SQLite's own enforcement: every write it refuses row by row
must be refused in bulk too, nothing may be written then, and the next transaction on the same pooled
connection must enforce foreign keys again."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from ndcg_labeling.db import migrate
from ndcg_labeling.db import models as m
from ndcg_labeling.db.bulk import ColumnRows, bulk_insert
from ndcg_labeling.db.references import begin_bulk
from ndcg_labeling.db.session import make_engine, session_scope

NOW = "2026-12-03 12:00:00.000000"
RUN_COLS = ["system_id", "query_id", "document_id", "rank", "score"]
JUDGMENT_COLS = ["grader_id", "query_id", "document_id", "grade", "scale", "batch", "created_at"]


@pytest.fixture
def engine(tmp_path: Path):
    engine = make_engine(f"sqlite:///{tmp_path / 'refs.db'}", pool_size=1, max_overflow=0)  # one pooled connection
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO systems (id, name) VALUES (1, 's')"))
        conn.execute(text("INSERT INTO graders (id, name, active) VALUES (1, 'g', 1)"))
        conn.execute(text("INSERT INTO queries (id, external_id) VALUES (1, 'q')"))
        for i in range(1, 21):
            conn.execute(text("INSERT INTO documents (id, external_id) VALUES (:i, :e)"), {"i": i, "e": f"d{i}"})
    yield engine
    engine.dispose()


def _rank_rows(docs: list[int], as_columns: bool):
    rows = [(1, 1, d, r + 1, 1.0) for r, d in enumerate(docs)]
    if as_columns:
        import numpy as np

        return ColumnRows([1, 1, np.asarray(docs, dtype=np.int64), np.arange(1, len(docs) + 1), 1.0], len(docs))
    return rows


def _write(engine, model, columns, rows, *, bulk: bool) -> None:
    with session_scope(engine) as session:
        if bulk:
            begin_bulk(session)
        keys_on = session.connection().exec_driver_sql("PRAGMA foreign_keys").scalar_one()
        assert keys_on == (0 if bulk else 1)
        bulk_insert(model, columns, rows, session=session)


def _count(engine, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


@pytest.mark.parametrize("as_columns", [False, True])
@pytest.mark.parametrize("docs, holes", [
    ([3, 4, 21], ()),        # above the stored range: the range count fails, the join finds it
    ([25, 2], ()),           # far outside
    ([5, 7, 9], (7,)),       # a deleted document inside the range
])
def test_bulk_refuses_what_sqlite_refuses(engine, docs, holes, as_columns):
    with engine.begin() as conn:
        for d in holes:
            conn.execute(text("DELETE FROM documents WHERE id = :d"), {"d": d})
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):  # SQLite itself, row by row
        _write(engine, m.RankingEntry, RUN_COLS, _rank_rows(docs, as_columns), bulk=False)
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        _write(engine, m.RankingEntry, RUN_COLS, _rank_rows(docs, as_columns), bulk=True)
    assert _count(engine, "ranking_entries") == 0


@pytest.mark.parametrize("holes", [(), (6, 11)])
def test_bulk_writes_what_sqlite_accepts(engine, holes):
    with engine.begin() as conn:
        for d in holes:
            conn.execute(text("DELETE FROM documents WHERE id = :d"), {"d": d})
    docs = [d for d in range(1, 21) if d not in holes]
    _write(engine, m.RankingEntry, RUN_COLS, _rank_rows(docs, True), bulk=True)
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT document_id FROM ranking_entries ORDER BY rank")).scalars().all()
        assert stored == docs
        assert conn.execute(text("PRAGMA foreign_key_check")).all() == []  # SQLite's own check of every row


def test_a_text_key_is_checked_in_bulk(engine):
    bad = [(1, 1, 1, 2, "no-such-scale", "", NOW)]
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        _write(engine, m.Judgment, JUDGMENT_COLS, bad, bulk=False)
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        _write(engine, m.Judgment, JUDGMENT_COLS, bad, bulk=True)
    _write(engine, m.Judgment, JUDGMENT_COLS, [(1, 1, 1, 2, "0-3", "", NOW)], bulk=True)
    assert _count(engine, "judgments") == 1


def test_the_next_transaction_enforces_keys_again(engine):
    _write(engine, m.RankingEntry, RUN_COLS, _rank_rows([1, 2], False), bulk=True)
    with engine.connect() as conn:  # the same pooled connection (pool of one)
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
    with pytest.raises(IntegrityError, match="FOREIGN KEY"), engine.begin() as conn:
        conn.execute(text("INSERT INTO ranking_entries (system_id, query_id, document_id, rank) VALUES (1, 1, 99, 9)"))


def test_a_transaction_already_begun_keeps_per_row_keys(engine):
    with session_scope(engine) as session:
        session.execute(text("SELECT 1"))
        begin_bulk(session)  # too late: SQLite switches keys only between transactions
        assert session.connection().exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1


@pytest.fixture
def pg(tmp_path: Path):
    from tests.conftest import Database

    database = Database("postgresql", tmp_path, migrated=True)
    with database.engine.begin() as conn:
        conn.execute(text("INSERT INTO systems (id, name) VALUES (1, 's')"))
        conn.execute(text("INSERT INTO queries (id, external_id) VALUES (1, 'q')"))
        conn.execute(text("INSERT INTO documents (id, external_id) SELECT g, 'd' || g FROM generate_series(1, 3000) g"))
    yield database
    database.drop()


@pytest.mark.pg
@pytest.mark.parametrize("hole", [None, 1500])
def test_pg_bulk_locks_every_referenced_row(pg, hole):
    """The COPY without triggers holds what the triggers would: every referenced document is locked until
    the commit (a concurrent delete waits), over a dense range or, with a hole, through the array."""
    from ndcg_labeling.db.bulk import RANKING_SAME

    if hole:
        with pg.engine.begin() as conn:
            conn.execute(text("DELETE FROM documents WHERE id = :h"), {"h": hole})
    docs = [d for d in range(1, 2501) if d != hole]
    with session_scope(pg.engine) as session:
        bulk_insert(m.RankingEntry, RUN_COLS, _rank_rows(docs, True), session=session, on_conflict=RANKING_SAME)
        keys_off = session.connection().exec_driver_sql("SHOW session_replication_role").scalar_one()
        assert keys_off == "origin"  # set back after the COPY
        with pg.engine.connect() as other:
            for doc in (docs[0], docs[len(docs) // 2], docs[-1]):
                other.exec_driver_sql("SET lock_timeout = '200ms'")  # in each transaction: a rollback undoes it
                with pytest.raises(Exception, match="lock timeout"):
                    other.execute(text("DELETE FROM documents WHERE id = :d"), {"d": doc})
                other.rollback()
    with pg.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM ranking_entries")).scalar_one() == len(docs)


@pytest.mark.pg
def test_pg_bulk_refuses_a_missing_document(pg):
    from ndcg_labeling.db.bulk import RANKING_SAME

    with pg.engine.begin() as conn:
        conn.execute(text("DELETE FROM documents WHERE id = 1200"))
    with pytest.raises(IntegrityError, match="foreign key"), session_scope(pg.engine) as session:
        bulk_insert(m.RankingEntry, RUN_COLS, _rank_rows(list(range(1, 2001)), True), session=session,
                    on_conflict=RANKING_SAME)
    with pg.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM ranking_entries")).scalar_one() == 0


@pytest.mark.pg
@pytest.mark.parametrize("db", ["postgresql"], indirect=True)
@pytest.mark.parametrize("kind", ["judgments", "run"])
@pytest.mark.parametrize("superuser", [True, False])
def test_pg_imports_check_keys_in_bulk_as_superuser_and_per_row_as_a_plain_role(db, tmp_path, monkeypatch, kind,
                                                                                   superuser):
    """Both paths of references.pg_skip_triggers on each import kind: a superuser copies without the per-row
    triggers (keys checked in bulk), a plain role may not set session_replication_role and copies with
    them; both store every row of the file."""
    from sqlalchemy import event

    from ndcg_labeling.db import references
    from ndcg_labeling.labels.importing import import_judgments, import_run

    n = 2_000  # above PG_TRIGGERS_MIN_ROWS
    path = tmp_path / f"{kind}.txt"
    if kind == "run":
        path.write_text("".join(f"q{i // 100} Q0 d{i + 1} {i % 100 + 1} {1 - (i % 100) / 100:.2f} t\n" for i in range(n)))
    else:
        path = path.with_suffix(".csv")
        path.write_text("query_id,doc_id,grader,grade\n" + "".join(f"q{i // 100},d{i + 1},g{i % 3},{i % 4}\n"
                                                                  for i in range(n)))
    engine = db.engine
    if not superuser:
        role = f"plain_{db.schema}"
        with db.engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE ROLE {role} NOLOGIN; GRANT USAGE ON SCHEMA "{db.schema}" TO {role}; '
                                 f'GRANT ALL ON ALL TABLES IN SCHEMA "{db.schema}" TO {role}; '
                                 f'GRANT ALL ON ALL SEQUENCES IN SCHEMA "{db.schema}" TO {role}')
        engine = make_engine(db.url)
        event.listen(engine, "connect", lambda dbapi_con, _r: dbapi_con.execute(f"SET ROLE {role}"))
    paths: list[bool] = []
    skip = references.pg_skip_triggers
    monkeypatch.setattr(references, "pg_skip_triggers", lambda *a: paths.append(skip(*a)) or paths[-1])
    try:
        with session_scope(engine) as session:
            if kind == "run":
                summary = import_run(path, system="s2", session=session)
            else:
                summary = import_judgments(path, scale="0-3", session=session, create_graders=True)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT current_user").scalar_one() == ("postgres" if superuser else role)
    finally:
        if not superuser:
            engine.dispose()
            with db.engine.begin() as conn:
                conn.exec_driver_sql(f'DROP OWNED BY {role}; DROP ROLE {role}')
    assert paths == [superuser] and summary.new == n
    table = "ranking_entries" if kind == "run" else "judgments"
    with db.engine.connect() as conn:
        assert conn.execute(text(f"SELECT count(*) FROM {table} t JOIN documents d ON d.id = t.document_id "
                                 f"JOIN queries q ON q.id = t.query_id")).scalar_one() == n
