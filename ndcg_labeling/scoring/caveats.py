"""Label-quality caveats of a report: how far the labels behind its numbers can be trusted.

Per query type and overall (``all``): Krippendorff's alpha of the grades (the agreement pipeline),
the labelled items still pending adjudication (flagged by consensus, no adjudication yet), and the
holes in the top k of every scored ranking (documents without a label, or whose label is pending).
Untrusted graders come from the grader-quality pipeline: :func:`untrusted_graders` names those whose
judgments are in the labels in force; those consensus left out are a note, and alpha leaves them out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import reads
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.results import ALL, UNTYPED, LabelCaveats

_SPAN = np.int64(1) << np.int64(31)  # (query, document) row ids as one int64 key; ids are 32-bit integers


def agreement_by_query_type(*, session: Session, exclude_graders: list[int] | None = None
                            ) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Agreement rows (``scope`` = query type, ``all`` first) from the agreement pipeline, and a note.

    Returns ``(None, reason)`` when the agreement pipeline is not available or there is nothing to
    measure, so a report can leave the section out and say why.
    """
    try:
        from ndcg_labeling.labels.agreement import agreement_report
    except ImportError:
        return None, "Agreement is not shown: this version has no agreement pipeline."
    try:
        rep = agreement_report(session=session, by="query-type", exclude_graders=exclude_graders or ())
    except NdcgLabelingError as exc:
        return None, f"Agreement is not shown: {exc}"
    note = "; ".join(rep.notes) if rep.notes else None
    return list(rep.rows), note


def untrusted_graders(*, session: Session) -> tuple[list[str] | None, dict[int, str]]:
    """The untrusted graders (``graders quality`` at the threshold each consensus scope recorded, 0.7
    by default) whose judgments are **in the labels in force**, and ``row id -> name`` of those left
    out of every consensus label in force (by ``consensus --exclude-untrusted``). None for the first
    when no gold answer is stored (nothing to say either way).

    A grader contributed when one of their judgments is of a (query, document) whose consensus label is
    in force (not adjudicated), counted in that label's scope (its batch, or every judgment), and the
    scope's last consensus run did not leave the grader out.
    """
    from sqlalchemy import and_, func, or_, select

    from ndcg_labeling.db import models as m
    from ndcg_labeling.labels.quality import untrusted_graders as untrusted

    if not session.scalar(select(func.count()).select_from(m.GoldAnswer)):
        return None, {}
    left_out = {s.scope: set(s.excluded or []) for s in session.execute(select(m.ConsensusSetting)).scalars()}
    names = untrusted(session=session)
    j, lab, adj = m.Judgment, m.ConsensusLabel, m.Adjudication
    contributed: list[str] = []
    excluded: dict[int, str] = {}
    for gid, name in sorted(names.items(), key=lambda kv: kv[1]):
        scopes = session.execute(
            select(lab.batch).distinct().join(j, and_(j.query_id == lab.query_id, j.document_id == lab.document_id))
            .where(j.grader_id == gid, or_(lab.batch == "", lab.batch == j.batch), lab.value.is_not(None),
                   ~select(adj.id).where(adj.query_id == lab.query_id, adj.document_id == lab.document_id).exists())
        ).scalars().all()
        if any(gid not in left_out.get(scope, set()) for scope in scopes):
            contributed.append(name)
        elif scopes:
            excluded[gid] = name
    return contributed, excluded


class _TypeCounter:
    """Counts of a mask per query type (``all`` included), with the type of each query row id looked
    up once as an integer code (no per-row pandas work)."""

    def __init__(self, queries: pd.DataFrame) -> None:
        qids = queries["query"].to_numpy(np.int64)
        order = np.argsort(qids, kind="stable")
        self.qids = qids[order]
        types = queries["query_type"].fillna(UNTYPED).to_numpy(dtype=str)[order]  # fixed-width: np.unique sorts fast
        self.names, self.codes = np.unique(types, return_inverse=True)

    def __call__(self, query: NDArray[np.int64], mask: NDArray[np.bool_] | None = None) -> dict[str, int]:
        pos = np.minimum(np.searchsorted(self.qids, query), max(self.qids.size - 1, 0))
        codes = self.codes[pos] if self.qids.size else np.zeros(query.size, np.int64)
        picked = codes if mask is None else codes[mask]
        counts = np.bincount(picked, minlength=len(self.names))
        out = {ALL: int(picked.size)}
        for name, count in zip(self.names, counts, strict=True):
            out[str(name)] = int(count)
        return out


