"""Foreign keys of a bulk write checked once per distinct referenced row, not once per written row.

An import writes up to millions of rows that reference a few tables (graders, queries, documents,
systems, scales). Checking every row's references costs more than a share of the write itself: on
SQLite, 1M ranking rows took 4.8 s with foreign keys off and 6.0 s with them on (2026-12-03, 2-core
AMD EPYC); on PostgreSQL the per-row triggers cost more than the ``COPY``. Here each foreign key is
checked over the distinct values the rows name:

- **PostgreSQL** (:func:`pg_skip_triggers`), two paths. A role that may set ``session_replication_role``
  (a superuser): the referenced rows are checked and locked ``FOR KEY SHARE`` in one statement per key,
  then the per-row triggers are switched off for the ``COPY`` (a ``COPY`` with the row-by-row key checks
  measured about 3x slower). A plain role may not: it copies with the triggers, which check and lock
  each row's keys as usual. ``tests/db/test_bulk_references.py`` runs both on every import kind. The locks keep a concurrent writer from
  deleting a referenced row before the commit. Documents are held by their table's guard instead
  (:func:`hold_guarded`, migration 0006): one shared advisory lock that every delete of documents, or
  change of their ids, waits for; only checked, not locked one by one.
- **SQLite**: a transaction begun by :func:`begin_bulk` runs with foreign-key enforcement off (SQLite
  switches it only between transactions, see :mod:`ndcg_labeling.db.session`), and
  :func:`ndcg_labeling.db.bulk.bulk_insert` calls :func:`sqlite_unchecked` before each write: the write
  is refused like a failed foreign key unless every referenced value is stored. ``BEGIN IMMEDIATE``
  holds the write lock, so no other writer removes a referenced row before the commit. Outside
  such a transaction SQLite checks each row as usual.

An integer primary key whose values fill at least half of their range is checked with one count (and on
PostgreSQL one lock) over the range: when the table holds every integer between the smallest and the
largest value named (its ids are unique), it holds them all. A lock over the range may also hold a few
rows no written row names; it only keeps them from being deleted until the commit. Otherwise, and for
text keys, the distinct values are joined with the table (SQLite: ``json_each``; PostgreSQL: one array,
which for a million ids took 3.6 s against 1.3 s for the range, 2026-12-03, machine shared).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from ndcg_labeling.db.session import FOREIGN_KEYS_IN_BULK

# Below this many rows the PostgreSQL triggers stay on (switching them costs a few statements).
PG_TRIGGERS_MIN_ROWS = 1_000

# PostgreSQL: tables whose rows a delete (or a change of id) may not take away from an import in flight by a
# guard (migration 0006) instead of by row locks: a statement trigger takes an exclusive transaction-level
# advisory lock of key (GUARD_KEY << 32 | the table's oid), which an import takes shared.
GUARDED = frozenset({"documents"})
GUARD_KEY = 1313096519  # b"NDCG"; migrations/versions/0006_documents_guard.py uses the same
GUARD_TRIGGER = "{table}_guard"


def begin_bulk(session: Session) -> None:
    """Begin ``session``'s transaction for a bulk import: on SQLite with foreign keys checked in bulk by
    every :func:`~ndcg_labeling.db.bulk.bulk_insert` of the transaction, instead of per row.

    Only for a transaction that creates rows and deletes rows no foreign key points to (the imports):
    SQLite enforces no foreign key in it, so a delete would cascade to nothing. No effect on
    PostgreSQL, or where the session's transaction has begun (its rows are then checked per row).
    """
    if session.get_bind().dialect.name == "sqlite" and not session.in_transaction():
        session.connection(execution_options={FOREIGN_KEYS_IN_BULK: True})


def hold_guarded(conn: Connection, table: str) -> bool:
    """PostgreSQL: hold ``table``'s guard (a delete of its rows, or a change of their ids, then waits for
    this transaction) and answer True, where the table is guarded (:data:`GUARDED`) and its trigger exists
    and fires in an ordinary session; else False (the caller locks the rows it needs ``FOR KEY SHARE``).
    The guard is held until the commit, or until a rollback to a savepoint taken before this call (the
    bulk write's merge after a race then runs with the per-row foreign-key triggers on).

    A delete waiting for the guard makes later imports wait too (PostgreSQL queues a shared request
    behind a waiting exclusive one) until the imports before it commit; nothing in this product deletes
    documents, so only a delete from outside can cause that."""
    if table not in GUARDED or conn.dialect.name != "postgresql":
        return False
    # tgenabled 'O' (fires in origin and local sessions) or 'A' (always); a disabled trigger, or one that
    # fires only in replica sessions, guards nothing
    if not conn.exec_driver_sql("SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass(%(t)s) AND tgname = %(g)s "
                                "AND tgenabled IN ('O', 'A')",
                                {"t": table, "g": GUARD_TRIGGER.format(table=table)}).first():
        return False
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock_shared(({GUARD_KEY}::bigint << 32) | "
                         "to_regclass(%(t)s)::oid::bigint)", {"t": table})
    return True


def references(target: Any, columns: Sequence[str]) -> list[tuple[int, str, str, bool]]:
    """``(position in columns, referenced table, referenced column, whether it is an integer primary
    key)`` of each foreign key of ``target`` among ``columns``."""
    tbl = getattr(target, "__table__", target)
    return [(columns.index(fk.parent.name), fk.column.table.name, fk.column.name,
             bool(fk.column.primary_key and isinstance(fk.column.type, Integer)))
            for fk in getattr(tbl, "foreign_keys", ()) if fk.parent.name in columns]


def distinct(rows: Any, position: int) -> list[Any]:
    """The distinct non-NULL values of column ``position`` of ``rows``."""
    if hasattr(rows, "distinct"):
        return list(rows.distinct(position))
    return list({row[position] for row in rows} - {None})


def sqlite_unchecked(conn: Connection, target: Any, columns: Sequence[str], rows: Any) -> bool:
    """Whether foreign keys are off on this SQLite connection and some row references a value that is not
    stored (the write must then be refused); False when SQLite checks each row itself."""
    refs = references(target, columns)
    if not refs or conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one():
        return False
    for position, ref_table, ref_column, integer_key in refs:
        wanted = distinct(rows, position)
        if not wanted:
            continue
        span = _dense_range(wanted) if integer_key else None
        if span is not None:
            stored = conn.exec_driver_sql(f"SELECT count(*) FROM {ref_table} WHERE {ref_column} BETWEEN ? AND ?",
                                          span).scalar_one()
            if stored == span[1] - span[0] + 1:
                continue
        found = conn.exec_driver_sql(f"SELECT count(*) FROM json_each(?) AS j JOIN {ref_table} AS r "
                                     f"ON r.{ref_column} = j.value", (json.dumps(wanted),)).scalar_one()
        if found != len(wanted):
            return True
    return False


def pg_skip_triggers(conn: Connection, target: Any, columns: Sequence[str], rows: Any) -> bool:
    """Check and lock the referenced rows of every foreign key in bulk, then turn the per-row foreign-key
    triggers off until the caller sets the role back. False (nothing changed) where the role may not,
    or a referenced row is missing (the triggers then report it as usual)."""
    refs = references(target, columns)
    if not refs or len(rows) < PG_TRIGGERS_MIN_ROWS:
        return False
    conn.exec_driver_sql("SAVEPOINT bulk_role")
    try:
        conn.exec_driver_sql("SET LOCAL session_replication_role = replica")
    except DBAPIError:
        conn.exec_driver_sql("ROLLBACK TO SAVEPOINT bulk_role")
        return False
    conn.exec_driver_sql("RELEASE SAVEPOINT bulk_role")
    for position, ref_table, ref_column, integer_key in refs:
        wanted = distinct(rows, position)
        lock = "" if hold_guarded(conn, ref_table) else " FOR KEY SHARE"  # the guard holds every row
        span = _dense_range(wanted) if integer_key else None
        if span is not None:  # every row of the range locked (a few unnamed ones too): no million-element array
            locked = conn.exec_driver_sql(
                f"SELECT count(*) FROM (SELECT 1 FROM {ref_table} WHERE {ref_column} BETWEEN %(lo)s AND %(hi)s"
                f"{lock}) AS locked", {"lo": span[0], "hi": span[1]}).scalar_one()
            if locked == span[1] - span[0] + 1:
                continue
        # One array literal (a text parameter): psycopg would otherwise adapt a million ints one by one.
        found = conn.exec_driver_sql(
            f"SELECT count(*) FROM (SELECT 1 FROM {ref_table} WHERE {ref_column} = ANY(%(ids)s::{_array_type(wanted)})"
            f"{lock}) AS locked", {"ids": _array_literal(wanted)}).scalar_one()
        if found != len(wanted):
            conn.exec_driver_sql("SET LOCAL session_replication_role = origin")
            return False
    return True


def _array_type(values: list[Any]) -> str:
    return "bigint[]" if not values or isinstance(values[0], int) else "text[]"  # one column: one type


def _dense_range(values: list[Any]) -> tuple[int, int] | None:
    """``(smallest, largest)`` of integer ``values`` that fill at least half of that range (a count or a
    lock over the range then costs at most twice one per value); None for sparser values."""
    if not values:
        return None
    lo, hi = int(min(values)), int(max(values))
    return (lo, hi) if hi - lo + 1 <= 2 * len(values) else None


def _array_literal(values: list[Any]) -> str:
    """``values`` (all ints or all text) as a PostgreSQL array literal."""
    if values and isinstance(values[0], int):
        return "{" + ",".join(map(str, values)) + "}"  # a million ids: str() in C, no call per id
    return "{" + ",".join(map(_array_element, values)) + "}"


def _array_element(value: Any) -> str:
    """``value`` as an element of a PostgreSQL array literal: an int as is, text quoted."""
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
