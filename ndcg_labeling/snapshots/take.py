"""``snapshot take CONFIG``: ask a search engine for every query's ranking and store it as a stored run
named ``CONFIG@TIMESTAMP`` (UTC, to the millisecond), with one ``search_snapshots`` row naming the
configuration and the hash of the request template it was taken with.

The queries are the stored ones (optionally of some types), or a ``--queries`` file of ``query_id,text,
query_type`` and any other columns, whose columns are the template's variables (imported as ``import
queries`` does once the engine has answered: no write lock is held while the requests run). Every request
is sent before anything is written; the first request that fails for good raises, and the caller's
transaction is rolled back: a failure leaves no partial snapshot. The credential is read from the
configuration's environment variable at this moment and never stored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from ndcg_labeling import settings
from ndcg_labeling.db import models as m
from ndcg_labeling.db.bulk import external_row_ids
from ndcg_labeling.db.search_models import SearchConfig, SearchSnapshot
from ndcg_labeling.errors import NdcgLabelingError, SearchEngineError
from ndcg_labeling.io.tables import read_table
from ndcg_labeling.labels.importing import import_queries
from ndcg_labeling.snapshots.configs import get_config
from ndcg_labeling.snapshots.fetch import Fetched, Target, fetch_all
from ndcg_labeling.snapshots.templates import render, variables

MAX_DEPTH = 1000
BUILT_IN = ("query", "query_id", "query_type", "depth")


@dataclass
class QueryToAsk:
    row_id: int
    values: dict[str, Any]


@dataclass
class SnapshotTaken:
    """What ``snapshot take`` stored."""

    snapshot: str
    config: str
    queries: int
    hits: int
    depth: int
    template_sha256: str
    requests: int
    retries: int
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = (f"snapshot {self.snapshot}: {self.hits} results for {self.queries} queries (depth {self.depth}; "
                f"{self.requests} requests, {self.retries} retried)")
        return "\n".join([text, *(f"note: {n}" for n in self.notes)])

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def snapshot_name(config: str, when: datetime) -> str:
    return f"{config}@{when.strftime('%Y-%m-%dT%H:%M:%S')}.{when.microsecond // 1000:03d}Z"


def _stored_queries(query_types: list[str] | None, depth: int, *, session: Session) -> list[QueryToAsk]:
    stmt = select(m.Query.id, m.Query.external_id, m.Query.text, m.Query.query_type).order_by(m.Query.external_id)
    if query_types:
        stmt = stmt.where(m.Query.query_type.in_(query_types))
    return [QueryToAsk(i, {"query": t or "", "query_id": e, "query_type": q or "", "depth": depth})
            for i, e, t, q in session.execute(stmt)]


def _file_queries(path: str, depth: int) -> list[QueryToAsk]:
    """The queries of a ``--queries`` file with every column as a variable; their row ids are found when
    the file is imported, after the engine has answered (:func:`_import_file_queries`), so no write lock is
    held while the requests run."""
    table = read_table(path)
    table.require_columns(["query_id", "text", "query_type"])
    table.check_ids("query_id")
    out = []
    for record in table.frame.to_dict("records"):
        values = {str(k): ("" if v is None else v) for k, v in record.items()}
        values.update(query=values.pop("text"), query_id=str(values["query_id"]).strip(), depth=depth)
        values["query_type"] = str(values.get("query_type", "")).strip()
        out.append(QueryToAsk(-1, values))
    return out


def _import_file_queries(path: str, queries: list[QueryToAsk], *, session: Session) -> None:
    """Import the file as ``import queries`` does and give each query its row id."""
    import_queries(path, session=session)
    ids = dict(session.execute(select(m.Query.external_id, m.Query.id).where(
        m.Query.external_id.in_([q.values["query_id"] for q in queries]))).all())
    for q in queries:
        q.row_id = ids[q.values["query_id"]]


def _bodies(config: SearchConfig, queries: list[QueryToAsk]) -> list[tuple[str, Any]]:
    available = set(queries[0].values) if queries else set(BUILT_IN)
    unknown = [v for v in variables(config.template) if v not in available]
    if unknown:
        raise NdcgLabelingError(f"{config.name}: the template uses {{{{{unknown[0]}}}}}, which no query has "
                                f"(variables: {', '.join(sorted(available))})")
    out = []
    for q in queries:
        try:
            out.append((str(q.values["query_id"]), render(config.template, q.values)))
        except ValueError as exc:
            raise NdcgLabelingError(f"{config.name}: query {q.values['query_id']!r}: the filled template is not "
                                    f"JSON ({exc})") from None
    return out


def target_of(config: SearchConfig) -> Target:
    """The configuration as a fetch target, the credential read now from its environment variable."""
    secret = None
    if config.key_env:
        secret = settings.secret(config.key_env)
        if secret is None:
            raise SearchEngineError(f"{config.name}: the environment variable ${config.key_env} (--key-env) is "
                                    "not set")
    return Target(config.name, config.kind, config.url, config.index_name, config.id_path, config.score_path,
                  config.key_env, secret, key_header=config.key_header, timeout=config.timeout, concurrency=config.concurrency, rate=config.rate)


def take_snapshot(config_name: str, *, session: Session, queries_file: str | None = None,
                  query_types: list[str] | None = None, depth: int = 10, now: datetime | None = None,
                  transport: httpx.AsyncBaseTransport | None = None) -> SnapshotTaken:
    """Fetch and store one snapshot in the caller's transaction (see the module docstring)."""
    if not 1 <= depth <= MAX_DEPTH:
        raise NdcgLabelingError(f"--depth must be 1 to {MAX_DEPTH}, got {depth}")
    config = get_config(config_name, session=session)
    queries = (_file_queries(queries_file, depth) if queries_file
               else _stored_queries(query_types, depth, session=session))
    if not queries:
        raise NdcgLabelingError("no queries to send" + (f" of type {', '.join(query_types)}" if query_types else "")
                                + ": import queries first (or give --queries FILE)")
    bodies = _bodies(config, queries)
    fetched = fetch_all(target_of(config), bodies, depth, transport=transport)
    if queries_file:
        _import_file_queries(queries_file, queries, session=session)
    return _store(config, queries, fetched, depth, now or datetime.now(UTC), session=session)


