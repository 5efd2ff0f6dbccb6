"""Impression rows for online experiments, read with the DuckDB log engine's readers and checks.

:class:`~ndcg_labeling.engines.duckdb.DuckDBEngine` aggregates logs for click models; an online
report needs the rows themselves (every served list is rebuilt and scored), with the experiment's
columns: ``arm`` (required here), ``converted``, ``watch_ratio``, ``session_id`` and ``user_id``.
This module reuses the engine's sources, column mapping and per-row validation (one bad row raises
``InputFileError`` naming the file and the line) and adds the ``arm`` check; one more SQL pass returns
the rows ordered by ``request_id`` then ``position``, as NumPy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ndcg_labeling.engines.base import LogRequest
from ndcg_labeling.engines.duckdb import DuckDBEngine, _q, connection, resolve_sources
from ndcg_labeling.engines.rules import ARM_RULE, no_arm_column


@dataclass
class ImpressionRows:
    """Impression rows as parallel arrays (one entry per row), ordered by request then position.

    Strings are object arrays; ``converted`` and ``watch_ratio`` are NaN where absent;
    ``session_id`` / ``user_id`` are None when the log has no such column; ``source`` names the
    row's file (for messages)."""

    request_id: np.ndarray
    query_id: np.ndarray
    doc_id: np.ndarray
    position: np.ndarray
    clicked: np.ndarray
    ts: np.ndarray
    arm: np.ndarray
    converted: np.ndarray
    watch_ratio: np.ndarray
    session_id: np.ndarray | None = None
    user_id: np.ndarray | None = None
    source: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.position.size)


class _OnlineEngine(DuckDBEngine):
    """The engine's normalized view with the experiment's columns added (and ``arm`` required)."""

    sources: list[tuple[str, list[str]]] = []  # (format, files) in the order of the engine's views
    first_rules = (ARM_RULE,)

    def _create_views(self, con: Any, groups: dict[str, list[str]], request: LogRequest) -> bool:
        self.sources = sorted(groups.items())
        return super()._create_views(con, groups, request)

    def _normalized(self, src: str, fmt: str, names: dict[str, str], types: dict[str, str],
                    request: LogRequest, *, native_ids: bool = False) -> str:
        # ids as text always: the online path joins them with the label store's external ids
        base = super()._normalized(src, fmt, names, types, request, native_ids=False)
        if names["arm"] not in types:
            files = self.sources[int(src.removeprefix("src"))][1] if self.sources else [src]
            raise no_arm_column(files[0], names["arm"])

        def raw(col: str) -> str:
            return f"{src}.{_q(names[col])}" if names[col] in types else "NULL"

        extra = (f", CAST({raw('arm')} AS VARCHAR) AS arm, TRY_CAST({raw('converted')} AS DOUBLE) AS converted, "
                 f"CAST({raw('session_id')} AS VARCHAR) AS session_id, CAST({raw('user_id')} AS VARCHAR) AS user_id")
        at = base.rfind(f" FROM {src}")
        return base[:at] + extra + base[at:]


def read_impressions(sources: list[str], columns: dict[str, str] | None = None) -> ImpressionRows:
    """Every valid impression row of ``sources`` (files, folders, globs), ordered by request then
    position; raises ``InputFileError`` for the first bad row (nothing is returned then)."""
    engine = _OnlineEngine()
    request = LogRequest(sources=tuple(sources), columns=dict(columns or {}))
    groups = resolve_sources(request.sources)
    with connection(groups) as con:
        engine._create_views(con, groups, request)
        engine._validate(con, groups, request)
        present = {c: bool((con.execute(f"SELECT count({c}) FROM logs").fetchone() or (0,))[0]) for c in
                   ("converted", "watch_ratio", "session_id", "user_id")}
        arr = con.execute(
            "SELECT request_id, query_id, doc_id, position, clicked, ts, arm, converted, watch_ratio, "
            "session_id, user_id, _file FROM logs ORDER BY request_id, position, _file, _row").fetchnumpy()
    return impression_rows(arr, present)


def _strings(values: Any) -> np.ndarray:
    return np.asarray([None if v is None else str(v) for v in values], dtype=object)


def _floats(values: Any, present: bool) -> np.ndarray:
    if not present:
        return np.full(len(values), np.nan)
    return np.asarray(values.filled(np.nan) if hasattr(values, "mask") else values, dtype=np.float64)


def impression_rows(arr: dict[str, Any], present: dict[str, bool]) -> ImpressionRows:
    """:class:`ImpressionRows` of columns ``arr`` (the reader's names; ``_file``: the row's file), sorted
    by request then position; ``present``: whether the whole log has ``converted``, ``watch_ratio``,
    ``session_id``, ``user_id`` (the Spark reader gives its partitions the whole log's answer)."""
    return ImpressionRows(
        request_id=_strings(arr["request_id"]), query_id=_strings(arr["query_id"]), doc_id=_strings(arr["doc_id"]),
        position=np.asarray(arr["position"], dtype=np.int64), clicked=np.asarray(arr["clicked"], dtype=np.int64),
        ts=np.asarray(arr["ts"], dtype=np.float64), arm=_strings(arr["arm"]),
        converted=_floats(arr["converted"], present["converted"]),
        watch_ratio=_floats(arr["watch_ratio"], present["watch_ratio"]),
        session_id=_strings(arr["session_id"]) if present["session_id"] else None,
        user_id=_strings(arr["user_id"]) if present["user_id"] else None,
        source=_strings(arr["_file"]))
