"""``snapshot diff A B [C ...]``: what changed from each snapshot to the next, per query.

For each consecutive pair (A -> B, B -> C, ...) and each query either ranked: the documents that entered
and left the top k, the documents of both top-k lists whose rank moved (``doc 3->1``), NDCG@k of both
against the labels in force and its change (by the report's definition: :func:`build_report`), and the
documents of the newer top k that have no label in force (``unjudged``): what ``tasks create
--from-snapshot`` pools. Any stored run may be compared, snapshot or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db.reads import effective_label_rows
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.results import ReportOptions
from ndcg_labeling.scoring.report import build_report

TopK = dict[str, list[str]]  # query external id -> document external ids in rank order


@dataclass
class SnapshotDiff:
    """Rows per (from, to, query) and one summary row per pair; ``notes`` say what could not be measured."""

    k: int
    rows: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def _top_k(run_ids: dict[str, int], k: int, *, session: Session) -> dict[str, TopK]:
    stmt = (select(m.RankingEntry.system_id, m.Query.external_id, m.Document.external_id)
            .join(m.Query, m.Query.id == m.RankingEntry.query_id)
            .join(m.Document, m.Document.id == m.RankingEntry.document_id)
            .where(m.RankingEntry.system_id.in_(run_ids.values()), m.RankingEntry.rank <= k)
            .order_by(m.RankingEntry.system_id, m.RankingEntry.query_id, m.RankingEntry.rank))
    name_of = {v: n for n, v in run_ids.items()}
    out: dict[str, TopK] = {n: {} for n in run_ids}
    for sid, q, d in session.execute(stmt):
        out[name_of[sid]].setdefault(q, []).append(d)
    return out


def _labelled(*, session: Session) -> set[tuple[str, str]]:
    labels = effective_label_rows(session=session)
    if not len(labels):
        return set()
    q_ext = dict(session.execute(select(m.Query.id, m.Query.external_id)).all())
    d_ext = dict(session.execute(select(m.Document.id, m.Document.external_id).where(
        m.Document.id.in_(np.unique(labels.document).tolist()))).all())
    return {(q_ext[int(q)], d_ext[int(d)]) for q, d in zip(labels.query, labels.document, strict=True)}


def _ndcg(names: list[str], k: int, *, session: Session) -> tuple[dict[tuple[str, str], float], str | None]:
    """NDCG@k per (run, query) as ``report`` scores it; a note instead when nothing can be scored."""
    opts = ReportOptions(systems=names, metrics=(f"ndcg@{k}",), by="none", per_query=True, decide=False,
                         n_bootstrap=200, n_permutations=200)
    try:
        per_query = build_report(session=session, options=opts).per_query
    except NotFoundError:
        raise
    except NdcgLabelingError as exc:
        return {}, f"no NDCG change: {exc}"
    return {(r.system, r.query_id): float(r.value) for r in per_query.itertuples()}, None


def _query_row(old: list[str], new: list[str], labelled: set[tuple[str, str]], q: str) -> dict[str, Any]:
    old_rank = {d: i + 1 for i, d in enumerate(old)}
    new_rank = {d: i + 1 for i, d in enumerate(new)}
    moved = [f"{d} {old_rank[d]}->{r}" for d, r in new_rank.items() if d in old_rank and old_rank[d] != r]
    return {"query_id": q, "entered": [d for d in new if d not in old_rank],
            "left": [d for d in old if d not in new_rank], "moved": moved,
            "unjudged": [d for d in new if (q, d) not in labelled]}


def diff_snapshots(names: list[str], *, session: Session, k: int = 10) -> SnapshotDiff:
    """Compare each run of ``names`` with the one before it (see the module docstring)."""
    if len(names) < 2:
        raise NdcgLabelingError("snapshot diff needs at least two snapshots (A B [C ...])")
    if not 1 <= k <= 1000:
        raise NdcgLabelingError(f"-k must be 1 to 1000, got {k}")
    run_ids = dict(session.execute(select(m.System.name, m.System.id).where(m.System.name.in_(names))).all())
    unknown = [n for n in names if n not in run_ids]
    if unknown:
        raise NotFoundError(f"no stored run or snapshot named {unknown[0]!r} (see `snapshot list`)")
    tops = _top_k(run_ids, k, session=session)
    labelled = _labelled(session=session)
    ndcg, note = _ndcg(list(dict.fromkeys(names)), k, session=session)
    rows, pairs = [], []
    for a, b in zip(names, names[1:], strict=False):
        changed, changes, unjudged = 0, [], 0
        for q in sorted(set(tops[a]) | set(tops[b])):
            row = _query_row(tops[a].get(q, []), tops[b].get(q, []), labelled, q)
            before, after = ndcg.get((a, q)), ndcg.get((b, q))
            change = None if before is None or after is None else after - before
            moved = bool(row["entered"] or row["left"] or row["moved"] or change)
            if moved or row["unjudged"]:
                changed += moved
                unjudged += len(row["unjudged"])
                if change is not None and moved:
                    changes.append(change)
                rows.append({"from": a, "to": b, **{c: "; ".join(v) if isinstance(v, list) else v
                                                   for c, v in row.items()},
                             f"ndcg@{k}_from": before, f"ndcg@{k}_to": after, "ndcg_change": change,
                             "n_unjudged": len(row["unjudged"])})
        pairs.append({"from": a, "to": b, "queries_changed": changed,
                      "mean_ndcg_change": float(np.mean(changes)) if changes else None,
                      "unjudged_brought": unjudged})
    return SnapshotDiff(k, rows, pairs, [note] if note else [])
