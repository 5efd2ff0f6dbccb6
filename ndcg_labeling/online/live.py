"""Live figures of an online experiment: events in, per-arm sliding-window sums out, incrementally.

:func:`parse_events` checks a posted batch (a JSON array of objects, or JSON lines) row by row and
refuses it whole, naming the first bad row. :class:`LiveSums` keeps the rows of each request it has
seen (a served list can arrive in several posts), the request's contribution, and the fixed-point sums
per (arm, minute, query type) of :mod:`ndcg_labeling.online.sums`. A post re-scores only the requests
it touches (the ideal DCG per query is precomputed from the label store): the request's old vector is
taken out of its cell and the new one put in, so the sums equal those of the batch report exactly.
Windows are whole minutes (:data:`BUCKET_S`) ending at the newest event time seen.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ndcg_labeling.engines.base import DWELL_MS_MAX, MAX_POSITION, TS_MAX, TS_MIN, WATCH_RATIO_MAX
from ndcg_labeling.engines.online_duckdb import ImpressionRows
from ndcg_labeling.engines.rules import value_problem
from ndcg_labeling.errors import EventError, NdcgLabelingError
from ndcg_labeling.io.ids import id_problem, shown
from ndcg_labeling.online.lists import EXACT_FAMILIES, ideal_dcg
from ndcg_labeling.online.requests import request_values
from ndcg_labeling.online.sums import Key, figures, window_start, zeros

BUCKET_S = 60.0
COLUMNS = ("request_id", "query_id", "doc_id", "position", "clicked", "ts", "arm", "converted", "watch_ratio",
           "dwell_ms", "session_id", "user_id")
_IDS = ("request_id", "query_id", "doc_id", "arm")
MAX_ID = 512
#: ``arm`` is the name of an experiment arm: the width of ``online_events.arm``
MAX_ARM = 128


def _limit(col: str) -> int:
    return MAX_ARM if col == "arm" else MAX_ID


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _ts(value: Any) -> float | None:
    got = _number(value)
    if got is not None or not isinstance(value, str):
        return got
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    from datetime import UTC

    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _shown(value: Any) -> str:
    """A posted value as an inert, bounded literal (a JSON array or object by its kind, never its repr)."""
    if isinstance(value, (list, dict)):
        return "a JSON " + ("array" if isinstance(value, list) else "object")
    return shown(value) if isinstance(value, str) else repr(value)[:60]


def _row(obj: Any) -> tuple[Any, ...]:
    """One event as a tuple in :data:`COLUMNS` order, or ValueError naming the problem."""
    if not isinstance(obj, dict):
        raise ValueError("is not a JSON object")
    out: dict[str, Any] = {}
    for col in _IDS + ("session_id", "user_id"):
        v = obj.get(col)
        if v is None or (isinstance(v, str) and not v.strip()):
            if col in _IDS:
                raise ValueError(f"{col} is missing or empty")
            out[col] = None
            continue
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise ValueError(f"{col} must be a string")
        out[col] = str(v)
        problem = id_problem(out[col], col, _limit(col))
        if problem is not None:
            raise ValueError(problem)
    # the numbers by the log's rules (engines/rules.py): the engines' messages; an optional one may be absent
    for col in ("position", "clicked", "ts", "converted", "watch_ratio", "dwell_ms"):
        v = obj.get(col)
        num = _ts(v) if col == "ts" else _number(v)
        problem = None if v is None and col in ("converted", "watch_ratio", "dwell_ms") else value_problem(col, num)
        if problem is not None:
            raise ValueError(f"{col} {_shown(v)} {problem}")
        out[col] = num
    out.update(position=int(out["position"]), clicked=int(out["clicked"]))
    return tuple(out[c] for c in COLUMNS)


def _load_items(text: str) -> list[tuple[int, Any]]:
    try:
        return _parse(text)
    except RecursionError:  # 200,000 nested ``[``: Python's parser recurses once per level
        raise EventError("the body is nested too deeply; events are flat JSON objects") from None


def _parse(text: str) -> list[tuple[int, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise EventError(f"the body is not a JSON array: {exc}") from None
        if not isinstance(data, list):
            raise EventError("the body is not a JSON array")
        return list(enumerate(data, start=1))
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    try:  # one parse for the whole body; line by line only to name a bad line
        return list(zip([n for n, _ in lines], json.loads("[" + ",".join(line for _, line in lines) + "]"), strict=True))
    except ValueError:
        pass
    items = []
    for n, line in lines:
        try:
            items.append((n, json.loads(line)))
        except ValueError:
            raise EventError(f"row {n}: not a JSON object") from None
    return items


def _num_ok(v: Any, low: float = -math.inf, high: float = math.inf) -> bool:
    return (type(v) is int or type(v) is float) and math.isfinite(v) and low <= v <= high


def _id_ok(v: Any, limit: int) -> bool:
    """Plainly a valid id: printable text without white space (the rule of :mod:`ndcg_labeling.io.ids`)."""
    return type(v) is str and 0 < len(v) <= limit and v.isprintable() and " " not in v


def _fast_rows(objs: list[Any]) -> list[tuple[Any, ...]] | None:
    """The rows when every one is plainly well-formed (ids strings, numbers numbers); None otherwise
    (then :func:`_row` checks row by row, accepting the same rows and naming the first bad one)."""
    if not all(type(o) is dict for o in objs):
        return None
    cols = {c: [o.get(c) for o in objs] for c in COLUMNS}
    for c in _IDS:
        limit = _limit(c)
        if not all(_id_ok(v, limit) for v in cols[c]):
            return None
    for c in ("session_id", "user_id"):
        if not all(v is None or _id_ok(v, MAX_ID) for v in cols[c]):
            return None
    if not all(type(v) is int and 1 <= v <= MAX_POSITION for v in cols["position"]):
        return None
    if not all(type(v) is int and (v == 0 or v == 1) for v in cols["clicked"]):
        return None
    if not all(_num_ok(v, TS_MIN, TS_MAX) for v in cols["ts"]):
        return None
    if not all(v is None or (_num_ok(v) and (v == 0 or v == 1)) for v in cols["converted"]):
        return None
    for c, high in (("watch_ratio", WATCH_RATIO_MAX), ("dwell_ms", DWELL_MS_MAX)):
        if not all(v is None or _num_ok(v, 0.0, high) for v in cols[c]):
            return None
    cols["ts"] = [float(v) for v in cols["ts"]]
    for c in ("converted", "watch_ratio", "dwell_ms"):
        cols[c] = [None if v is None else float(v) for v in cols[c]]
    return list(zip(*(cols[c] for c in COLUMNS), strict=True))


def parse_events(body: bytes) -> list[tuple[Any, ...]]:
    """The rows of a posted batch: a JSON array of objects, or one JSON object per line. A bad row
    raises :class:`EventError` ``row N: problem`` (N 1-based: the array index + 1, or the line)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise EventError("the body is not UTF-8 text") from None
    items = _load_items(text)
    if not items:
        raise EventError("no events in the body")
    fast = _fast_rows([obj for _, obj in items])
    if fast is not None:
        return fast
    rows = []
    for n, obj in items:
        try:
            rows.append(_row(obj))
        except ValueError as exc:
            raise EventError(f"row {n}: {exc}") from None
    return rows


