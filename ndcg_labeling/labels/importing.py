"""Import use cases: queries, documents, graders, system runs and judgments into the database.

Each function validates the whole file before it writes anything and raises
:class:`~ndcg_labeling.errors.InputFileError` (file, line, problem) on the first bad row; the
caller's transaction then rolls back, so a failed import leaves every table unchanged.
Re-importing the same file adds nothing ("0 new, N unchanged").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from sqlalchemy import delete, select, tuple_
from sqlalchemy.orm import Session

from ndcg_labeling.choices import GraderKind
from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.db.bulk import ColumnRows, external_row_ids, pairs_meanwhile
from ndcg_labeling.errors import ConflictError, InputFileError, NdcgLabelingError
from ndcg_labeling.io.files import estimated_lines
from ndcg_labeling.io.tables import InputTable, detect_format, read_table
from ndcg_labeling.labels.coded_ids import CodedIds, first_repeat, join_on_bytes, ranked_trec_run
from ndcg_labeling.scales import Scale, get_scale

MAX_ID_LENGTH = m.ID_LENGTH


def _width(column: Any) -> int:
    """The declared width of a String column of the models: one limit for SQLite (which would store
    anything) and PostgreSQL (which would refuse with a driver error)."""
    return int(column.property.columns[0].type.length)


# Limits checked at import on both backends, taken from the models.
QUERY_TYPE_LENGTH = _width(m.Query.query_type)
GRADER_LENGTH = _width(m.Grader.name)
DISPLAY_NAME_LENGTH = _width(m.Grader.display_name)
SYSTEM_LENGTH = _width(m.System.name)
BATCH_LENGTH = _width(m.Judgment.batch)
MAX_RANK = 2**31 - 1  # ranking_entries.rank is a 32-bit INTEGER on PostgreSQL
GRADER_KINDS = tuple(GraderKind)
Progress = Callable[[int], None]
# The columns trimmed of surrounding spaces (ids, and the query type, a label from a short list); every
# other column of these files is free text, stored verbatim (docs/import.md).
QUERY_TRIMMED = ("query_id", "query_type")
DOCUMENT_TRIMMED = ("doc_id",)
GRADER_TRIMMED = ("grader",)


@dataclass
class ImportSummary:
    """What an import did; ``str()`` is the one-line summary the CLI prints."""

    kind: str
    path: str
    new: int = 0
    unchanged: int = 0
    updated: int = 0
    created: dict[str, int] = field(default_factory=dict)
    trimmed: int = 0  # ids and query types whose surrounding spaces were trimmed (free text never is)
    trimmed_what: str = ""

    def __str__(self) -> str:
        parts = [f"{self.new} new", f"{self.unchanged} unchanged"]
        if self.updated:
            parts.append(f"{self.updated} updated")
        text = f"{self.kind} from {self.path}: " + ", ".join(parts)
        extra = [f"{n} {what} created without text" for what, n in self.created.items() if n]
        if extra:
            text += "; " + ", ".join(extra)
        if self.trimmed:
            text += f"; {self.trimmed} {self.trimmed_what} value(s) trimmed of surrounding spaces"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "new": self.new, "unchanged": self.unchanged,
                "updated": self.updated, "created": dict(self.created), "trimmed": self.trimmed}


# --- shared row checks --------------------------------------------------------------------------


def _check_unique(table: InputTable, columns: list[str], what: str) -> None:
    dup = table.frame.duplicated(subset=columns, keep="first")
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        key = ", ".join(f"{c}={table.frame[c].iloc[row]!r}" for c in columns)
        first = int(np.flatnonzero(
            (table.frame[columns] == table.frame[columns].iloc[row]).all(axis=1).to_numpy())[0])
        first_line = table.line_of(first)
        where = f"line {first_line}" if first_line is not None else f"row {first + 1}"
        raise table.error(row, f"duplicate {what} ({key}), first seen at {where}")


def file_scale(path: str, name: str) -> Scale:
    """The scale called ``name``; an unknown one is an error naming the file being imported."""
    try:
        return get_scale(name)
    except ValueError as exc:
        raise InputFileError(path, str(exc)) from None


def _optional_text(table: InputTable, column: str) -> list[str | None]:
    if column not in table.frame.columns:
        return [None] * len(table.frame)
    return [v if v != "" else None for v in table.frame[column].tolist()]


# --- queries and documents -----------------------------------------------------------------------


def import_queries(path: str | Path, *, session: Session, fmt: str | None = None) -> ImportSummary:
    """Import ``query_id,text,query_type``. Existing queries get the file's text and type.

    The text is stored verbatim; spaces around ``query_id`` and ``query_type`` are trimmed and counted."""
    table = read_table(path, fmt, trim=QUERY_TRIMMED)
    table.require_columns(["query_id", "text", "query_type"])
    ids = table.check_ids("query_id", MAX_ID_LENGTH)
    table.check_lengths("query_type", QUERY_TYPE_LENGTH)
    _check_unique(table, ["query_id"], "query_id")
    texts = _optional_text(table, "text")
    types = _optional_text(table, "query_type")
    summary = _upsert_by_external_id(m.Query, "queries", table, ids.tolist(),
                                     {"text": texts, "query_type": types}, session=session)
    summary.trimmed, summary.trimmed_what = table.trimmed, "query_id/query_type"
    return summary


def import_documents(path: str | Path, *, session: Session, fmt: str | None = None) -> ImportSummary:
    """Import ``doc_id,title`` and ``body`` and/or ``url``; other columns become free metadata.

    Every value but ``doc_id`` (trimmed and counted) is stored verbatim; an empty value is NULL."""
    table = read_table(path, fmt, trim=DOCUMENT_TRIMMED)
    table.require_columns(["doc_id", "title"], optional=["body", "url"])
    if "body" not in table.frame.columns and "url" not in table.frame.columns:
        raise InputFileError(table.path, "missing column body or url: expected doc_id,title,body or doc_id,title,url",
                             line=1 if table.fmt in ("csv", "tsv") else None)
    ids = table.check_ids("doc_id", MAX_ID_LENGTH)
    _check_unique(table, ["doc_id"], "doc_id")
    known = {"doc_id", "title", "body", "url"}
    extra = [c for c in table.frame.columns if c not in known]
    metas: list[str | None] = [json.dumps(row, ensure_ascii=False) for row in table.frame[extra].to_dict(
        orient="records")] if extra else [None] * len(table.frame)
    values = {"title": _optional_text(table, "title"), "body": _optional_text(table, "body"),
              "url": _optional_text(table, "url"), "meta": metas}
    summary = _upsert_by_external_id(m.Document, "documents", table, ids.tolist(), values, session=session)
    summary.trimmed, summary.trimmed_what = table.trimmed, "doc_id"
    return summary


def _upsert_by_external_id(model: Any, kind: str, table: InputTable, ids: list[str],
                           values: dict[str, list[Any]], *, session: Session) -> ImportSummary:
    summary = ImportSummary(kind, table.path)
    columns = list(values)
    existing: dict[str, tuple[Any, ...]] = {}
    for start in range(0, len(ids), 10_000):
        part = ids[start : start + 10_000]
        stmt = select(model.external_id, *(getattr(model, c) for c in columns)).where(model.external_id.in_(part))
        for row in session.execute(stmt):
            existing[row[0]] = tuple(row[1:])
    new_rows, updates = [], []
    for i, ext in enumerate(ids):
        row_values = tuple(values[c][i] for c in columns)
        if ext not in existing:
            new_rows.append((ext, *row_values))
            continue
        old = existing[ext]
        comparable_old = tuple(json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else v for v in old)
        if comparable_old == row_values:
            summary.unchanged += 1
        else:
            updates.append((ext, row_values))
    if new_rows:
        # A concurrent writer may store one of these ids meanwhile (another import of the file, or an
        # `import run` creating it as a placeholder): the file's values then overwrite it, as if this
        # import ran second. Counted as new either way.
        summary.new = repo.bulk_insert(model, ["external_id", *columns], new_rows, session=session,
                                       on_conflict=repo.OnConflict(("external_id",), update=tuple(columns)))
    summary.updated = repo.bulk_update_by_external_id(model, columns, updates, session=session)
    return summary


def _write(model: Any, columns: list[str], rows: Any, *, path: str, on_conflict: repo.OnConflict, session: Session,
           progress: Progress | None) -> int:
    """Bulk-insert keyed rows, safe against a concurrent writer (see :class:`repo.OnConflict`)."""
    try:
        return repo.bulk_insert(model, columns, rows, session=session, progress=progress, on_conflict=on_conflict)
    except ConflictError as exc:
        raise ConflictError(f"{path}: {exc}") from None


# --- graders -------------------------------------------------------------------------------------


def _check_kind(kind: str) -> None:
    if kind not in GRADER_KINDS:
        raise NdcgLabelingError(f"unknown grader kind {kind!r}; use {' or '.join(GRADER_KINDS)}")


def grader_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a grader's name (the id rule at the grader column's width), or None: the one
    rule of ``graders add``, ``judge run --grader`` and ``implicit derive --grader``."""
    from ndcg_labeling.io.ids import id_problem

    return id_problem(name, "grader name", GRADER_LENGTH)