def _notes(fetched: Fetched) -> list[str]:
    notes = []
    dup = [h.duplicates for h in fetched.hits if h.duplicates]
    if dup:
        notes.append(f"the engine returned {sum(dup)} duplicate ids in {len(dup)} queries: each kept at its first rank")
    pseudo = sum(h.pseudo_scores for h in fetched.hits)
    if pseudo:
        notes.append(f"{pseudo} queries had results without a score: their scores are descending pseudo-scores "
                     "from the engine's rank order")
    no_id = sum(h.without_id for h in fetched.hits)
    if no_id:
        notes.append(f"{no_id} results without an id at the --id-path were left out")
    empty = sum(not h.ids for h in fetched.hits)
    if empty:
        notes.append(f"{empty} queries returned no results")
    return notes


def _store(config: SearchConfig, queries: list[QueryToAsk], fetched: Fetched, depth: int, when: datetime, *,
           session: Session) -> SnapshotTaken:
    when = when.astimezone(UTC).replace(tzinfo=None)
    name = snapshot_name(config.name, when)
    while session.scalar(select(m.System.id).where(m.System.name == name)) is not None:
        when += timedelta(milliseconds=1)  # two snapshots within a millisecond: the later one a tick later
        name = snapshot_name(config.name, when)
    system = m.System(name=name, description=f"snapshot of search configuration {config.name}")
    session.add(system)
    session.flush()
    doc_ids = sorted({d for h in fetched.hits for d in h.ids})
    rows_of, created = external_row_ids(m.Document, doc_ids, session=session) if doc_ids else (np.empty(0, np.int64), 0)
    row_of = dict(zip(doc_ids, rows_of.tolist(), strict=True))
    entries = [{"system_id": system.id, "query_id": q.row_id, "document_id": row_of[d], "rank": r + 1, "score": s}
               for q, h in zip(queries, fetched.hits, strict=True) for r, (d, s) in enumerate(zip(h.ids, h.scores,
                                                                                                  strict=True))]
    if entries:
        session.execute(insert(m.RankingEntry), entries)
    notes = _notes(fetched)
    if created:
        notes.append(f"{created} documents the engine returned were not stored: created by id only (import "
                     "documents to show graders their text)")
    session.add(SearchSnapshot(system_id=system.id, config_id=config.id, template_sha256=config.template_sha256,
                               depth=depth, n_queries=len(queries), n_hits=len(entries), notes=notes or None,
                               taken_at=when))
    session.flush()
    return SnapshotTaken(name, config.name, len(queries), len(entries), depth, config.template_sha256,
                         fetched.requests, fetched.retries, notes)


def list_snapshots(*, session: Session, config: str | None = None) -> list[dict[str, Any]]:
    """One row per snapshot, oldest first: its run name, configuration, when, depth, counts, template hash."""
    stmt = (select(m.System.name, SearchConfig.name, SearchSnapshot)
            .join(SearchSnapshot, SearchSnapshot.system_id == m.System.id)
            .join(SearchConfig, SearchConfig.id == SearchSnapshot.config_id)
            .order_by(SearchSnapshot.taken_at, SearchSnapshot.id))
    if config:
        stmt = stmt.where(SearchConfig.name == config)
    return [{"snapshot": run, "config": cfg, "taken_at": s.taken_at.isoformat(timespec="milliseconds") + "Z",
             "depth": s.depth, "queries": s.n_queries, "results": s.n_hits, "template_sha256": s.template_sha256,
             "notes": "; ".join(s.notes or [])} for run, cfg, s in session.execute(stmt)]
