"""Queries and bulk writes. Every function takes the session as a keyword argument and never
commits: the caller owns the transaction, so a multi-step command is all or nothing.

Bulk writes go straight to the driver: ``executemany`` of tuples on SQLite and ``COPY`` on
PostgreSQL, never one ORM object per row.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, column, func, select, table
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m

CHUNK = 50_000
ProgressCallback = Callable[[int], None]


def dialect_name(session: Session) -> str:
    return session.get_bind().dialect.name


def bulk_insert(
    table: Table | Any,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    session: Session,
    progress: ProgressCallback | None = None,
) -> int:
    """Insert ``rows`` (tuples in the order of ``columns``) into ``table``; returns the row count.

    PostgreSQL: ``COPY ... FROM STDIN`` through psycopg 3. Other backends: the DBAPI ``executemany``
    in chunks of 50,000 rows. ``progress(n)`` is called with the number of rows written so far.
    """
    name: str = getattr(table, "__tablename__", None) or table.name
    cols = ", ".join(columns)
    conn = session.connection()
    count = 0
    if dialect_name(session) == "postgresql":
        raw = conn.connection.driver_connection
        assert raw is not None  # noqa: S101 - a live connection always has a driver connection
        with raw.cursor() as cursor, cursor.copy(f"COPY {name} ({cols}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
                if progress is not None and count % CHUNK == 0:
                    progress(count)
    else:
        placeholders = ", ".join("?" for _ in columns)
        sql = f"INSERT INTO {name} ({cols}) VALUES ({placeholders})"
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        chunk: list[Sequence[Any]] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) >= CHUNK:
                cursor.executemany(sql, chunk)
                count += len(chunk)
                chunk = []
                if progress is not None:
                    progress(count)
        if chunk:
            cursor.executemany(sql, chunk)
            count += len(chunk)
        cursor.close()
    if progress is not None:
        progress(count)
    return count


def db_datetime(session: Session, value: datetime) -> Any:
    """A datetime as the driver takes it in a raw bulk insert (SQLite stores text)."""
    if dialect_name(session) == "sqlite":
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return value


def bulk_update_by_external_id(model: type[m.Query] | type[m.Document], columns: Sequence[str],
                               rows: Iterable[tuple[str, dict[str, Any]]], *, session: Session) -> int:
    """Set ``columns`` of existing rows found by external id: one executemany UPDATE, no ORM objects.

    ``rows`` are ``(external_id, {column: value})``; returns the number of rows given.
    """
    tbl = cast(Table, model.__table__)
    stmt = tbl.update().where(tbl.c.external_id == bindparam("_external_id")).values(
        {c: bindparam(c) for c in columns})
    params = [{"_external_id": ext, **values} for ext, values in rows]
    if params:
        session.execute(stmt, params)
    return len(params)


# --- id maps ---------------------------------------------------------------------------------


def external_id_map(model: type[m.Query] | type[m.Document], *, session: Session,
                    only: Iterable[str] | None = None) -> dict[str, int]:
    """``external_id -> id`` for every row (or for the ``only`` ids, looked up in chunks)."""
    if only is None:
        return dict(session.execute(select(model.external_id, model.id)).all())
    wanted = list(set(only))
    out: dict[str, int] = {}
    for start in range(0, len(wanted), 10_000):
        part = wanted[start : start + 10_000]
        out.update(session.execute(select(model.external_id, model.id).where(model.external_id.in_(part))).all())
    return out


def ensure_external_ids(model: type[m.Query] | type[m.Document], ids: Iterable[str], *,
                        session: Session) -> tuple[dict[str, int], int]:
    """Map every id in ``ids`` to its row id, creating rows without text for the unknown ones.

    Returns the map and the number of rows created. New rows get their ids in the order the ids first
    appear in ``ids`` (file order), so rows that a file writes next to each other stay next to each
    other in the indexes. Many ids go through a temporary table (bulk insert, one INSERT ... SELECT for
    the missing ones, one join back): a million ids cost a few statements, not a thousand ``IN`` lists.
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}, 0
    if len(wanted) <= 1_000:
        existing = external_id_map(model, session=session, only=wanted)
        missing = [x for x in wanted if x not in existing]
        if missing:
            bulk_insert(model, ["external_id"], ((x,) for x in missing), session=session)
            existing.update(external_id_map(model, session=session, only=missing))
        return existing, len(missing)
    target = model.__tablename__
    temp = f"tmp_ids_{uuid.uuid4().hex[:10]}"
    conn = session.connection()
    conn.exec_driver_sql(f"CREATE TEMPORARY TABLE {temp} (ord INTEGER PRIMARY KEY, external_id VARCHAR({m.ID_LENGTH}))")
    try:
        bulk_insert(table(temp, column("ord"), column("external_id")), ["ord", "external_id"], enumerate(wanted),
                    session=session)
        created = conn.exec_driver_sql(
            f"INSERT INTO {target} (external_id) SELECT t.external_id FROM {temp} t "
            f"WHERE NOT EXISTS (SELECT 1 FROM {target} x WHERE x.external_id = t.external_id) ORDER BY t.ord").rowcount
        pairs = conn.exec_driver_sql(
            f"SELECT x.external_id, x.id FROM {target} x JOIN {temp} t ON t.external_id = x.external_id").all()
    finally:
        conn.exec_driver_sql(f"DROP TABLE {temp}")
    return dict(pairs), int(created)


def grader_map(*, session: Session) -> dict[str, int]:
    return dict(session.execute(select(m.Grader.name, m.Grader.id)).all())


def grader_by_name(name: str, *, session: Session) -> m.Grader | None:
    """The grader called ``name``, or None: the one grader lookup of the importers and the grading use cases."""
    return session.execute(select(m.Grader).where(m.Grader.name == name)).scalar_one_or_none()


def system_by_name(name: str, *, session: Session) -> m.System | None:
    return session.execute(select(m.System).where(m.System.name == name)).scalar_one_or_none()


def get_or_create_system(name: str, *, session: Session, description: str | None = None) -> tuple[m.System, bool]:
    system = system_by_name(name, session=session)
    if system is not None:
        return system, False
    system = m.System(name=name, description=description)
    session.add(system)
    session.flush()
    return system, True


# --- counts ----------------------------------------------------------------------------------

STATUS_TABLES: dict[str, Any] = {
    "queries": m.Query,
    "documents": m.Document,
    "graders": m.Grader,
    "systems": m.System,
    "rankings": m.RankingEntry,
    "judgments": m.Judgment,
    "consensus": m.ConsensusLabel,
}


def table_counts(*, session: Session) -> dict[str, int]:
    """Row counts of the main tables, keyed as ``status --format json`` prints them."""
    return {key: int(session.execute(select(func.count()).select_from(model)).scalar_one())
            for key, model in STATUS_TABLES.items()}