def add_graders(names: list[str], *, session: Session, role: str = "grader", kind: str = "human") -> ImportSummary:
    """Add graders by name with ``role`` (grader or lead) and ``kind`` (human or model); existing names
    are left unchanged (also one a concurrent writer adds)."""
    from ndcg_labeling.labels.lookups import check_role

    check_role(role)
    _check_kind(kind)
    summary = ImportSummary("graders", "(command line)")
    wanted: dict[str, None] = {}
    for raw in names:
        name = raw.strip()
        problem = grader_name_problem(name)
        if problem:
            raise InputFileError("(command line)", problem)
        wanted[name] = None
    summary.new = repo.insert_missing_names(
        m.Grader, [{"name": n, "active": True, "role": role, "kind": kind} for n in wanted], session=session)
    summary.unchanged = len(names) - summary.new
    return summary


def import_graders(path: str | Path, *, session: Session, fmt: str | None = None, kind: str = "human") -> ImportSummary:
    """Import ``grader[,display_name]``; new graders get ``kind`` (human or model)."""
    _check_kind(kind)
    table = read_table(path, fmt, trim=GRADER_TRIMMED)
    table.require_columns(["grader"], optional=["display_name"])
    names = table.check_ids("grader", GRADER_LENGTH)
    table.check_lengths("display_name", DISPLAY_NAME_LENGTH)
    _check_unique(table, ["grader"], "grader")
    displays = _optional_text(table, "display_name")
    summary = ImportSummary("graders", table.path)
    existing = {g.name: g for g in session.execute(select(m.Grader)).scalars()}
    for name, display in zip(names.tolist(), displays, strict=True):
        grader = existing.get(name)
        if grader is None:
            session.add(m.Grader(name=name, display_name=display, active=True, kind=kind))
            summary.new += 1
        elif grader.display_name == display or display is None:
            summary.unchanged += 1
        else:
            grader.display_name = display
            summary.updated += 1
    session.flush()
    summary.trimmed, summary.trimmed_what = table.trimmed, "grader"
    return summary


