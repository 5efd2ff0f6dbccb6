"""The ``(external_id, id)`` pairs of stored queries or documents, read as text: how the importers map a
million external ids to row ids without a Python object per stored row.

:class:`PairsPrefetch` reads a whole table's pairs in a worker thread on the session's connection while
the caller does work that does not touch the database (reading its file): SQLite and psycopg let go of
Python's lock while the database works, so the two overlap on two cores (a 1M-line run against 1.2M
stored documents on SQLite: reading the file and the pairs 0.97 s one after the other, 0.56-0.60 s
together).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from ndcg_labeling.db.references import hold_guarded


class PairsSql(NamedTuple):
    """SQL selecting ``ext, rid`` (external id, row id) of stored rows, its parameters, and the table when the
    SQL reads all of it (then read in ranges of row ids, with no sort)."""

    sql: str
    params: tuple[Any, ...] = ()
    table: str | None = None
    lock: bool = False  # with ``table`` on PostgreSQL: every row read held (the table's guard, or FOR KEY SHARE)


PAIRS_PER_TEXT = 65_536  # pairs joined into one text: well below any text limit


def whole_table(table: str, *, lock: bool = False) -> PairsSql:
    """The pairs of every row of ``table`` (read a range of row ids at a time by :func:`pairs_text`)."""
    return PairsSql(f"SELECT external_id AS ext, id AS rid FROM {table}", table=table, lock=lock)


class PairsText(NamedTuple):
    """``total`` stored pairs: the external ids as ``total`` lines (each id holds no newline: the id rule)
    and, in the same order, their row ids: on PostgreSQL 8 bytes each, big-endian (``int8send``, no
    decimal digits to parse: 1.2M row ids 0.08-0.11 s), on SQLite as decimal lines."""

    ext: str
    rid: str | bytes
    total: int


def pairs_text(conn: Connection, query: PairsSql) -> PairsText:
    """The ``(external_id, id)`` pairs of a query selecting ``ext, rid``, as :class:`PairsText`: the database
    joins the pairs into a few texts (one per 65,536 ids), so no Python object is made per row. The ids
    and the row ids are two aggregates over the same rows, which every aggregate of one query receives
    in one order: one text of ``ext TAB rid`` lines cost a third more (1.2M documents on PostgreSQL, locked
    as read: 0.86 s against 0.69 s, 2026-12-03). A whole table is read a range of row ids at a time:
    grouping by ``id / 65536`` made both databases sort the table (1.2M documents: 0.74 s against 0.38 s on
    SQLite, 0.35 against 0.22 s on PostgreSQL)."""
    def aggregates(ext: str, rid: str) -> str:
        if conn.dialect.name == "postgresql":
            return f"string_agg({ext}, E'\\n'), string_agg(int8send({rid}), ''::bytea), count(*)"
        return f"group_concat({ext}, char(10)), group_concat({rid}, char(10)), count(*)"

    if query.table is None:
        parts = conn.exec_driver_sql(f"SELECT {aggregates('x.ext', 'x.rid')} FROM ({query.sql}) AS x "
                                     f"GROUP BY x.rid / {PAIRS_PER_TEXT}", query.params or None).all()
    else:
        lock = ""
        if query.lock and conn.dialect.name == "postgresql" and not hold_guarded(conn, query.table):
            lock = " FOR KEY SHARE"  # no guard: each row locked as it is read
        lo, hi = conn.exec_driver_sql(f"SELECT min(id), max(id) FROM {query.table}").one()
        parts = [conn.exec_driver_sql(f"SELECT {aggregates('x.external_id', 'x.id')} FROM (SELECT external_id, id "
                                      f"FROM {query.table} WHERE id BETWEEN {start} AND {start + PAIRS_PER_TEXT - 1}"
                                      f"{lock}) x").one()
                 for start in (range(int(lo), int(hi) + 1, PAIRS_PER_TEXT) if lo is not None else ())]
    parts = [p for p in parts if p[2]]
    rids = [p[1] for p in parts]
    return PairsText("\n".join(p[0] for p in parts),
                     b"".join(rids) if conn.dialect.name == "postgresql" else "\n".join(rids),
                     sum(int(p[2]) for p in parts))


def fetch_pairs(conn: Connection, query: PairsSql) -> tuple[list[str], list[int]]:
    """The pairs of :func:`pairs_text` as two lists, split at C speed. Stored ids hold no newline (the id
    rule); the split is checked against the row count, and any other text is fetched row by row."""
    pairs = pairs_text(conn, query)
    if not pairs.total:
        return [], []
    exts = pairs.ext.split("\n")
    rids = (np.frombuffer(pairs.rid, dtype=">i8").tolist() if isinstance(pairs.rid, bytes)
            else list(map(int, pairs.rid.split("\n"))))
    if len(exts) == len(rids) == pairs.total:
        return exts, rids
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(query.sql, query.params) if query.params else cursor.execute(query.sql)
        rows = cursor.fetchall()
    finally:
        cursor.close()
    return [r[0] for r in rows], [int(r[1]) for r in rows]


class PairsPrefetch:
    """The pairs text (:func:`pairs_text`) of the whole ``table``, read by a worker thread on ``session``'s
    connection. Until :meth:`finish` returns, the caller must not use the session.

    Every row read stays in the table until the commit: on PostgreSQL the table's guard holds it
    (:func:`~ndcg_labeling.db.references.hold_guarded`; without a guard each row is locked ``FOR KEY SHARE``
    as it is read), and on SQLite the transaction holds the write lock (``BEGIN IMMEDIATE``). ``held`` is then set to
    the row ids the caller mapped from it, which a bulk write's foreign-key check need not check again
    (:class:`ndcg_labeling.db.bulk.ColumnRows`).

    ``prepare``, if given, is applied to the pairs by the worker too (its result: :meth:`prepared`): work
    on the pairs alone, such as decoding them for a join, then overlaps the caller's as well."""

    def __init__(self, table: str, session: Session, prepare: Callable[[PairsText], Any] | None = None) -> None:
        self.table = table
        self.held: Any = None
        self.prepares = prepare is not None
        conn = session.connection()

        def work() -> tuple[PairsText, Any]:
            pairs = pairs_text(conn, whole_table(table, lock=True))
            return pairs, prepare(pairs) if prepare is not None else None

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pairs")
        self._future = self._pool.submit(work)

    def finish(self) -> None:
        """Wait for the worker: the connection is the caller's again. Its error, if any, is raised by
        :meth:`text` (a caller failing on its own input never sees it)."""
        wait([self._future])
        self._pool.shutdown()

    def text(self) -> PairsText:
        """The pairs (after :meth:`finish`)."""
        return self._future.result()[0]

    def prepared(self) -> Any:
        """``prepare`` of the pairs (after :meth:`finish`; None without ``prepare``)."""
        return self._future.result()[1]