def _in_sorted(x: NDArray[np.int64], sorted_keys: NDArray[np.int64]) -> NDArray[np.bool_]:
    """``np.isin(x, sorted_keys)`` for sorted keys: one binary search per element (``np.isin`` sorts
    both arrays again, a third of a second on 150,000 keys)."""
    if sorted_keys.size == 0:
        return np.zeros(x.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, x), sorted_keys.size - 1)
    out: NDArray[np.bool_] = sorted_keys[pos] == x
    return out


def top_k_positions(rank_rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """0-based position of each ``(system, query, document)`` row within its (system, query) list
    (the rows are in rank order)."""
    if len(rank_rows) == 0:
        return np.empty(0, np.int64)
    key = rank_rows[:, 0] * _SPAN + rank_rows[:, 1]
    starts = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
    out: NDArray[np.int64] = np.arange(len(rank_rows)) - np.repeat(starts, np.diff(np.r_[starts, len(rank_rows)]))
    return out


def _judge_filled(session: Session, labels: reads.EffectiveLabelRows, label_keys: NDArray[np.int64],
                  inside: NDArray[np.bool_], by_type: _TypeCounter) -> dict[str, int]:
    """Labelled items of the scored queries whose label in force is a consensus a judge filled
    (``consensus --judge-fills``; an adjudication overrides it)."""
    rows = reads.fetch_array(f"SELECT query_id, document_id FROM {m.ConsensusLabel.__tablename__} "
                             "WHERE filled_by IS NOT NULL", 2, session=session).astype(np.int64)
    filled = np.unique(rows[:, 0] * _SPAN + rows[:, 1]) if len(rows) else np.empty(0, np.int64)
    mask = _in_sorted(label_keys[inside], filled) & ~labels.adjudicated[inside]
    return by_type(labels.query[inside], mask)


def label_caveats(*, session: Session, labels: reads.EffectiveLabelRows, rank_rows: NDArray[np.int64],
                  scored_q: NDArray[np.int64], queries: pd.DataFrame, k: int) -> LabelCaveats:
    """The caveats of a report over ``scored_q`` (sorted query row ids) and the stored rankings
    ``rank_rows`` (system, query, document in rank order), with top-k holes counted at ``k``."""
    by_type = _TypeCounter(queries)
    caveats = LabelCaveats(k=k)
    flagged = reads.fetch_array(f"SELECT query_id, document_id FROM {m.ConsensusLabel.__tablename__} "
                                "WHERE needs_adjudication", 2, session=session).astype(np.int64)
    label_keys = labels.query * _SPAN + labels.document
    adjudicated = label_keys[labels.adjudicated]
    flagged_keys = np.unique(flagged[:, 0] * _SPAN + flagged[:, 1]) if len(flagged) else np.empty(0, np.int64)
    pending_keys = flagged_keys[~_in_sorted(flagged_keys, adjudicated)]  # label keys are sorted

    inside = _in_sorted(labels.query, scored_q)
    caveats.items = by_type(labels.query[inside])
    caveats.pending = by_type(labels.query[inside], _in_sorted(label_keys[inside], pending_keys))

    pos = top_k_positions(rank_rows)
    top = rank_rows[(pos < k) & _in_sorted(rank_rows[:, 1], scored_q)] if len(rank_rows) else rank_rows
    top_keys = top[:, 1] * _SPAN + top[:, 2]
    caveats.top_k_rows = by_type(top[:, 1])
    caveats.top_k_unjudged = by_type(top[:, 1], ~_in_sorted(top_keys, label_keys))
    caveats.top_k_pending = by_type(top[:, 1], _in_sorted(top_keys, pending_keys))
    caveats.judge_filled = _judge_filled(session, labels, label_keys, inside, by_type)

    contributed, excluded = untrusted_graders(session=session)
    rows, note = agreement_by_query_type(session=session, exclude_graders=list(excluded))
    caveats.agreement_rows, caveats.agreement_note = rows, note
    if rows is not None:
        caveats.alpha = {str(r["scope"]): (None if r.get("alpha") is None or not np.isfinite(r["alpha"])
                                           else float(r["alpha"])) for r in rows}
    if note:
        caveats.notes.append(note)
    caveats.untrusted_graders = contributed
    if excluded:
        caveats.notes.append(f"untrusted graders left out of consensus (their grades are in no label in force "
                             f"and not in alpha): {', '.join(sorted(excluded.values()))}")
    return caveats