# --- runs ----------------------------------------------------------------------------------------


@dataclass
class _RunLines:
    """A run's lines in ranked order: coded ids, rank, score (NaN: none) and the file row of each."""

    query: CodedIds
    doc: CodedIds
    rank: NDArray[np.int64]
    score: NDArray[np.float64]
    row: NDArray[np.int64]


def _read_run(path: str, fmt: str | None) -> tuple[InputTable, _RunLines]:
    """A run's lines, ids checked: a TREC run in trec_eval's order with ranks 1, 2, ... per query (the rank
    column is ignored), other formats in file order with their rank column."""
    if detect_format(path, fmt, otherwise="trec") in ("trec", "trec-run"):
        # NumPy for a plain run, else pandas; ids checked; trec_eval's order (the rule of trec.trec_order)
        table, query, doc, scores, order = ranked_trec_run(path, MAX_ID_LENGTH)
        q_sorted = query.codes[order]
        starts = np.flatnonzero(np.r_[True, q_sorted[1:] != q_sorted[:-1]])
        rank = np.arange(len(order), dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, len(order)])) + 1
        return table, _RunLines(query.take(order), doc.take(order), rank, scores[order], order)
    table = read_table(path, fmt)
    table.require_columns(["query_id", "doc_id", "rank"], optional=["score"])
    frame = table.frame
    ranks = table.parse_ranks("rank", MAX_RANK)
    if "score" in frame.columns:
        scores = pd.to_numeric(frame["score"].replace("", np.nan), errors="coerce")
        bad_score = ((scores.isna() & (frame["score"] != "")) | np.isinf(scores.fillna(0))
                     | frame["score"].str.lower().isin(["nan", "inf", "-inf", "infinity", "-infinity"]))
        if bad_score.any():
            row = int(np.flatnonzero(bad_score.to_numpy())[0])
            raise table.error(row, f"score {frame['score'].iloc[row]!r} is not a finite number")
    else:
        scores = pd.Series(np.nan, index=frame.index)
    query, doc = (CodedIds.checked(table, c, MAX_ID_LENGTH) for c in ("query_id", "doc_id"))
    return table, _RunLines(query, doc, ranks, scores.to_numpy(dtype=np.float64), np.arange(len(frame), dtype=np.int64))