def as_impressions(rows: list[tuple[Any, ...]]) -> ImpressionRows:
    """Rows (tuples in :data:`COLUMNS` order) as arrays ordered by request then position."""
    rows = sorted(rows, key=lambda r: (r[0], r[3]))
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(COLUMNS)
    get = dict(zip(COLUMNS, cols, strict=True))

    def obj(name: str) -> np.ndarray:
        return np.asarray(get[name], dtype=object)

    def num(name: str) -> np.ndarray:
        return np.asarray([np.nan if v is None else v for v in get[name]], dtype=np.float64)

    has = {c: any(v is not None for v in get[c]) for c in ("session_id", "user_id")}
    return ImpressionRows(request_id=obj("request_id"), query_id=obj("query_id"), doc_id=obj("doc_id"),
                          position=np.asarray(get["position"], np.int64), clicked=np.asarray(get["clicked"], np.int64),
                          ts=np.asarray(get["ts"], np.float64), arm=obj("arm"), converted=num("converted"),
                          watch_ratio=num("watch_ratio"), session_id=obj("session_id") if has["session_id"] else None,
                          user_id=obj("user_id") if has["user_id"] else None)


@dataclass
class Prepared:
    """A batch scored against the state, not yet applied: the requests' new rows, keys and vectors."""

    rows: dict[str, list[tuple[Any, ...]]]
    keys: list[Key]
    vectors: np.ndarray
    n_events: int


