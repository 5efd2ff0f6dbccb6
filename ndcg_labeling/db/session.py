"""Engines and sessions. The database URL has one source: ``--db URL``, else ``NDCG_LABELING_DB``,
else ``sqlite:///ndcg_labeling.db`` in the current folder. No engine is created at import time.

``sqlalchemy.orm`` loads only when a session is opened: the read-only commands work on a Core
connection (:func:`connection_scope`) and start without it (issue 17)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url

from ndcg_labeling import settings
from ndcg_labeling.errors import DatabaseUrlError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

ENV_VAR = settings.DB
DEFAULT_URL = settings.DEFAULT_DB_URL
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: how long a writer waits in all for SQLite's write lock (each try waits the busy timeout)
SQLITE_WRITE_WAIT_S = 900.0


def resolve_url(url: str | None = None) -> str:
    """The database URL to use: the given one, else ``$NDCG_LABELING_DB``, else the SQLite default."""
    return url or settings.db_url()


def parse_url(url: str | None = None) -> URL:
    """The resolved URL, parsed; :class:`DatabaseUrlError` saying what to write instead otherwise.

    ``postgresql://`` (no driver named) means psycopg 3, the driver of the ``postgres`` extra, not
    SQLAlchemy's default psycopg2.
    """
    raw = resolve_url(url)
    try:
        parsed = make_url(raw)
    except Exception:  # sqlalchemy.exc.ArgumentError: not a URL at all
        hint = ""
        if "://" not in raw:
            hint = f"; for a SQLite file write sqlite:///{raw} (four slashes for an absolute path: sqlite:////path/x.db)"
        raise DatabaseUrlError(f"--db {raw!r} is not a database URL{hint}") from None
    name = parsed.drivername
    if name == "postgres" or name.startswith("postgres+"):
        fixed = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=True)
        raise DatabaseUrlError(f"--db: the scheme {name}:// is not known; write {fixed}")
    if name == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise DatabaseUrlError(f"--db: the database {backend!r} is not supported; use sqlite:///FILE or "
                               f"postgresql+psycopg://USER@HOST/DB")
    return parsed


def _check_driver(parsed: URL) -> None:
    if parsed.get_backend_name() != "postgresql":
        return
    import importlib.util

    module = "psycopg2" if parsed.get_driver_name() == "psycopg2" else "psycopg"
    if importlib.util.find_spec(module) is None:
        raise DatabaseUrlError(f"--db: PostgreSQL needs the driver {module}, which is not installed; "
                               f"install it with: pip install 'ndcg-labeling[postgres]'")


def sqlite_file(url: str | None = None) -> Path | None:
    """The file of a SQLite file database URL; None for other databases and in-memory SQLite."""
    return _file_of(parse_url(url))


def _file_of(parsed: URL) -> Path | None:
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Foreign keys are off by default in SQLite; concurrent writers wait instead of failing at once.
    dbapi_connection.isolation_level = None  # let SQLAlchemy's BEGIN below own the transaction
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    # 64 MiB of page cache (the default is 2 MiB): bulk imports update several indexes at once.
    cursor.execute("PRAGMA cache_size=-65536")
    cursor.close()


# Execution option of a connection whose transaction checks foreign keys in bulk instead of per row
# (set by :func:`ndcg_labeling.db.bulk.begin_bulk`; SQLite can switch them only outside a transaction).
FOREIGN_KEYS_IN_BULK = "ndcg_labeling_foreign_keys_in_bulk"


# Execution option of a connection or engine that only reads (:func:`read_only`).
READ_ONLY = "ndcg_labeling_read_only"
#: execution option: seconds a SQLite writer waits in all for the write lock (default
#: :data:`SQLITE_WRITE_WAIT_S`; the web's writers wait one busy timeout, then answer 503)
WRITE_WAIT_S = "ndcg_labeling_write_wait_s"


def read_only(engine: Engine) -> Engine:
    """``engine`` for reads alone. On SQLite its transactions begin deferred, so a reader runs beside a
    writer's open transaction (an import of a minute) instead of queueing for the write lock, and with
    ``query_only`` on, so a write through it fails at once."""
    return engine.execution_options(**{READ_ONLY: True})


def _sqlite_begin(conn: Any) -> None:
    # Every transaction states its foreign-key and read-only modes: a pooled connection never carries a
    # bulk import's "off" or a reader's "query only" into the next transaction.
    options = conn.get_execution_options()
    reads_only = options.get(READ_ONLY, False)
    conn.exec_driver_sql("PRAGMA foreign_keys=OFF" if options.get(FOREIGN_KEYS_IN_BULK, False) else "PRAGMA foreign_keys=ON")
    conn.exec_driver_sql("PRAGMA query_only=ON" if reads_only else "PRAGMA query_only=OFF")
    # A writer's BEGIN IMMEDIATE takes the write lock at the start of the transaction, so two writers
    # queue on the busy timeout instead of one failing with "database is locked" at its first write.
    if reads_only:
        conn.exec_driver_sql("BEGIN")
    else:
        _begin_immediate(conn.connection.driver_connection, options.get(WRITE_WAIT_S, SQLITE_WRITE_WAIT_S))


def _begin_immediate(dbapi_connection: Any, wait_s: float) -> None:
    """``BEGIN IMMEDIATE``, tried again while another writer holds the lock, for up to ``wait_s`` in all:
    one wait of the busy timeout was shorter than one writer's whole transaction (a consensus of a large
    batch), and the second of two concurrent runs failed with "database is locked" (issue 46). Safe to
    repeat: nothing of the transaction has run yet. SQLAlchemy calls this hook outside its own wrapping
    of driver errors, so a failure is raised here as its ``OperationalError`` (a ``DBAPIError``, which
    the CLI, the web's 503 and :func:`~ndcg_labeling.labels.transactions.run_in_transaction` handle)."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            dbapi_connection.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise OperationalError("BEGIN IMMEDIATE", None, exc) from exc
            time.sleep(0.05)


def make_engine(url: str | None = None, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` (resolved by :func:`resolve_url`).

    SQLite: foreign keys on, a busy timeout, and ``BEGIN IMMEDIATE`` transactions; the folder of a
    file database is created if missing.
    """
    resolved = parse_url(url)
    _check_driver(resolved)
    file = _file_of(resolved)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(resolved, **kwargs)
    if resolved.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect)
        event.listen(engine, "begin", _sqlite_begin)
    return engine


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: commit when the block ends normally, roll back on any exception
    (KeyboardInterrupt included), so a command leaves the database as it was or fully done."""
    from sqlalchemy.orm import sessionmaker

    factory = sessionmaker(bind=engine, expire_on_commit=False)
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


@contextmanager
def connection_scope(engine: Engine) -> Iterator[Connection]:
    """One read-only transaction (:func:`read_only`) on a Core connection, for reads that need no ORM:
    ended when the block ends, rolled back on any exception."""
    with read_only(engine).begin() as conn:
        yield conn