def _check_system_name(path: str, system: str) -> None:
    name = system.strip()
    if not name:
        raise InputFileError(path, "empty system name (--system)")
    if len(name) > SYSTEM_LENGTH or not name.isprintable():
        raise InputFileError(path, f"system name (--system) must be printable text of at most {SYSTEM_LENGTH} "
                                   f"characters, got {len(name)} characters")


def import_run(path: str | Path, *, system: str, session: Session, fmt: str | None = None,
               replace: bool = False, description: str | None = None,
               progress: Progress | None = None) -> ImportSummary:
    """Import a system's ranking: a TREC run (``qid Q0 docid rank score tag``) or a CSV
    (``query_id,doc_id,rank[,score]``).

    A query already stored for the system with a different list is an error unless ``replace``
    (then that query's list is replaced whole). Same list: unchanged."""
    path_s = str(path)
    repo.begin_bulk(session)  # foreign keys checked once per referenced row (SQLite)
    _check_system_name(path_s, system)
    with pairs_meanwhile(m.Document, estimated_lines(path_s), session=session,
                         prepare=CodedIds.decode_stored) as stored_docs:  # read (and decoded) meanwhile
        table, run = _read_run(path_s, fmt)
    dup = first_repeat(run.query.codes, run.doc.codes)
    if dup >= 0:
        raise table.error(int(run.row[dup]), f"document {run.doc.ids[run.doc.codes[dup]]!r} appears twice for query "
                                              f"{run.query.ids[run.query.codes[dup]]!r}")
    dup = first_repeat(run.query.codes, run.rank)
    if dup >= 0:
        raise table.error(int(run.row[dup]), f"duplicate rank {int(run.rank[dup])} for query "
                                              f"{run.query.ids[run.query.codes[dup]]!r}")

    sys_obj, _created = repo.get_or_create_system(system.strip(), session=session, description=description)
    q_rows, new_q = external_row_ids(m.Query, run.query.ids, session=session, join=join_on_bytes)
    d_rows, new_d = external_row_ids(m.Document, run.doc.ids, session=session, join=join_on_bytes,
                                     prefetched=stored_docs)
    # Rows in (query, rank) order of the internal ids: the indexes grow at a few places.
    qid, did = q_rows[run.query.codes], d_rows[run.doc.codes]
    order = np.lexsort((run.rank, qid))
    run_rows = pd.DataFrame({"qid": qid[order], "did": did[order], "rank": run.rank[order], "score": run.score[order]})
    summary = ImportSummary("run rows", path_s, created={"queries": new_q, "documents": new_d})
    existing = pd.DataFrame(
        session.execute(select(m.RankingEntry.query_id, m.RankingEntry.document_id, m.RankingEntry.rank,
                               m.RankingEntry.score).where(m.RankingEntry.system_id == sys_obj.id)).all(),
        columns=["qid", "did", "rank", "score"])
    to_insert = run_rows
    if not existing.empty:
        touched = existing[existing["qid"].isin(run_rows["qid"].unique())]
        if not touched.empty:
            key = ["qid", "did", "rank"]
            new_sorted = run_rows[key].sort_values(key).reset_index(drop=True)
            same_queries: list[int] = []
            changed_queries: list[int] = []
            old_groups = {q: g[key].sort_values(key).reset_index(drop=True) for q, g in touched.groupby("qid")}
            for q, g in new_sorted.groupby("qid"):
                if q in old_groups:
                    same = old_groups[q].equals(g.reset_index(drop=True))
                    (same_queries if same else changed_queries).append(q)
            if changed_queries and not replace:
                qext = run.query.ids[int(np.flatnonzero(q_rows == changed_queries[0])[0])]
                raise ConflictError(f"{path_s}: system {system!r} already has a different ranking for query "
                                    f"{qext!r} ({len(changed_queries)} queries differ); use --replace to replace them")
            if changed_queries:
                session.execute(delete(m.RankingEntry).where(
                    (m.RankingEntry.system_id == sys_obj.id) & (m.RankingEntry.query_id.in_(changed_queries))))
                summary.updated = int(run_rows["qid"].isin(changed_queries).sum())
            summary.unchanged = int(run_rows["qid"].isin(same_queries).sum())
            to_insert = run_rows[~run_rows["qid"].isin(same_queries)]
    rows = ColumnRows([sys_obj.id, to_insert["qid"].to_numpy(), to_insert["did"].to_numpy(), to_insert["rank"].to_numpy(),
                       to_insert["score"].to_numpy(dtype=float)], len(to_insert), held={2: stored_docs and stored_docs.held})
    written = _write(m.RankingEntry, ["system_id", "query_id", "document_id", "rank", "score"], rows, path=path_s,
                     on_conflict=repo.RANKING_SAME, session=session, progress=progress)
    summary.new = written - summary.updated
    return summary


