"""The engine interface for logs: the request, the result, and the lookup by name."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Protocol

from ndcg_labeling.behavior.counts import CellCounts, SessionPatterns
from ndcg_labeling.errors import InputFileError, NdcgLabelingError

#: the log schema: required columns, then optional ones (docs/behavior.md)
REQUIRED_COLUMNS = ("request_id", "query_id", "doc_id", "position", "clicked", "ts")
OPTIONAL_COLUMNS = ("session_id", "user_id", "dwell_ms", "watch_ratio", "converted", "arm")
#: the tail that :func:`bad_rows_message` puts on the first bad row's problem
_BAD_ROWS_NOTE = re.compile(r" \((?:\d+ bad rows in all; )?nothing was stored\)$")


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
