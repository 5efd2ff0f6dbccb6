"""The ``db`` fixture hands out a copy of a database migrated once per test process (issue 44); the
copy must be what migrating a new database gives: the same tables, columns, keys, indexes, triggers
and seeded rows, at the same revision."""

from __future__ import annotations

from sqlalchemy import Engine, inspect, text

from ndcg_labeling.db import migrate
from tests.conftest import Database


def _shape(engine: Engine) -> dict[str, object]:
    out: dict[str, object] = {}
    with engine.connect() as conn:
        insp = inspect(conn)
        for table in sorted(insp.get_table_names()):
            columns = [(c["name"], str(c["type"]), c["nullable"], str(c.get("default"))) for c in insp.get_columns(table)]
            keys = sorted((fk["name"] or "", tuple(fk["constrained_columns"]), fk["referred_table"],
                           tuple(fk["referred_columns"]), str(sorted(fk.get("options", {}).items())))
                          for fk in insp.get_foreign_keys(table))
            indexes = sorted((i["name"] or "", tuple(str(c) for c in i["column_names"]), bool(i["unique"]))
                             for i in insp.get_indexes(table))
            uniques = sorted((u["name"] or "", tuple(u["column_names"])) for u in insp.get_unique_constraints(table))
            rows = sorted(map(repr, conn.execute(text(f'SELECT * FROM "{table}"')).all()))
            if table == "server_secrets":  # random keys made by the migration: compared below
                rows = sorted(conn.execute(text("SELECT name FROM server_secrets")).scalars().all())
            out[table] = (columns, insp.get_pk_constraint(table)["constrained_columns"], keys, indexes, uniques, rows)
        if conn.dialect.name == "postgresql":
            out["triggers"] = sorted(conn.execute(text(
                "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND NOT t.tgisinternal")).all())
        else:
            out["triggers"] = sorted(conn.execute(text("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'")).all())
    return out


def _secrets(database: Database) -> set[str]:
    with database.engine.connect() as conn:
        return set(conn.execute(text("SELECT secret FROM server_secrets")).scalars().all())


def test_the_fixture_copy_is_a_freshly_migrated_database(db, tmp_path):
    fresh = Database(db.backend, tmp_path / "fresh")
    try:
        migrate.upgrade(fresh.engine)
        assert migrate.current_revision(db.engine) == migrate.current_revision(fresh.engine) == migrate.HEAD_REVISION
        copied, migrated = _shape(db.engine), _shape(fresh.engine)
        assert len(copied) > 10 and copied == migrated
    finally:
        fresh.drop()


def test_each_test_gets_its_own_copy(db, tmp_path):
    # type(db): the fixture's own class (pytest imports tests/conftest.py as ``conftest``, a second module
    # beside ``tests.conftest``, each with its template)
    other = type(db)(db.backend, tmp_path / "other", migrated=True)
    try:
        with db.engine.begin() as conn:
            conn.execute(text("INSERT INTO graders (name, active, role, kind) VALUES ('only_here', true, 'grader', 'human')"))
        assert db.counts()["graders"] == other.counts()["graders"] + 1
        # a new database makes its own random keys (the sign-in form's): copies do not share the template's
        assert _secrets(db) and _secrets(other) and not _secrets(db) & _secrets(other)
    finally:
        other.drop()


def _pool(database: Database):  # the free PostgreSQL schemas of the fixture's own module (see above)
    # the class's own globals: under xdist another conftest.py may hold the name "conftest" in sys.modules
    return type(database).__init__.__globals__["_pg_schemas"]._free


def test_a_database_given_back_and_handed_out_again_is_a_fresh_copy(db, tmp_path):
    """On PostgreSQL a test's schema is emptied and renamed for a later test: that copy must be a freshly
    migrated database too (rows gone, seeded rows back, sequences restarted, its own keys and name)."""
    fresh = Database(db.backend, tmp_path / "fresh")
    first = type(db)(db.backend, tmp_path / "first", migrated=True)
    try:
        migrate.upgrade(fresh.engine)
        with first.engine.begin() as conn:
            conn.execute(text("INSERT INTO graders (name, active, role, kind) VALUES ('a', true, 'grader', 'human'), "
                              "('b', true, 'grader', 'human')"))
            conn.execute(text("DELETE FROM scale_grades WHERE scale = '0-4' AND grade = 4"))
        keys, name = _secrets(first), first.schema
        first.drop()
        if db.backend == "postgresql":
            assert name in _pool(db)
        second = type(db)(db.backend, tmp_path / "second", migrated=True)
        try:
            if db.backend == "postgresql":
                assert name not in _pool(db) and second.schema != name
            assert _shape(second.engine) == _shape(fresh.engine)
            assert not _secrets(second) & keys
            with second.engine.begin() as conn:
                conn.execute(text("INSERT INTO graders (name, active, role, kind) VALUES ('c', true, 'grader', 'human')"))
                assert conn.execute(text("SELECT id FROM graders WHERE name = 'c'")).scalar_one() == 1
        finally:
            second.drop()
    finally:
        fresh.drop()


def test_a_database_whose_shape_a_test_changed_is_not_handed_out_again(db, tmp_path):
    first = type(db)(db.backend, tmp_path / "first", migrated=True)
    migrate.downgrade(first.engine, "0013")
    name = first.schema
    first.drop()
    if db.backend == "postgresql":
        assert name not in _pool(db)
    second = type(db)(db.backend, tmp_path / "second", migrated=True)
    try:
        assert migrate.current_revision(second.engine) == migrate.HEAD_REVISION
        assert "judge_runs" in inspect(second.engine).get_table_names()
    finally:
        second.drop()