# --- judgments ---------------------------------------------------------------------------------


@dataclass
class _JudgmentLines:
    """A judgments file's rows in file order: coded query, document, grader and batch, and the grades."""

    query: CodedIds
    doc: CodedIds
    grader: CodedIds
    batch: CodedIds
    grade: NDArray[np.int64]


def read_judgments_file(path: str, *, fmt: str | None, grader: str | None, scale: Scale) -> tuple[InputTable, _JudgmentLines]:
    """Read and check a judgments file (ids, batch widths, grades, one row per key)."""
    if detect_format(path, fmt, otherwise="") in ("trec-qrels", "qrels", "trec"):
        if not grader:
            raise InputFileError(path, "a TREC qrels file names no grader: pass --grader NAME")
        from ndcg_labeling.io.files import refuse_nul
        from ndcg_labeling.trec import read_trec_qrels

        refuse_nul(path)  # also refuses anything but a regular file
        qrels = read_trec_qrels(path, relevance_text=True)  # the grade parser reads the text exactly
        table = InputTable(path, "trec", pd.DataFrame({
            "query_id": qrels["query_id"].astype(str), "doc_id": qrels["doc_id"].astype(str),
            "grader": grader, "grade": qrels["relevance"].astype(str), "batch": ""}))
    else:
        table = read_table(path, fmt)
        table.require_columns(["query_id", "doc_id", "grader", "grade"], optional=["batch"])
        if grader:
            raise InputFileError(path, "--grader is for TREC qrels files; this file has a grader column")
        if "batch" not in table.frame.columns:
            table.frame["batch"] = ""
    query = CodedIds.checked(table, "query_id", MAX_ID_LENGTH)
    doc = CodedIds.checked(table, "doc_id", MAX_ID_LENGTH)
    graders = CodedIds.checked(table, "grader", GRADER_LENGTH)
    batch = CodedIds.of(table.frame["batch"])
    too_long = [i for i, b in enumerate(batch.ids) if len(b) > BATCH_LENGTH]  # checked once per batch
    if too_long:
        raise table.error(int(np.argmax(batch.codes == too_long[0])),
                          f"batch is {len(batch.ids[too_long[0]])} characters long; the limit is {BATCH_LENGTH}")
    lines = _JudgmentLines(query, doc, graders, batch, table.parse_grades("grade", scale))
    dup = first_repeat(query.codes, doc.codes, graders.codes, lines.batch.codes)
    if dup >= 0:
        _check_unique(table, ["query_id", "doc_id", "grader", "batch"], "judgment")  # names the rows
    return table, lines


