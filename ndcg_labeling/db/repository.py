"""Queries and bulk writes. Every function takes the session as a keyword argument and never
commits: the caller owns the transaction, so a multi-step command is all or nothing.

Bulk writes (``bulk_insert``, ``ensure_external_ids``, ...) live in :mod:`ndcg_labeling.db.bulk` and are
re-exported here: multi-row ``INSERT`` statements on SQLite and ``COPY`` on PostgreSQL, never one ORM object
per row, safe against concurrent writers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from sqlalchemy import JSON, Table, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import bulk as _bulk
from ndcg_labeling.db import models as m
from ndcg_labeling.db import references as _references
from ndcg_labeling.db import tables as _tables

# The bulk writes are part of the repository's interface.
JUDGMENT_SAME = _bulk.JUDGMENT_SAME
JUDGMENT_UPSERT = _bulk.JUDGMENT_UPSERT
RANKING_SAME = _bulk.RANKING_SAME
OnConflict = _bulk.OnConflict
begin_bulk = _references.begin_bulk
bulk_insert = _bulk.bulk_insert
db_datetime = _bulk.db_datetime
dialect_name = _bulk.dialect_name
insert_missing_names = _bulk.insert_missing_names


def bulk_update_by_external_id(model: type[m.Query] | type[m.Document], columns: Sequence[str],
                               rows: Iterable[tuple[str, Sequence[Any]]], *, session: Session) -> int:
    """Set ``columns`` of existing rows found by external id: one ``executemany`` UPDATE as driver SQL, no ORM
    objects and no per-row parameter processing by SQLAlchemy's compiled statement (which took three
    quarters of the time: 200k documents 4.1 s before, see the commit).

    ``rows`` are ``(external_id, values in the order of columns)``; a JSON column's value is its JSON
    text (as :func:`bulk_insert` stores it) or None. Returns the number of rows given.
    """
    tbl = cast(Table, model.__table__)
    postgres = dialect_name(session) == "postgresql"
    mark = "%s" if postgres else "?"
    sets = ", ".join(f"{c} = CAST({mark} AS JSON)" if postgres and isinstance(tbl.c[c].type, JSON) else f"{c} = {mark}"
                     for c in columns)
    sql = f"UPDATE {tbl.name} SET {sets} WHERE external_id = {mark}"
    params = [(*values, ext) for ext, values in rows]
    if not params:
        return 0
    session.connection().exec_driver_sql(sql, params)
    return len(params)


# --- id maps ---------------------------------------------------------------------------------


def external_id_map(model: type[m.Query] | type[m.Document], *, session: Session,
                    only: Iterable[str] | None = None, column: Any = None) -> dict[str, Any]:
    """``external_id -> id`` (or ``-> column``, e.g. ``m.Query.text``) for every row (or for the ``only``
    ids, looked up in chunks)."""
    stmt = select(model.external_id, model.id if column is None else column)
    if only is None:
        return dict(session.execute(stmt).all())
    wanted = list(set(only))
    out: dict[str, Any] = {}
    for start in range(0, len(wanted), 10_000):
        out.update(session.execute(stmt.where(model.external_id.in_(wanted[start : start + 10_000]))).all())
    return out


def grader_map(*, session: Session) -> dict[str, int]:
    return dict(session.execute(select(m.Grader.name, m.Grader.id)).all())


def grader_by_name(name: str, *, session: Session) -> m.Grader | None:
    """The grader called ``name``, or None: the one grader lookup of the importers and the grading use cases."""
    return session.execute(select(m.Grader).where(m.Grader.name == name)).scalar_one_or_none()


def system_by_name(name: str, *, session: Session) -> m.System | None:
    return session.execute(select(m.System).where(m.System.name == name)).scalar_one_or_none()


def get_or_create_system(name: str, *, session: Session, description: str | None = None) -> tuple[m.System, bool]:
    """The system named ``name``, created (with ``description``) if missing; safe against a concurrent
    writer creating it too (then that writer's row is returned and the flag is False)."""
    system = system_by_name(name, session=session)
    if system is not None:
        return system, False
    created = insert_missing_names(m.System, [{"name": name, "description": description}], session=session)
    system = system_by_name(name, session=session)
    assert system is not None  # noqa: S101 - inserted or found just above
    return system, created == 1


# Row counts of the main tables (``status``): a Core read in db.tables, which the light commands use
# without loading the ORM.
table_counts = _tables.table_counts
