"""The engine interface for logs: the request, the result, and the lookup by name."""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Protocol

from ndcg_labeling.behavior.counts import CellCounts, SessionPatterns
from ndcg_labeling.errors import InputFileError, NdcgLabelingError

#: the log schema: required columns, then optional ones (docs/behavior.md)
REQUIRED_COLUMNS = ("request_id", "query_id", "doc_id", "position", "clicked", "ts")
OPTIONAL_COLUMNS = ("session_id", "user_id", "dwell_ms", "watch_ratio", "converted", "arm")
#: the deepest position a log row may name: the models keep a column per position (a position curve, the
#: DBN's served lists), so a position such as 10^20 is a bad row, not a 10^20-wide array
MAX_POSITION = 10_000
#: the times a log row, ``--since``, ``--until`` and ``--as-of`` may name, in epoch seconds: the years 1 to
#: 9999 (what a datetime holds: the window and the stored derivation print as ISO 8601)
TS_MIN, TS_MAX = -62_135_596_800.0, 253_402_300_799.0
TS_RANGE_PROBLEM = "is outside the years 1 to 9999"
#: the largest ``watch_ratio`` and ``dwell_ms`` a log row or a posted event may carry (docs/online.md): a
#: rewatch may exceed 1, but a ratio of 1000 is a logging bug, and bounded values keep every per-request
#: sum of the online figures (fixed point, squares included) inside int64 (:mod:`ndcg_labeling.online.sums`)
WATCH_RATIO_MAX = 1000.0
DWELL_MS_MAX = 1e10  # about 116 days


def above_max_problem(maximum: float) -> str:
    """The refusal of a value above its column's largest (:data:`WATCH_RATIO_MAX`, :data:`DWELL_MS_MAX`),
    said alike by both engines and the event ingest."""
    return f"is above {maximum:g}, the largest value accepted"
#: the tail that :func:`bad_rows_message` puts on the first bad row's problem
_BAD_ROWS_NOTE = re.compile(r" \((?:\d+ bad rows in all; )?nothing was stored\)$")


def duplicate_position_message(request_id: object, positions: list[int]) -> str:
    """The DBN's refusal of a served list with two documents at one position (both engines say it alike)."""
    return (f"request {request_id!r} shows two documents at one position ({positions}): the DBN needs one "
            f"document per position of a served list")


def id_type_problem(column: str, kind: str) -> str:
    """The refusal of an id column stored as neither text nor integers (a float ``1.5``, a date, a struct:
    no id, as the importers refuse it); both engines say it alike, ``kind`` in the engine's own type names."""
    return f"column {column}: ids must be text or integers, got {kind}"


def bad_rows_message(problem: str, n_bad: int) -> str:
    """The first bad row's ``problem`` and what came of the read: ``clicked "2" is not 0 or 1 (nothing
    was stored)`` for one bad row, ``... (2 bad rows in all; nothing was stored)`` for more. A note
    already on ``problem`` (the Spark engine re-reads one file with the embedded engine, which counts that
    file's bad rows only) is replaced."""
    more = f"{n_bad} bad rows in all; " if n_bad > 1 else ""
    return f"{_BAD_ROWS_NOTE.sub('', problem)} ({more}nothing was stored)"


def is_bad_rows_message(problem: str) -> bool:
    """Whether ``problem`` is a bad row's (made by :func:`bad_rows_message`), not a file's (a column)."""
    return _BAD_ROWS_NOTE.search(problem) is not None


def first_bad_log_id(query_ids: list[str], doc_ids: list[str], names: dict[str, str]) -> tuple[str, str, str] | None:
    """``(column, id, problem)`` of the first id of an aggregate that breaks the id rule of
    :mod:`ndcg_labeling.io.ids` (the importers' rule), or None; ``column`` is ours, ``problem`` names the
    source column (``names``). The rule is checked once per distinct id (2M pairs: their distinct
    queries and documents), never per impression; the engine then finds a row with that id (the error
    path only) to name the file and the line."""
    import pandas as pd

    from ndcg_labeling.io.ids import first_bad_id

    for column, ids in (("query_id", query_ids), ("doc_id", doc_ids)):
        distinct = pd.Series(list(dict.fromkeys(ids)), dtype=object)  # in order; 3x faster than pd.unique
        found = first_bad_id(distinct, names[column])
        if found is not None:
            return column, str(distinct.iloc[found[0]]), found[1]
    return None


