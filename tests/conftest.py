"""Shared fixtures: a fresh migrated database per test, on SQLite and (when
``NDCG_LABELING_TEST_PG_URL`` is set) on PostgreSQL, each test in its own schema."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
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
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)]


def pg_schema_url(schema: str) -> str:
    """The PostgreSQL test URL with ``search_path`` set to ``schema`` (so a test has its own tables)."""
    assert PG_URL is not None
    sep = "&" if "?" in PG_URL else "?"
    return f"{PG_URL}{sep}options=-csearch_path%3D{schema}"


class Database:
    """A test database: its URL (usable with ``--db``), an engine, and a cleanup."""

    def __init__(self, backend: str, tmp_path: Path) -> None:
        self.backend = backend
        self.schema: str | None = None
        if backend == "sqlite":
            self.url = f"sqlite:///{tmp_path / 'test.db'}"
        else:
            if not PG_URL:
                pytest.skip("NDCG_LABELING_TEST_PG_URL is not set")
            self.schema = f"t_{uuid.uuid4().hex[:12]}"
            admin = make_engine(PG_URL)
            with admin.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA "{self.schema}"'))
            admin.dispose()
            self.url = pg_schema_url(self.schema)
        self.engine: Engine = make_engine(self.url)

    def drop(self) -> None:
        self.engine.dispose()
        if self.schema is not None and PG_URL:
            admin = make_engine(PG_URL)
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'))
            admin.dispose()

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
    database = Database(request.param, tmp_path)
    migrate.upgrade(database.engine)
    yield database
    database.drop()


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    """A fresh SQLite database at head (for tests whose subject is not the backend)."""
    database = Database("sqlite", tmp_path)
    migrate.upgrade(database.engine)
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