def import_judgments(path: str | Path, *, scale: str, session: Session, fmt: str | None = None,
                     grader: str | None = None, replace: bool = False, create_graders: bool = False,
                     progress: Progress | None = None) -> ImportSummary:
    """Import judgments ``query_id,doc_id,grader,grade[,batch]`` (or TREC qrels with ``grader``).

    A judgment is keyed by (grader, query, document, batch). Same grade and scale again: unchanged.
    A different grade for an existing key is a :class:`ConflictError` unless ``replace``.
    Unknown graders are an error unless ``create_graders``.
    """
    path_s = str(path)
    repo.begin_bulk(session)  # foreign keys checked once per referenced row (SQLite)
    scale_obj = file_scale(path_s, scale)
    table, lines = read_judgments_file(path_s, fmt=fmt, grader=grader, scale=scale_obj)

    gmap = repo.grader_map(session=session)
    unknown = sorted(set(lines.grader.ids) - gmap.keys())
    if unknown and not create_graders:
        first = min(lines.grader.ids.index(u) for u in unknown)
        row = int(np.argmax(lines.grader.codes == first))
        raise table.error(row, f"unknown grader {unknown[0]!r} ({len(unknown)} unknown); add it with "
                               f"`ndcg-labeling graders add {unknown[0]}` or pass --create-graders")
    if unknown:
        add_graders(unknown, session=session)
        gmap = repo.grader_map(session=session)
    q_rows, new_q = external_row_ids(m.Query, lines.query.ids, session=session, join=join_on_bytes)
    d_rows, new_d = external_row_ids(m.Document, lines.doc.ids, session=session, join=join_on_bytes)
    gid, qid, did = lines.grader.map_to(gmap), q_rows[lines.query.codes], d_rows[lines.doc.codes]
    summary = ImportSummary("judgments", path_s, created={"queries": new_q, "documents": new_d})
    keep = against_stored(table, lines, gid, qid, did, scale_obj.name, replace, summary, session=session)
    now = repo.db_datetime(session, m.utcnow())
    # Rows in (query, document, grader) order: the indexes then grow at a few places instead of at random
    # ones (a third faster on SQLite at 1M rows), and two writers take their keys in one order.
    kept = np.flatnonzero(keep) if keep is not None else np.arange(len(gid))
    order = kept[np.lexsort((gid[kept], did[kept], qid[kept]))]
    batches = lines.batch.ids
    batch = batches[0] if len(batches) == 1 else np.asarray(batches, dtype=object)[lines.batch.codes[order]].tolist()
    rows = ColumnRows([gid[order], qid[order], did[order], lines.grade[order], scale_obj.name, batch, path_s, now],
                      len(order))
    written = _write(m.Judgment, ["grader_id", "query_id", "document_id", "grade", "scale", "batch", "source_file",
                                  "created_at"], rows, path=path_s, session=session, progress=progress,
                     on_conflict=repo.JUDGMENT_UPSERT if replace else repo.JUDGMENT_SAME)
    summary.new = written - summary.updated
    return summary