@dataclass(frozen=True)
class LogRequest:
    """What to aggregate: ``sources`` (files, folders of Parquet files, globs), ``columns`` (our name ->
    the source column), the window ``since <= ts <= until`` and ``ts <= as_of`` (epoch seconds; None:
    open; ``as_of`` None: the newest ``ts`` in the window), the decay ``half_life_s`` (None: every
    impression weighs 1), and whether the model needs ``watch_ratio`` and the served lists (``sessions``)."""

    sources: tuple[str, ...]
    columns: dict[str, str] = field(default_factory=dict)
    since: float | None = None
    until: float | None = None
    as_of: float | None = None
    half_life_s: float | None = None
    watch: bool = False
    sessions: bool = False

    def __post_init__(self) -> None:
        # the engines write these numbers into their SQL: only finite times of the years 1 to 9999 get there
        for option, value in (("--since", self.since), ("--until", self.until), ("--as-of", self.as_of)):
            if value is not None and not (math.isfinite(value) and TS_MIN <= value <= TS_MAX):
                raise NdcgLabelingError(f"{option}: {value!r} {TS_RANGE_PROBLEM}")
        if self.half_life_s is not None and not (math.isfinite(self.half_life_s) and self.half_life_s > 0):
            raise NdcgLabelingError(f"--half-life: {self.half_life_s!r} is not a positive number of seconds")

    def bounds(self, as_of: float | None) -> list[tuple[str, float]]:
        """The window as ``(operator, epoch seconds)`` bounds on ``ts``: ``since``, ``until`` and ``as_of``."""
        found = ((">=", self.since), ("<=", self.until), ("<=", as_of))
        return [(op, float(value)) for op, value in found if value is not None]

    def source_names(self) -> dict[str, str]:
        """Our column -> its name in the logs (``columns`` maps some; the others keep ours)."""
        return {c: self.columns.get(c, c) for c in REQUIRED_COLUMNS + OPTIONAL_COLUMNS}

    def check_mapping(self) -> None:
        """``NdcgLabelingError`` for a ``--column`` that names no log column of ours."""
        unknown = sorted(set(self.columns) - set(REQUIRED_COLUMNS) - set(OPTIONAL_COLUMNS))
        if unknown:
            raise NdcgLabelingError(f"--column: unknown log column {unknown[0]!r}; the columns are "
                                    f"{', '.join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)}")

    def check_columns(self, file: str, present: Collection[str]) -> None:
        """``InputFileError`` naming ``file`` when its columns (``present``) lack one the request needs: a
        required column (with the ``--column`` hint where it was not mapped), or ``watch_ratio`` for
        ``--model watch``."""
        names = self.source_names()
        for col in REQUIRED_COLUMNS:
            if names[col] not in present:
                hint = f" (name it with --column {col}=SOURCE)" if col not in self.columns else ""
                raise InputFileError(file, f"no column {names[col]!r}{hint}")
        if self.watch and names["watch_ratio"] not in present:
            raise InputFileError(file, f"--model watch needs a column {names['watch_ratio']!r}")


@dataclass(frozen=True)
class LogAggregates:
    """The result: ``query_ids[u]``, ``doc_ids[u]`` name pair ``u``; ``cells`` per (pair, position);
    ``sessions`` (DBN only); ``as_of`` the reference time of the decay; the window's size and span."""

    query_ids: list[str]
    doc_ids: list[str]
    cells: CellCounts
    sessions: SessionPatterns | None
    as_of: float | None
    n_impressions: int
    n_requests: int | None
    first_ts: float | None
    last_ts: float | None
    files: list[str]


class LogEngine(Protocol):
    """Aggregate impression logs in place; never copies the raw rows anywhere."""

    name: str

    def aggregate(self, request: LogRequest) -> LogAggregates:
        """Validate every row (raising ``InputFileError`` for the first bad one) and aggregate."""
        ...
