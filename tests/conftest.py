"""Shared fixtures: a fresh migrated database per test, on SQLite and (when
``NDCG_LABELING_TEST_PG_URL`` is set) on PostgreSQL, each test in its own schema.

The migrations run once per test process (each xdist worker), into a template; every test gets a
copy of it (issue 44): SQLite copies the migrated file; PostgreSQL replays the template schema's
``pg_dump`` into a new schema the first time, and afterwards hands out a schema an earlier test of the
same process gave back, emptied (its rows deleted, the migrations' seeded rows and the sequences put
back) and renamed (so every test still sees a schema name, and a URL, of its own). A schema whose shape a
test changed (a downgrade, a grant) is dropped, not reused. Measured per test on this machine: replaying
the dump 1.43 s, ``CREATE DATABASE ... TEMPLATE`` 2.48 s (it checkpoints), ``TRUNCATE`` of the 30
tables 1.59 s (new files for every table and index), the reuse below 0.08 s.
The migration tests start from ``empty_db`` and really migrate up and down.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, make_url, text
from typer.testing import CliRunner

from ndcg_labeling.db import migrate
from ndcg_labeling.db.session import make_engine

PG_URL = os.environ.get("NDCG_LABELING_TEST_PG_URL")


@pytest.fixture(autouse=True, scope="session")
def compiled_kernels() -> None:
    """Run the compiled metric kernels for every call in the tests, so small test inputs run them too.

    Outside the tests the default policy takes numba only for large calls (see ndcg_labeling.backend);
    tests/test_backend.py checks the policy in subprocesses and the NumPy path's numbers.
    """
    from ndcg_labeling import backend
    from ndcg_labeling.metrics import numba_available

    if numba_available():
        backend.configure("numba")


@pytest.fixture(autouse=True, scope="session")
def one_click_command_per_app() -> Iterator[None]:
    """Build the click command of a Typer app once, not at every ``CliRunner.invoke``.

    ``typer.testing.CliRunner.invoke`` converts the app into a click command tree on each call (about
    0.4 s for this CLI, four fifths of a small command's time in the tests); the tool itself builds it
    once per process. The tree depends only on the app's registered commands, so it is kept per app
    (and rebuilt when a command is registered anywhere in its tree)."""
    import typer
    import typer.testing

    build = typer.testing._get_command
    built: dict[int, tuple[object, int, object]] = {}

    def shape(app: typer.Typer) -> int:  # commands in the whole tree (sub-apps gain commands too)
        return len(app.registered_commands) + sum(1 + shape(g.typer_instance) for g in app.registered_groups
                                                  if g.typer_instance is not None)

    def get_command(app: typer.Typer) -> object:
        kept = built.get(id(app))
        now = shape(app)
        if kept is None or kept[0] is not app or kept[1] != now:
            kept = built[id(app)] = (app, now, build(app))
        return kept[2]

    typer.testing._get_command = get_command
    yield
    typer.testing._get_command = build


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Make ``--dist loadgroup`` honour the ``xdist_group`` marks again (on each xdist worker).

    pytest-xdist (3.8) names a marked test's group by appending ``@group`` to ``item._nodeid``; pytest 9.2
    builds ``nodeid`` from ``item._id`` and ignores ``_nodeid``, so every group mark was a no-op and the
    scheduler dealt a group's tests to both workers: the Spark JVM, the Monte-Carlo draws, the demo and the
    wheel were each made twice per run. The same suffix is set here through ``_id`` where it is missing
    (nothing changes where xdist's own renaming works). tests/test_xdist_groups.py checks it."""
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own renaming works there
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)]


def pg_schema_url(schema: str) -> str:
    """The PostgreSQL test URL with ``search_path`` set to ``schema`` (so a test has its own tables)."""
    assert PG_URL is not None
    sep = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{sep}options=-csearch_path%3D{schema}"


_admin: Engine | None = None


def _pg_admin() -> Engine:
    """One engine on the PostgreSQL test database per process, to create and drop test schemas."""
    global _admin
    if _admin is None:
        assert PG_URL is not None
        _admin = make_engine(PG_URL)
    return _admin


def _pg_run(sql: str) -> None:
    # The schema of one test is thrown away after it: no need to wait for the WAL on disk.
    with _pg_admin().begin() as conn:
        conn.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")
        conn.exec_driver_sql(sql)