class LiveSums:
    """Per-arm sliding-window sums of an experiment, updated one post at a time (not thread-safe: the
    caller holds a lock)."""

    def __init__(self, labels: Mapping[tuple[str, str], float], by_query: Mapping[str, np.ndarray],
                 query_types: Mapping[str, str | None], metric: Any, gain: str = "exponential") -> None:
        if metric.family not in EXACT_FAMILIES:
            raise NdcgLabelingError(f"live figures: {metric.name} is not kept live; use ndcg@k or dcg@k")
        self.metric, self.gain = metric, gain
        self.labels, self.query_types = labels, query_types
        queries = sorted(by_query)
        values = ideal_dcg([np.asarray(by_query[q], np.float64) for q in queries], metric.k, gain)
        self.idcg = dict(zip(queries, values.tolist(), strict=True))  # the ideal DCG per (query, cut-off)
        self.requests: dict[str, list[tuple[Any, ...]]] = {}
        self.contribution: dict[str, tuple[Key, np.ndarray]] = {}
        self.sums: dict[Key, np.ndarray] = {}
        self.n_events = 0
        self.newest_ts: float | None = None

    def prepare(self, rows: list[tuple[Any, ...]]) -> Prepared:
        """Score the requests ``rows`` touch with their stored rows (raises on a conflicting row)."""
        merged: dict[str, list[tuple[Any, ...]]] = {}
        for r in rows:
            merged.setdefault(r[0], list(self.requests.get(r[0], ()))).append(r)
        every = [r for rs in merged.values() for r in rs]
        imp = as_impressions(every)
        labels = np.fromiter((self.labels.get((q, d), np.nan) for q, d in zip(imp.query_id, imp.doc_id, strict=True)),
                             dtype=np.float64, count=len(imp))
        values = request_values(imp, labels, self.query_types, {}, self.metric, gain=self.gain, idcg=self.idcg)
        starts = window_start(values.ts, BUCKET_S)
        keys: list[Key] = [(str(a), float(w), str(q)) for a, w, q in zip(values.arm, starts, values.query_type, strict=True)]
        return Prepared(merged, keys, values.vectors(), len(rows))

    def apply(self, prepared: Prepared) -> None:
        """Put a prepared batch into the sums: each touched request's old vector out, the new one in."""
        for rid, key, vec in zip(sorted(prepared.rows), prepared.keys, prepared.vectors, strict=True):
            old = self.contribution.get(rid)
            if old is not None:
                self.sums[old[0]] = self.sums[old[0]] - old[1]
            self.sums[key] = self.sums.get(key, zeros()) + vec
            self.contribution[rid] = (key, vec)
            self.requests[rid] = prepared.rows[rid]
        self.n_events += prepared.n_events
        ts_max = max(float(r[5]) for rs in prepared.rows.values() for r in rs) if prepared.rows else None
        if ts_max is not None:
            self.newest_ts = ts_max if self.newest_ts is None else max(self.newest_ts, ts_max)

    def snapshot(self, window_s: float | None, unjudged: str = "skip") -> dict[str, Any]:
        """Per-arm figures over the window (None: everything) and the per-minute series of each arm;
        ``unjudged``: how the metric's mean counts a request whose query has no label (``skip``, ``zero``)."""
        if window_s is not None and self.newest_ts is not None:
            cut = math.floor((self.newest_ts - window_s) / BUCKET_S) * BUCKET_S
        else:
            cut = -math.inf
        arms: dict[str, np.ndarray] = {}
        series: dict[tuple[str, float], np.ndarray] = {}
        for (arm, start, _), vec in self.sums.items():
            if start is not None and start >= cut:
                arms[arm] = arms.get(arm, zeros()) + vec
                series[(arm, start)] = series.get((arm, start), zeros()) + vec
        return {"metric": self.metric.name, "newest_ts": self.newest_ts, "n_events": self.n_events,
                "unjudged": unjudged,
                "arms": [{"arm": a, **figures(v, unjudged)} for a, v in sorted(arms.items()) if v[0] > 0],
                "series": [{"arm": a, "t": t, **figures(v, unjudged)} for (a, t), v in sorted(series.items())
                           if v[0] > 0]}