def against_stored(table: InputTable, lines: _JudgmentLines, gid: NDArray[np.int64], qid: NDArray[np.int64],
                    did: NDArray[np.int64], scale: str, replace: bool, summary: ImportSummary, *,
                    session: Session) -> NDArray[np.bool_] | None:
    """The file's judgments against the stored ones of the same key: the same grade and scale is
    unchanged, another one a conflict (or, with ``replace``, deleted here and written again). Returns
    the rows to write (None: all, nothing being stored) and counts ``summary``'s unchanged and updated."""
    if session.execute(select(m.Judgment.id).limit(1)).first() is None:
        return None
    frame = pd.DataFrame({"gid": gid, "qid": qid, "did": did, "batch": lines.batch.values(), "grade": lines.grade,
                          "_row": np.arange(len(gid))})
    existing = _existing_judgments(frame, session=session)
    if existing.empty:
        return None
    merged = frame.merge(existing, on=["gid", "qid", "did", "batch"], how="left", suffixes=("", "_old"))
    seen = merged["id_old"].notna().to_numpy()
    differs = seen & ((merged["grade_old"].to_numpy() != merged["grade"].to_numpy())
                      | (merged["scale_old"].to_numpy() != scale))
    if differs.any() and not replace:
        r = merged.iloc[int(np.flatnonzero(differs)[0])]
        ext = table.frame.iloc[int(r["_row"])]
        pair = f"({ext['query_id']!r}, {ext['doc_id']!r})"
        if r["scale_old"] != scale:  # the scale differs: say so, whether or not the number does
            raise table.error(int(r["_row"]), f"grader {ext['grader']!r} already graded {pair} on scale "
                              f"{r['scale_old']} (as {int(r['grade_old'])}); this file is imported on scale {scale} "
                              f"(as {int(r['grade'])}): a judgment keeps one scale; use --replace to regrade it on {scale}")
        raise table.error(int(r["_row"]), f"grader {ext['grader']!r} already graded {pair} as {int(r['grade_old'])} "
                          f"on {r['scale_old']}, not {int(r['grade'])}; use --replace to overwrite")
    if differs.any():
        ids = merged.loc[differs, "id_old"].astype(np.int64).tolist()
        for start in range(0, len(ids), 10_000):
            session.execute(delete(m.Judgment).where(m.Judgment.id.in_(ids[start : start + 10_000])))
        summary.updated = int(differs.sum())
    summary.unchanged = int((seen & ~differs).sum())
    keep: NDArray[np.bool_] = ~(seen & ~differs)
    return keep


def _existing_judgments(frame: pd.DataFrame, *, session: Session) -> pd.DataFrame:
    """Stored judgments of the file's graders that share a (query, document) with the file."""
    cols = ["id_old", "gid", "qid", "did", "batch", "grade_old", "scale_old"]
    graders = [int(g) for g in frame["gid"].unique()]
    stmt = select(m.Judgment.id, m.Judgment.grader_id, m.Judgment.query_id, m.Judgment.document_id,
                  m.Judgment.batch, m.Judgment.grade, m.Judgment.scale).where(m.Judgment.grader_id.in_(graders))
    pairs = frame[["qid", "did"]].drop_duplicates()
    if len(pairs) <= 5_000:
        stmt = stmt.where(tuple_(m.Judgment.query_id, m.Judgment.document_id).in_(list(pairs.itertuples(index=False, name=None))))
    out = pd.DataFrame(session.execute(stmt).all(), columns=cols)
    return out.astype({"gid": np.int64, "qid": np.int64, "did": np.int64})
