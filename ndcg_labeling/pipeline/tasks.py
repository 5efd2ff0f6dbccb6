"""Position-blind grading: pool, assign, report progress, export and import task files, and the data
operations of the interactive grading session (next item, save a grade, skip, undo).

Graders judge each document on its own merits: nothing they are shown (task files, the terminal)
carries a rank, a score, a system name or another grader's grade, and every grader sees their items
in their own random order (queries shuffled, documents within a query shuffled), reproducible from
the batch's seed. Item ids (``item_key``) are random hex from a seeded generator, unrelated to rank,
system or position.

Grades are stored as :class:`~ndcg_labeling.db.models.Judgment` rows with ``batch`` = the batch
name, so agreement and consensus see them like any other judgments.

Every function takes the session as a keyword argument and never commits. The grading terminal
calls :func:`save_grade` / :func:`skip_item` / :func:`undo_item` each in its own short transaction.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from sqlalchemy import case, delete, func, select, update
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import ConflictError, InputFileError, NdcgLabelingError, NotFoundError
from ndcg_labeling.guidelines import Guideline, load_guideline
from ndcg_labeling.io.tasks_files import GradedRow, read_graded, row_error, write_tasks
from ndcg_labeling.scales import Scale, get_scale, parse_grade

SESSION_SOURCE = "(grade session)"
DEFAULT_SKIP_REASON = "cannot judge"
MAX_REPORTED_PROBLEMS = 100
_IN_CHUNK = 10_000


# --- results ------------------------------------------------------------------------------------


@dataclass
class BatchCreated:
    """What :func:`create_batch` did; ``str()`` is the summary the CLI prints."""

    batch: str
    scale: str
    depth: int
    overlap: int
    seed: int
    systems: list[str]
    graders: list[str]
    queries: int
    items: int
    assignments: int
    already_judged: int
    guideline_path: str
    guideline_version: str | None
    guideline_sha256: str

    def __str__(self) -> str:
        text = (f"batch {self.batch}: {self.items} items from {self.queries} queries (scale {self.scale}, "
                f"depth {self.depth}, systems {', '.join(self.systems)}), {self.assignments} assignments to "
                f"{len(self.graders)} graders (overlap {self.overlap}), seed {self.seed}")
        if self.already_judged:
            text += f"; {self.already_judged} pooled pairs left out (already judged {self.overlap} times)"
        return text + f"; guideline {self.guideline_path} version {self.guideline_version or '?'}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GraderProgress:
    grader: str
    done: int
    skipped: int
    total: int

    @property
    def open(self) -> int:
        return self.total - self.done - self.skipped


@dataclass
class BatchStatus:
    """Progress of a batch. ``complete_items``: items with all ``overlap`` grades; ``open_items``:
    items that at least one of their graders has neither graded nor skipped."""

    batch: str
    scale: str
    overlap: int
    items: int
    complete_items: int
    open_items: int
    graders: list[GraderProgress]
    guideline_path: str
    guideline_version: str | None
    guideline_changed: bool

    @property
    def warnings(self) -> list[str]:
        if not self.guideline_changed:
            return []
        return [guideline_warning(self.batch, self.guideline_path, self.guideline_version)]

    def as_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "scale": self.scale, "items": self.items,
                "complete_items": self.complete_items, "open_items": self.open_items,
                "graders": [{"grader": g.grader, "done": g.done, "skipped": g.skipped, "total": g.total}
                            for g in self.graders],
                "overlap": self.overlap, "guideline_path": self.guideline_path,
                "guideline_version": self.guideline_version, "guideline_changed": self.guideline_changed}


@dataclass
class TasksExported:
    batch: str
    grader: str
    path: str
    fmt: str
    rows: int
    warnings: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.rows} open items of grader {self.grader} in batch {self.batch} written to {self.path} ({self.fmt})"


@dataclass
class GradesImported:
    """What :func:`import_graded` did; ``str()`` is the summary the CLI prints."""

    path: str
    batch: str
    grader: str
    new: int = 0
    unchanged: int = 0
    replaced: int = 0
    left_open: int = 0

    def __str__(self) -> str:
        text = (f"grades from {self.path} (batch {self.batch}, grader {self.grader}): "
                f"{self.new} new, {self.unchanged} unchanged")
        if self.replaced:
            text += f", {self.replaced} replaced (a different grade than before: the latest file wins)"
        if self.left_open:
            text += f", {self.left_open} left open (empty grade)"
        return text

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class GradedFileError(NdcgLabelingError):
    """Bad rows of a graded task file, one :class:`InputFileError` per row; nothing was written.

    ``str()`` has one line per bad row (``FILE:LINE: problem`` or ``FILE: task I: problem``).
    """

    def __init__(self, problems: Sequence[InputFileError], total: int | None = None) -> None:
        self.problems = list(problems)
        self.total = total if total is not None else len(self.problems)
        lines = [str(p) for p in self.problems]
        if self.total > len(self.problems):
            lines.append(f"... and {self.total - len(self.problems)} more bad rows")
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class GradingItem:
    """An item as the grader sees it: no rank, score, system or other grade."""

    batch: str
    item_id: str
    position: int
    query: str
    title: str
    body: str
    url: str


# --- lookups -------------------------------------------------------------------------------------


def require_batch(name: str, *, session: Session) -> m.GradingBatch:
    batch = session.execute(select(m.GradingBatch).where(m.GradingBatch.name == name)).scalar_one_or_none()
    if batch is None:
        known = session.execute(select(m.GradingBatch.name).order_by(m.GradingBatch.name).limit(20)).scalars().all()
        hint = f"; known batches: {', '.join(known)}" if known else "; create one with `ndcg-labeling tasks create`"
        raise NotFoundError(f"unknown batch {name!r}{hint}")
    return batch


def _require_grader(name: str, *, session: Session) -> m.Grader:
    grader = session.execute(select(m.Grader).where(m.Grader.name == name)).scalar_one_or_none()
    if grader is None:
        raise NotFoundError(f"unknown grader {name!r}; add it with `ndcg-labeling graders add {name}`")
    return grader


def guideline_warning(batch: str, path: str, version: str | None) -> str:
    return (f"the guideline {path} has changed since batch {batch!r} was created (it was version "
            f"{version or '?'}; its sha256 differs now): the grades of this batch follow the text as it was then")


def _guideline_changed(batch: m.GradingBatch) -> bool:
    try:
        return load_guideline(batch.scale).sha256 != batch.guideline_sha256
    except NdcgLabelingError:
        return True


def parse_task_grade(raw: object, scale: Scale, guideline: Guideline | None = None) -> int:
    """A grade given as a number (``"2"``, ``2``) or a grade name (``"Highly relevant"``, any case).

    ``ValueError`` says why it is not a grade of ``scale``.
    """
    text = str(raw).strip()
    names = {n.lower(): scale.min_grade + i for i, n in enumerate(guideline.names if guideline else scale.names)}
    if text.lower() in names:
        return names[text.lower()]
    try:
        return parse_grade(text, scale)
    except ValueError as exc:
        if "not an integer" in str(exc):
            raise ValueError(f"grade {text!r} is not a grade of scale {scale.name} "
                             f"({scale.min_grade}..{scale.max_grade} or a grade name)") from None
        raise


# --- create: pooling and assignment ---------------------------------------------------------------


def _validate_names(values: Sequence[str] | None, what: str) -> list[str]:
    out: list[str] = []
    for raw in values or []:
        value = raw.strip()
        if not value:
            raise NdcgLabelingError(f"empty {what} name")
        if value in out:
            raise NdcgLabelingError(f"{what} {value!r} is named twice")
        out.append(value)
    return out


def create_batch(name: str, *, scale: str, depth: int, overlap: int, graders: Sequence[str], session: Session,
                 systems: Sequence[str] | None = None, query_types: Sequence[str] | None = None,
                 query_ids: Sequence[str] | None = None, seed: int | None = None) -> BatchCreated:
    """Pool, assign and store a grading batch.

    Pooling (as in TREC): per query, the union of the top-``depth`` documents (rank <= depth) of the
    chosen ``systems`` (all systems when none is named), for the queries of the chosen
    ``query_types`` and/or ``query_ids`` (all queries when none). Pairs that already have ``overlap``
    judgments by distinct graders on ``scale`` (in any batch, or none) are left out, so a batch created
    after adding a system pools only what is new. Pairs with open assignments in another batch are
    not left out.

    Assignment: each item goes to ``overlap`` distinct graders, greedily to the least-loaded ones with
    random tie-breaks, so the busiest and the idlest grader differ by at most one item. Each grader's
    order is shuffled independently: queries in random order, documents within a query in random
    order. ``seed`` (random when None, and recorded) makes the pool order, the assignment, the orders
    and the item ids reproducible.

    Raises :class:`NdcgLabelingError` for bad arguments, :class:`NotFoundError` for unknown graders,
    systems, query types or query ids, :class:`ConflictError` for an existing batch name.
    """
    name = name.strip()
    if not name:
        raise NdcgLabelingError("empty batch name")
    if len(name) > 128:
        raise NdcgLabelingError(f"batch name is {len(name)} characters long; the limit is 128")
    try:
        scale_obj = get_scale(scale)
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    if depth < 1:
        raise NdcgLabelingError(f"depth must be at least 1, got {depth}")
    if overlap < 1:
        raise NdcgLabelingError(f"overlap must be at least 1, got {overlap}")
    grader_names = _validate_names(graders, "grader")
    if not grader_names:
        raise NdcgLabelingError("no graders given (--graders a,b,c)")
    if overlap > len(grader_names):
        raise NdcgLabelingError(f"overlap {overlap} needs at least {overlap} graders, got {len(grader_names)} "
                                f"({', '.join(grader_names)})")
    if seed is not None and not 0 <= seed < 2**31:
        raise NdcgLabelingError(f"seed must be between 0 and {2**31 - 1}, got {seed}")
    gmap = repo.grader_map(session=session)
    unknown = [g for g in grader_names if g not in gmap]
    if unknown:
        raise NotFoundError(f"unknown grader {unknown[0]!r}; add it with `ndcg-labeling graders add {unknown[0]}`")
    if session.execute(select(m.GradingBatch.id).where(m.GradingBatch.name == name)).first() is not None:
        raise ConflictError(f"batch {name!r} already exists; choose another name")

    all_systems = dict(session.execute(select(m.System.name, m.System.id).order_by(m.System.name)).all())
    system_names = _validate_names(systems, "system")
    for s in system_names:
        if s not in all_systems:
            known = ", ".join(all_systems) or "(none: import a run first)"
            raise NotFoundError(f"unknown system {s!r}; known systems: {known}")
    if not system_names:
        system_names = list(all_systems)
    if not system_names:
        raise NdcgLabelingError("no systems to pool from: import a run first (`ndcg-labeling import run`)")
    type_names = _validate_names(query_types, "query type")
    if type_names:
        known_types = {v for v in session.execute(select(m.Query.query_type).distinct()).scalars() if v is not None}
        for t in type_names:
            if t not in known_types:
                raise NotFoundError(f"unknown query type {t!r}; known query types: {', '.join(sorted(known_types)) or '(none)'}")
    qid_names = _validate_names(query_ids, "query id")
    if qid_names:
        qmap = repo.external_id_map(m.Query, session=session, only=qid_names)
        missing = [q for q in qid_names if q not in qmap]
        if missing:
            raise NotFoundError(f"unknown query id {missing[0]!r}")

    guideline = load_guideline(scale_obj.name)
    pool = _pool(session=session, depth=depth, system_ids=[all_systems[s] for s in system_names],
                 query_types=type_names, query_ids=qid_names)
    n_pooled = len(pool)
    pool = _drop_judged(pool, scale=scale_obj.name, overlap=overlap, session=session)
    already = n_pooled - len(pool)
    if pool.empty:
        if n_pooled == 0:
            raise NdcgLabelingError(f"nothing to pool: no ranking entries with rank <= {depth} for systems "
                                    f"{', '.join(system_names)} and the chosen queries")
        raise NdcgLabelingError(f"nothing to grade: all {n_pooled} pooled pairs already have {overlap} judgments "
                                f"on scale {scale_obj.name}")

    if seed is None:
        seed = secrets.randbelow(2**31)
    rng = np.random.default_rng(seed)
    # The SQL order is not guaranteed: sort, then shuffle with the seed so that results are reproducible.
    pool = pool.sort_values(["qid", "did"], kind="stable").reset_index(drop=True)
    pool = pool.iloc[rng.permutation(len(pool))].reset_index(drop=True)
    n_items = len(pool)
    keys = _item_keys(n_items, seed=seed, batch=name)
    grader_ids = np.array([gmap[g] for g in grader_names], dtype=np.int64)
    chosen = _assign(n_items, len(grader_ids), overlap, rng)

    assign = pd.DataFrame({"item": np.repeat(np.arange(n_items), overlap), "g": chosen.ravel()})
    assign["qid"] = pool["qid"].to_numpy()[assign["item"].to_numpy()]
    # Each grader's own order: a random rank per (grader, query), then a random rank per item.
    pairs = assign[["g", "qid"]].drop_duplicates().sort_values(["g", "qid"], kind="stable")
    pairs["qkey"] = rng.random(len(pairs))
    assign = assign.sort_values(["g", "item"], kind="stable").merge(pairs, on=["g", "qid"], how="left")
    assign["dkey"] = rng.random(len(assign))
    assign = assign.sort_values(["g", "qkey", "dkey"], kind="stable").reset_index(drop=True)
    assign["position"] = assign.groupby("g", sort=False).cumcount()

    batch = m.GradingBatch(name=name, scale=scale_obj.name, depth=depth, overlap=overlap, seed=seed,
                           systems=list(system_names), guideline_path=guideline.path,
                           guideline_version=guideline.version, guideline_sha256=guideline.sha256)
    session.add(batch)
    session.flush()
    repo.bulk_insert(m.BatchItem, ["batch_id", "item_key", "query_id", "document_id"],
                     zip([batch.id] * n_items, keys, pool["qid"].tolist(), pool["did"].tolist(), strict=True),
                     session=session)
    key_to_id = dict(session.execute(select(m.BatchItem.item_key, m.BatchItem.id)
                                     .where(m.BatchItem.batch_id == batch.id)).all())
    item_ids = np.array([key_to_id[k] for k in keys], dtype=np.int64)
    n_assign = len(assign)
    repo.bulk_insert(m.Assignment, ["batch_id", "item_id", "grader_id", "position", "status"],
                     zip([batch.id] * n_assign, item_ids[assign["item"].to_numpy()].tolist(),
                         grader_ids[assign["g"].to_numpy()].tolist(), assign["position"].tolist(),
                         ["open"] * n_assign, strict=True),
                     session=session)
    return BatchCreated(batch=name, scale=scale_obj.name, depth=depth, overlap=overlap, seed=seed,
                        systems=list(system_names), graders=grader_names, queries=int(pool["qid"].nunique()),
                        items=n_items, assignments=n_assign, already_judged=already,
                        guideline_path=guideline.path, guideline_version=guideline.version,
                        guideline_sha256=guideline.sha256)


def _pool(*, session: Session, depth: int, system_ids: list[int], query_types: list[str],
          query_ids: list[str]) -> pd.DataFrame:
    """Distinct (qid, did) with rank <= depth in any of the systems, for the chosen queries."""
    re_ = m.RankingEntry
    stmt = (select(re_.query_id, re_.document_id).distinct()
            .where(re_.rank <= depth, re_.system_id.in_(system_ids)))
    if query_types or query_ids:
        stmt = stmt.join(m.Query, m.Query.id == re_.query_id)
        if query_types:
            stmt = stmt.where(m.Query.query_type.in_(query_types))
        if query_ids:
            stmt = stmt.where(m.Query.external_id.in_(query_ids))
    rows = session.execute(stmt).all()
    return pd.DataFrame(rows, columns=["qid", "did"]).astype(np.int64)


def _drop_judged(pool: pd.DataFrame, *, scale: str, overlap: int, session: Session) -> pd.DataFrame:
    """The pool without the pairs already judged by ``overlap`` distinct graders on ``scale``."""
    if pool.empty:
        return pool
    j = m.Judgment
    stmt = (select(j.query_id, j.document_id).where(j.scale == scale)
            .group_by(j.query_id, j.document_id).having(func.count(j.grader_id.distinct()) >= overlap))
    queries = pool["qid"].unique().tolist()
    frames = []
    if len(queries) <= _IN_CHUNK:
        frames.append(pd.DataFrame(session.execute(stmt.where(j.query_id.in_(queries))).all(),
                                   columns=["qid", "did"]))
    else:
        frames.append(pd.DataFrame(session.execute(stmt).all(), columns=["qid", "did"]))
    judged = pd.concat(frames).astype(np.int64)
    if judged.empty:
        return pool
    merged = pool.merge(judged.assign(_judged=True), on=["qid", "did"], how="left")
    return pool[merged["_judged"].isna().to_numpy()].reset_index(drop=True)


def _item_keys(n: int, *, seed: int, batch: str) -> list[str]:
    """``n`` random 24-hex-digit item ids from a generator seeded by (seed, batch name).

    The batch name is part of the seed because item ids are unique across batches.
    """
    name_part = int.from_bytes(hashlib.sha256(batch.encode("utf-8")).digest()[:8], "big")
    key_rng = np.random.default_rng([seed, name_part])
    while True:
        raw = key_rng.bytes(12 * n).hex()
        keys = [raw[i * 24 : (i + 1) * 24] for i in range(n)]
        if len(set(keys)) == n:  # 96 random bits: a collision is practically impossible
            return keys


def _assign(n_items: int, n_graders: int, overlap: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """``(n_items, overlap)`` grader indices: each item to the ``overlap`` least-loaded graders,
    ties broken at random. Loads never differ by more than one item."""
    loads = np.zeros(n_graders, dtype=np.int64)
    out = np.empty((n_items, overlap), dtype=np.int64)
    ties = rng.random((n_items, n_graders)) if n_items * n_graders <= 20_000_000 else None
    for i in range(n_items):
        tie = ties[i] if ties is not None else rng.random(n_graders)
        chosen = np.lexsort((tie, loads))[:overlap]
        out[i] = chosen
        loads[chosen] += 1
    return out


# --- status and listing ---------------------------------------------------------------------------


def batch_status(name: str, *, session: Session) -> BatchStatus:
    """Per-grader done/skipped/total, items with all grades, items still open, and whether the
    guideline file changed since the batch was created."""
    batch = require_batch(name, session=session)
    a = m.Assignment
    done = func.sum(case((a.status == "done", 1), else_=0))
    skipped = func.sum(case((a.status == "skipped", 1), else_=0))
    per_grader = session.execute(
        select(m.Grader.name, done, skipped, func.count())
        .join(m.Grader, m.Grader.id == a.grader_id).where(a.batch_id == batch.id)
        .group_by(m.Grader.name).order_by(m.Grader.name)).all()
    items = session.execute(select(func.count()).select_from(m.BatchItem)
                            .where(m.BatchItem.batch_id == batch.id)).scalar_one()
    per_item = (select(a.item_id, done.label("done"),
                       func.sum(case((a.status == "open", 1), else_=0)).label("open"), func.count().label("n"))
                .where(a.batch_id == batch.id).group_by(a.item_id).subquery())
    complete, open_items = session.execute(
        select(func.coalesce(func.sum(case((per_item.c.done >= per_item.c.n, 1), else_=0)), 0),
               func.coalesce(func.sum(case((per_item.c.open > 0, 1), else_=0)), 0))).one()
    return BatchStatus(batch=batch.name, scale=batch.scale, overlap=batch.overlap, items=int(items),
                       complete_items=int(complete), open_items=int(open_items),
                       graders=[GraderProgress(g, int(d or 0), int(s or 0), int(t)) for g, d, s, t in per_grader],
                       guideline_path=batch.guideline_path, guideline_version=batch.guideline_version,
                       guideline_changed=_guideline_changed(batch))


def list_batches(*, session: Session) -> list[dict[str, Any]]:
    """Every batch: name, scale, items, graders, overlap, assignments done/total, progress (0..1)."""
    a = m.Assignment
    items = dict(session.execute(select(m.BatchItem.batch_id, func.count()).group_by(m.BatchItem.batch_id)).all())
    progress = {b: (int(d or 0), int(t), int(g)) for b, d, t, g in session.execute(
        select(a.batch_id, func.sum(case((a.status == "done", 1), else_=0)), func.count(),
               func.count(a.grader_id.distinct())).group_by(a.batch_id)).all()}
    rows = []
    for batch in session.execute(select(m.GradingBatch).order_by(m.GradingBatch.created_at, m.GradingBatch.id)).scalars():
        done, total, graders = progress.get(batch.id, (0, 0, 0))
        rows.append({"batch": batch.name, "scale": batch.scale, "items": int(items.get(batch.id, 0)),
                     "graders": graders, "overlap": batch.overlap, "done": done, "total": total,
                     "progress": round(done / total, 4) if total else 0.0,
                     "guideline_version": batch.guideline_version,
                     "guideline_changed": _guideline_changed(batch),
                     "created_at": batch.created_at.isoformat(sep=" ", timespec="seconds")})
    return rows


# --- export ---------------------------------------------------------------------------------------


def _item_rows(batch_id: int, grader_id: int, *, session: Session, only_open: bool, limit: int | None = None) -> list[dict[str, Any]]:
    a, bi, q, d = m.Assignment, m.BatchItem, m.Query, m.Document
    stmt = (select(bi.item_key, a.position, q.text, q.external_id, d.title, d.body, d.url)
            .join(bi, bi.id == a.item_id).join(q, q.id == bi.query_id).join(d, d.id == bi.document_id)
            .where(a.batch_id == batch_id, a.grader_id == grader_id).order_by(a.position))
    if only_open:
        stmt = stmt.where(a.status == "open")
    if limit is not None:
        stmt = stmt.limit(limit)
    return [{"item_id": key, "position": pos, "query": text if text else ext, "title": title or "",
             "body": body or "", "url": url or "", "grade": ""}
            for key, pos, text, ext, title, body, url in session.execute(stmt)]


def export_tasks(name: str, *, grader: str, session: Session) -> list[dict[str, Any]]:
    """The grader's open items of batch ``name`` in the grader's order, as dicts with the keys
    ``item_id, query, title, body, url, grade`` (grade empty) and nothing else."""
    batch = require_batch(name, session=session)
    grader_obj = _require_grader(grader, session=session)
    _require_assigned(batch, grader_obj, session=session)
    rows = _item_rows(batch.id, grader_obj.id, session=session, only_open=True)
    for row in rows:
        del row["position"]
    return rows


def export_tasks_file(name: str, *, grader: str, out: str | Path, session: Session,
                      fmt: str | None = None) -> TasksExported:
    """Write :func:`export_tasks` to ``out`` as csv, jsonl or label-studio (default by extension)."""
    rows = export_tasks(name, grader=grader, session=session)
    batch = require_batch(name, session=session)
    written_fmt = write_tasks(rows, out, fmt)
    warnings = [guideline_warning(batch.name, batch.guideline_path, batch.guideline_version)] if _guideline_changed(batch) else []
    return TasksExported(batch.name, grader, str(out), written_fmt, len(rows), warnings)


def _require_assigned(batch: m.GradingBatch, grader: m.Grader, *, session: Session) -> None:
    has = session.execute(select(m.Assignment.id).where(m.Assignment.batch_id == batch.id,
                                                        m.Assignment.grader_id == grader.id).limit(1)).first()
    if has is None:
        raise NotFoundError(f"grader {grader.name!r} has no items in batch {batch.name!r}")


# --- import of graded files -------------------------------------------------------------------------


def import_graded(path: str | Path, *, grader: str, session: Session, fmt: str | None = None,
                  batch: str | None = None) -> GradesImported:
    """Import a filled task file of ``grader`` (CSV/JSONL ``item_id,grade``, or a Label Studio export).

    Every item must be one of the grader's items, all in one batch (``batch`` when given, else the
    batch of the file's first item); every grade must be on the batch's scale (a number or a grade
    name). Each bad row is reported (:class:`GradedFileError`, one line per row) and then nothing is
    written. Rows with an empty grade are left open. The same grade again is unchanged; a different
    grade replaces the stored one (the latest file wins).
    """
    path_s = str(path)
    grader_obj = _require_grader(grader, session=session)
    wanted_batch = require_batch(batch, session=session) if batch else None
    graded = read_graded(path_s, fmt)
    problems: list[tuple[int, InputFileError]] = list(graded.problems)

    keys = list({r.item_id for r in graded.rows if r.item_id})
    known: dict[str, tuple[int, int, int, int]] = {}  # key -> (item id, batch id, query id, document id)
    for start in range(0, len(keys), _IN_CHUNK):
        part = keys[start : start + _IN_CHUNK]
        for key, item_id, batch_id, qid, did in session.execute(
                select(m.BatchItem.item_key, m.BatchItem.id, m.BatchItem.batch_id, m.BatchItem.query_id,
                       m.BatchItem.document_id).where(m.BatchItem.item_key.in_(part))):
            known[key] = (item_id, batch_id, qid, did)
    item_ids = [v[0] for v in known.values()]
    mine: dict[int, tuple[int, str]] = {}  # item id -> (assignment id, status)
    for start in range(0, len(item_ids), _IN_CHUNK):
        part_ids = item_ids[start : start + _IN_CHUNK]
        for aid, item_id, status in session.execute(
                select(m.Assignment.id, m.Assignment.item_id, m.Assignment.status)
                .where(m.Assignment.item_id.in_(part_ids), m.Assignment.grader_id == grader_obj.id)):
            mine[item_id] = (aid, status)

    target = wanted_batch
    if target is None:
        first = next((known[r.item_id][1] for r in graded.rows if r.item_id in known and known[r.item_id][0] in mine), None)
        if first is None:
            first = next((known[r.item_id][1] for r in graded.rows if r.item_id in known), None)
        if first is not None:
            target = session.get(m.GradingBatch, first)
    batch_names = dict(session.execute(select(m.GradingBatch.id, m.GradingBatch.name)).all())
    scale = get_scale(target.scale) if target is not None else None
    guideline = None
    if scale is not None:
        try:
            guideline = load_guideline(scale.name)
        except NdcgLabelingError:
            guideline = None

    seen: dict[str, GradedRow] = {}
    accepted: list[tuple[GradedRow, int]] = []
    left_open = 0
    for row in graded.rows:
        problem = None
        if not row.item_id:
            problem = "empty item_id"
        elif row.item_id in seen:
            first_row = seen[row.item_id]
            where = f"line {first_row.line}" if first_row.line is not None else first_row.where
            problem = f"duplicate item_id {row.item_id!r}, first seen at {where}"
        elif row.item_id not in known:
            problem = f"unknown item_id {row.item_id!r}"
        elif target is not None and known[row.item_id][1] != target.id:
            problem = (f"item_id {row.item_id!r} belongs to batch {batch_names.get(known[row.item_id][1])!r}, "
                       f"not {target.name!r}")
        elif known[row.item_id][0] not in mine:
            problem = f"item_id {row.item_id!r} is not assigned to grader {grader!r}"
        if row.item_id:
            seen.setdefault(row.item_id, row)
        if problem is None and row.grade.strip() == "":
            left_open += 1
            continue
        if problem is None:
            assert scale is not None  # noqa: S101 - a known item implies a target batch
            try:
                accepted.append((row, parse_task_grade(row.grade, scale, guideline)))
            except ValueError as exc:
                problem = str(exc)
        if problem is not None:
            problems.append((row.index, row_error(path_s, row, problem)))
    if problems:
        problems.sort(key=lambda p: p[0])
        raise GradedFileError([p for _, p in problems[:MAX_REPORTED_PROBLEMS]], total=len(problems))
    if target is None:
        raise InputFileError(path_s, "the file has no items")

    summary = GradesImported(path_s, target.name, grader, left_open=left_open)
    if not accepted:
        return summary
    existing = {(qid, did): (jid, grade) for jid, qid, did, grade in session.execute(
        select(m.Judgment.id, m.Judgment.query_id, m.Judgment.document_id, m.Judgment.grade)
        .where(m.Judgment.grader_id == grader_obj.id, m.Judgment.batch == target.name))}
    now = m.utcnow()
    inserts: list[tuple[Any, ...]] = []
    replacements: list[dict[str, Any]] = []
    to_done: list[dict[str, Any]] = []
    assert scale is not None  # noqa: S101
    for row, grade in accepted:
        item_id, _b, qid, did = known[row.item_id]
        aid, status = mine[item_id]
        old = existing.get((qid, did))
        if old is None:
            inserts.append((grader_obj.id, qid, did, grade, scale.name, target.name, path_s,
                            repo.db_datetime(session, now)))
        elif old[1] == grade:
            summary.unchanged += 1
        else:
            replacements.append({"id": old[0], "grade": grade, "source_file": path_s, "created_at": now})
        if status != "done":
            to_done.append({"id": aid, "status": "done", "skip_reason": None, "updated_at": now})
    if to_done:  # assignments before judgments, the order save_grade's flush writes them in: no deadlock
        session.execute(update(m.Assignment), to_done)
    if replacements:
        session.execute(update(m.Judgment), replacements)
        summary.replaced = len(replacements)
    if inserts:  # a grade the grader saved meanwhile in a grading session is overwritten, as a replacement
        summary.new = repo.bulk_insert(m.Judgment, ["grader_id", "query_id", "document_id", "grade", "scale", "batch",
                                                    "source_file", "created_at"], inserts, session=session,
                                       on_conflict=repo.JUDGMENT_UPSERT)
    return summary


# --- the grading session's data operations -----------------------------------------------------------


def _grader_assignment(batch_name: str, item_id: str, grader: str, *,
                       session: Session) -> tuple[m.GradingBatch, m.Grader, m.Assignment, m.BatchItem]:
    batch = require_batch(batch_name, session=session)
    grader_obj = _require_grader(grader, session=session)
    item = session.execute(select(m.BatchItem).where(m.BatchItem.item_key == item_id,
                                                     m.BatchItem.batch_id == batch.id)).scalar_one_or_none()
    if item is None:
        raise NotFoundError(f"unknown item_id {item_id!r} in batch {batch.name!r}")
    assignment = session.execute(select(m.Assignment).where(m.Assignment.item_id == item.id,
                                                            m.Assignment.grader_id == grader_obj.id)).scalar_one_or_none()
    if assignment is None:
        raise NotFoundError(f"item_id {item_id!r} is not assigned to grader {grader!r}")
    return batch, grader_obj, assignment, item


def grader_progress(name: str, *, grader: str, session: Session) -> GraderProgress:
    """Done, skipped and total items of ``grader`` in batch ``name``."""
    batch = require_batch(name, session=session)
    grader_obj = _require_grader(grader, session=session)
    a = m.Assignment
    done, skipped, total = session.execute(
        select(func.sum(case((a.status == "done", 1), else_=0)), func.sum(case((a.status == "skipped", 1), else_=0)),
               func.count()).where(a.batch_id == batch.id, a.grader_id == grader_obj.id)).one()
    if not total:
        raise NotFoundError(f"grader {grader!r} has no items in batch {batch.name!r}")
    return GraderProgress(grader, int(done or 0), int(skipped or 0), int(total))


def next_item(name: str, *, grader: str, session: Session) -> GradingItem | None:
    """The grader's first open item (in the grader's order), or None when nothing is left open."""
    batch = require_batch(name, session=session)
    grader_obj = _require_grader(grader, session=session)
    rows = _item_rows(batch.id, grader_obj.id, session=session, only_open=True, limit=1)
    if not rows:
        return None
    r = rows[0]
    return GradingItem(batch.name, r["item_id"], r["position"], r["query"], r["title"], r["body"], r["url"])


def save_grade(name: str, item_id: str, grade: int | str, *, grader: str, session: Session,
               source_file: str = SESSION_SOURCE) -> int:
    """Store ``grader``'s grade of one item (a number or a grade name) and mark the item done.

    A grade already stored for the item in this batch is replaced. Returns the grade stored.
    """
    batch, grader_obj, assignment, item = _grader_assignment(name, item_id, grader, session=session)
    scale = get_scale(batch.scale)
    try:
        value = parse_task_grade(grade, scale)
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    judgment = session.execute(select(m.Judgment).where(
        m.Judgment.grader_id == grader_obj.id, m.Judgment.query_id == item.query_id,
        m.Judgment.document_id == item.document_id, m.Judgment.batch == batch.name)).scalar_one_or_none()
    now = m.utcnow()
    if judgment is None:
        session.add(m.Judgment(grader_id=grader_obj.id, query_id=item.query_id, document_id=item.document_id,
                               grade=value, scale=scale.name, batch=batch.name, source_file=source_file,
                               created_at=now))
    else:
        judgment.grade = value
        judgment.scale = scale.name
        judgment.source_file = source_file
        judgment.created_at = now
    assignment.status = "done"
    assignment.skip_reason = None
    assignment.updated_at = now
    session.flush()
    return value


def skip_item(name: str, item_id: str, *, grader: str, session: Session,
              reason: str = DEFAULT_SKIP_REASON) -> None:
    """Mark one of the grader's items skipped, with a reason (empty: "cannot judge")."""
    batch, grader_obj, assignment, item = _grader_assignment(name, item_id, grader, session=session)
    _delete_judgment(batch, grader_obj, item, session=session)
    assignment.status = "skipped"
    assignment.skip_reason = reason.strip() or DEFAULT_SKIP_REASON
    assignment.updated_at = m.utcnow()
    session.flush()


def undo_item(name: str, item_id: str, *, grader: str, session: Session) -> None:
    """Reopen one of the grader's items: its grade in this batch is deleted, a skip is cleared."""
    batch, grader_obj, assignment, item = _grader_assignment(name, item_id, grader, session=session)
    _delete_judgment(batch, grader_obj, item, session=session)
    assignment.status = "open"
    assignment.skip_reason = None
    assignment.updated_at = m.utcnow()
    session.flush()


def _delete_judgment(batch: m.GradingBatch, grader: m.Grader, item: m.BatchItem, *, session: Session) -> None:
    session.execute(delete(m.Judgment).where(
        m.Judgment.grader_id == grader.id, m.Judgment.query_id == item.query_id,
        m.Judgment.document_id == item.document_id, m.Judgment.batch == batch.name))
