"""Shared fixtures: a fresh migrated database per test, on SQLite and (when
``NDCG_LABELING_TEST_PG_URL`` is set) on PostgreSQL, each test in its own schema.

The migrations run once per test process (each xdist worker), into a template; every test gets a
copy of it (issue 44): SQLite copies the migrated file, PostgreSQL replays the template schema's
``pg_dump`` into a new schema (measured: faster than a ``CREATE DATABASE ... TEMPLATE`` per test,
which checkpoints). The migration tests start from ``empty_db`` and really migrate up and down.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
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


class Database:
    """A test database: its URL (usable with ``--db``), an engine, and a cleanup.

    ``migrated``: at head, as a copy of this process's migrated template (else empty: no tables)."""

    def __init__(self, backend: str, tmp_path: Path, *, migrated: bool = False) -> None:
        self.backend = backend
        self.schema: str | None = None
        if backend == "sqlite":
            path = tmp_path / "test.db"
            if migrated:
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(_templates.sqlite_file(), path)
            self.url = f"sqlite:///{path}"
        else:
            if not PG_URL:
                pytest.skip("NDCG_LABELING_TEST_PG_URL is not set")
            self.schema = f"t_{uuid.uuid4().hex[:12]}"
            ddl = _templates.pg_ddl() if migrated else None
            _pg_run(ddl.format(schema=self.schema) if ddl is not None else f'CREATE SCHEMA "{self.schema}"')
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
            _pg_run(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

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
