"""The live side of ``serve``: ``POST /api/events`` and ``GET /api/online/arms`` as one object per app.

:class:`LiveExperiment` joins the database and the live kernel (:mod:`ndcg_labeling.online.live`):
on first use it loads the labels in force (:func:`~ndcg_labeling.experiments.report.load_online_labels`)
and replays every stored event; a post is checked (key, rows, conflicts with stored requests), stored
in one transaction (PostgreSQL: ``COPY ... FROM STDIN``; SQLite: one multi-row insert) and only then
applied to the sums and acknowledged. When the label store changes (consensus re-run, an adjudication;
checked at most every :data:`LABEL_CHECK_S` seconds) the labels are reloaded and the stored requests
re-scored: the only full recomputation, never one per event.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from sqlalchemy import Engine, func, insert, select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.online_models import OnlineEvent
from ndcg_labeling.db.session import read_only, session_scope
from ndcg_labeling.experiments.report import load_online_labels, parse_window
from ndcg_labeling.metrics import parse_metric
from ndcg_labeling.online.live import COLUMNS, LiveSums, parse_events
from ndcg_labeling.workspace.ingest_keys import authenticate_ingest

LABEL_CHECK_S = 1.0
REPLAY_CHUNK = 50_000


def _signature(session: Any) -> tuple[Any, ...]:
    cons = session.execute(select(func.count(), func.max(m.ConsensusLabel.id))).one()
    adj = session.execute(select(func.count(), func.max(m.Adjudication.id))).one()
    return (*cons, *adj)


class LiveExperiment:
    """Live per-arm figures over the events posted to this server (one per app; thread-safe)."""

    def __init__(self, engine: Engine, metric: str = "ndcg@10", labels: str = "consensus",
                 gain: str = "exponential") -> None:
        self.engine, self.metric, self.labels_spec, self.gain = engine, parse_metric(metric), labels, gain
        self.lock = threading.Lock()
        self.state: LiveSums | None = None
        self.signature: tuple[Any, ...] | None = None
        self.checked_at = 0.0

    # --- labels and replay ------------------------------------------------------------------------
    def _fresh_state(self, session: Any) -> LiveSums:
        labels = load_online_labels(self.labels_spec, session=session)
        return LiveSums(labels.value, labels.by_query, labels.query_types, self.metric, self.gain)

    def _load(self) -> LiveSums:
        """The state, built (labels + every stored event) on first use or when the labels changed."""
        now = time.monotonic()
        if self.state is not None and now - self.checked_at < LABEL_CHECK_S:
            return self.state
        with session_scope(read_only(self.engine)) as session:
            sig = _signature(session)
            self.checked_at = now
            if self.state is not None and sig == self.signature:
                return self.state
            state = self._fresh_state(session)
            cols = [getattr(OnlineEvent, c) for c in COLUMNS]
            batch: list[tuple[Any, ...]] = []
            for row in session.execute(select(*cols).order_by(OnlineEvent.id)).yield_per(REPLAY_CHUNK):
                batch.append(tuple(row))
                if len(batch) >= REPLAY_CHUNK:
                    state.apply(state.prepare(batch))
                    batch = []
            if batch:
                state.apply(state.prepare(batch))
        self.state, self.signature = state, sig
        return state

    # --- the routes -------------------------------------------------------------------------------
    def authenticate(self, authorization: str | None) -> str:
        """The name of the ingest key of an ``Authorization`` header (401 otherwise): checked before the
        body is read."""
        with session_scope(read_only(self.engine)) as session:
            return authenticate_ingest(authorization, session=session)

    def ingest(self, body: bytes, key: str) -> dict[str, Any]:
        """Check the batch (posted with the ingest key named ``key``), store the events, then count them;
        ``{"accepted": n}``."""
        rows = parse_events(body)
        with self.lock:
            state = self._load()
            prepared = state.prepare(rows)  # raises on a row conflicting with a stored request
            self._store(rows)
            state.apply(prepared)
        return {"accepted": len(rows), "requests": len(prepared.rows), "key": key}

    def _store(self, rows: list[tuple[Any, ...]]) -> None:
        with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                raw: Any = conn.connection.driver_connection
                cols = ", ".join(COLUMNS)
                with raw.cursor() as cur, cur.copy(f"COPY {OnlineEvent.__tablename__} ({cols}) FROM STDIN") as copy:
                    for r in rows:
                        copy.write_row(r)
            else:
                conn.execute(insert(OnlineEvent), [dict(zip(COLUMNS, r, strict=True)) for r in rows])

    def arms(self, window: str | None, unjudged: str = "skip") -> dict[str, Any]:
        """The live figures per arm over the last ``window`` (``15m``, ``1h``; None or ``all``: all);
        ``unjudged``: a request whose query has no label is left out of the metric's mean (``skip``)
        or scores 0 (``zero``), as ``online report --unjudged``."""
        window_s = None if window in (None, "", "all") else parse_window(str(window), "window")
        with self.lock:
            snap = self._load().snapshot(window_s, unjudged)
        return {"window": window or "all", "window_s": window_s, **snap}