class _Templates:
    """The migrated databases of this process, made on first use: a SQLite file and the SQL that
    recreates a migrated PostgreSQL schema under another name (None: pg_dump is not available, and
    each test migrates its own schema)."""

    def __init__(self) -> None:
        self._sqlite: Path | None = None
        self._pg_ddl: str | None = None
        self._pg_tried = False

    def sqlite_file(self) -> Path:
        if self._sqlite is None:
            folder = Path(tempfile.mkdtemp(prefix="ndcg-labeling-template-"))
            atexit.register(shutil.rmtree, folder, True)
            path = folder / "template.db"
            engine = make_engine(f"sqlite:///{path}")
            migrate.upgrade(engine)
            engine.dispose()
            self._sqlite = path
        return self._sqlite

    def pg_ddl(self) -> str | None:
        """The SQL of a migrated schema, naming it ``{schema}`` (a placeholder to fill)."""
        if not self._pg_tried:
            self._pg_tried = True
            self._pg_ddl = self._dump_pg_template()
        return self._pg_ddl

    @staticmethod
    def _dump_pg_template() -> str | None:
        if shutil.which("pg_dump") is None:
            return None
        name = f"ndcg_tmpl_{uuid.uuid4().hex[:16]}"
        _pg_run(f'CREATE SCHEMA "{name}"')
        try:
            engine = make_engine(pg_schema_url(name))
            migrate.upgrade(engine)
            engine.dispose()
            url = make_url(PG_URL or "")
            env = dict(os.environ)
            if url.password:
                env["PGPASSWORD"] = str(url.password)
            args = ["pg_dump", "--schema", name, "--no-owner", "--no-privileges", "--inserts",
                    "--host", url.host or "localhost", "--port", str(url.port or 5432),
                    "--username", url.username or "postgres", url.database or "postgres"]
            done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
        finally:
            _pg_run(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        if done.returncode != 0:  # a pg_dump older than the server, say: migrate per test instead
            return None
        # psql's meta-commands (\restrict) are not SQL; the template's name becomes the placeholder.
        lines = [line for line in done.stdout.splitlines() if not line.startswith("\\")]
        return re.sub(rf"\b{name}\b", "{schema}", "\n".join(lines).replace("{", "{{").replace("}", "}}"))


_templates = _Templates()

# The shape of one schema, with its name replaced: tables, columns, types, defaults, constraints,
# indexes, triggers, functions and grants. A given-back schema is reused only when it is unchanged.
_PG_SHAPE = """
SELECT md5(replace(coalesce(string_agg(x, ',' ORDER BY x), ''), :s, '{schema}')) FROM (
  SELECT nspname || ':' || coalesce(nspacl::text, '') AS x FROM pg_namespace WHERE nspname = :s
  UNION ALL
  SELECT c.relname || ':' || c.relkind::text || ':' || coalesce(c.relacl::text, '') || ':'
         || coalesce(a.attname, '') || ':' || coalesce(format_type(a.atttypid, a.atttypmod), '') || ':'
         || coalesce(a.attnotnull::text, '') || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '') || ':'
         || coalesce(pg_get_indexdef(c.oid), '')
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
  WHERE n.nspname = :s
  UNION ALL
  SELECT o.conname || ':' || pg_get_constraintdef(o.oid)
  FROM pg_constraint o JOIN pg_namespace n ON n.oid = o.connamespace WHERE n.nspname = :s
  UNION ALL
  SELECT t.tgname || ':' || pg_get_triggerdef(t.oid) FROM pg_trigger t
  JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = :s AND NOT t.tgisinternal
  UNION ALL
  SELECT p.proname || ':' || md5(p.prosrc) || ':' || coalesce(p.proacl::text, '')
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = :s
) shape"""


class _PgSchemas:
    """The migrated PostgreSQL schemas of this process: new ones from the template's dump, and the ones
    tests gave back, emptied and ready for the next test (a DELETE of every table: milliseconds for
    a test's few rows, where TRUNCATE makes new files for every table and index; needs a superuser, as
    ``session_replication_role`` does: else every schema is dropped after its test, as before)."""

    def __init__(self) -> None:
        self._free: list[str] = []
        self._shape: str | None = None
        self._reset: str | None = None  # the SQL that empties schema {schema} back to its migrated rows
        atexit.register(self._drop_free)

    def take(self, ddl: str) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        if self._free:
            _pg_run(f'ALTER SCHEMA "{self._free.pop()}" RENAME TO "{name}"')
            return name
        _pg_run(ddl.format(schema=name))
        if self._shape is None:
            self._shape = self._shape_of(name)
            self._reset = self._reset_sql(ddl)
        return name

    def give_back(self, name: str) -> None:
        """Empty ``name`` for the next test, or drop it when its shape changed (or it cannot be emptied:
        a connection the test left open holds a lock)."""
        try:
            if self._reset is None or self._shape_of(name) != self._shape:
                raise LookupError(name)
            _pg_run(self._reset.format(schema=name))
        except Exception:
            _pg_run(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
            return
        self._free.append(name)

    @staticmethod
    def _shape_of(name: str) -> str:
        with _pg_admin().connect() as conn:
            return str(conn.execute(text(_PG_SHAPE), {"s": name}).scalar_one())

    @staticmethod
    def _reset_sql(ddl: str) -> str:
        """DELETE every table (children first), then the dump's rows (parents first) and its sequence values."""
        import ndcg_labeling.db.models  # noqa: F401
        from ndcg_labeling.db.base import Base

        order = {table.name: i for i, table in enumerate(Base.metadata.sorted_tables)}
        tables = re.findall(r"^CREATE TABLE \{schema\}\.(\w+) \(", ddl, re.MULTILINE)
        lines = ddl.splitlines()
        rows = sorted((line for line in lines if line.startswith("INSERT INTO ")),
                      key=lambda line: order.get(line.split()[2].split(".")[-1], -1))
        sequences = [line for line in lines if line.startswith("SELECT pg_catalog.setval(")]
        deletes = [f'DELETE FROM {{schema}}."{t}";' for t in sorted(tables, key=lambda t: -order.get(t, -1))]
        # no foreign-key checks while every table is emptied (a parent row's check scans its child's dead rows:
        # 13 s for a test's 20,000 documents), nor the guard trigger; a lock a test left held fails in 5 s.
        prelude = ["SET LOCAL session_replication_role TO replica;", "SET LOCAL lock_timeout TO '5s';"]
        return "\n".join(prelude + deletes + ["SET LOCAL session_replication_role TO origin;"] + rows + sequences)

    def _drop_free(self) -> None:
        while self._free and PG_URL:
            _pg_run(f'DROP SCHEMA IF EXISTS "{self._free.pop()}" CASCADE')


_pg_schemas = _PgSchemas()


class Database:
    """A test database: its URL (usable with ``--db``), an engine, and a cleanup.

    ``migrated``: at head, as a copy of this process's migrated template (else empty: no tables)."""

    def __init__(self, backend: str, tmp_path: Path, *, migrated: bool = False) -> None:
        self.backend = backend
        self.schema: str | None = None
        self._reusable = False  # a PostgreSQL schema from _pg_schemas: given back there, not dropped
        if backend == "sqlite":
            path = tmp_path / "test.db"
            if migrated:
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(_templates.sqlite_file(), path)
            self.url = f"sqlite:///{path}"
        else:
            if not PG_URL:
                pytest.skip("NDCG_LABELING_TEST_PG_URL is not set")
            ddl = _templates.pg_ddl() if migrated else None
            self._reusable = ddl is not None
            if ddl is not None:
                self.schema = _pg_schemas.take(ddl)
            else:
                self.schema = f"t_{uuid.uuid4().hex[:12]}"
                _pg_run(f'CREATE SCHEMA "{self.schema}"')
            self.url = pg_schema_url(self.schema)
        self.engine: Engine = make_engine(self.url)
        if migrated and backend != "sqlite" and ddl is None:
            migrate.upgrade(self.engine)
        elif migrated:
            self._new_secrets()

    def _new_secrets(self) -> None:
        """Random keys of its own, as migrating a new database makes them (revision 0008), not the template's."""
        import secrets

        with self.engine.begin() as conn:
            for name in conn.execute(text("SELECT name FROM server_secrets")).scalars().all():
                conn.execute(text("UPDATE server_secrets SET secret = :s WHERE name = :n"),
                             {"s": secrets.token_urlsafe(32), "n": name})

    def drop(self) -> None:
        self.engine.dispose()
        if self.schema is not None and PG_URL:
            if self._reusable:
                _pg_schemas.give_back(self.schema)
            else:
                _pg_run(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            self.schema = None  # a second drop() does nothing

    def counts(self) -> dict[str, int]:
        """Row count of every table (to check that a failed command changed nothing)."""
        import ndcg_labeling.db.models  # noqa: F401
        from ndcg_labeling.db.base import Base

        out = {}
        with self.engine.connect() as conn:
            for name in Base.metadata.tables:
                out[name] = conn.execute(text(f"SELECT COUNT(*) FROM {name}")).scalar_one()
        return out


@pytest.fixture(params=BACKENDS)
def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A database with no schema, on each backend."""
    db = Database(request.param, tmp_path)
    yield db
    db.drop()


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A fresh database migrated to head, on each backend."""
    database = Database(request.param, tmp_path, migrated=True)
    yield database
    database.drop()


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    """A fresh SQLite database at head (for tests whose subject is not the backend)."""
    database = Database("sqlite", tmp_path, migrated=True)
    yield database
    database.drop()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, db: Database | None, *args: str):
    """Run the CLI with ``--db`` appended (when a database is given)."""
    from ndcg_labeling.cli import app

    argv = list(args)
    if db is not None:
        argv += ["--db", db.url]
    return runner.invoke(app, argv, catch_exceptions=False)


def load_script(path: Path, name: str | None = None):  # type: ignore[no-untyped-def]
    """A script that is not a package module (benchmarks/, data/, a migration) loaded as a module, and
    registered in ``sys.modules`` under ``name`` (the file's stem by default) so its dataclasses resolve."""
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
