"""The lead's view of the people (``/lead/graders``, ``/lead/activity``): graders with their role and
sign-in links, and per grader what they graded, how fast, why they skipped, and their gold quality.

**Seconds per item** come from the judgments' timestamps: a grade saved in a grading session (the
terminal's ``grade`` or the web page; imported files are left out, their rows share one time) records
when it was saved. Per grader and batch the save times are sorted; the median of the intervals between
consecutive saves is the grader's median seconds per item (:func:`ndcg_labeling.quality.
median_seconds_per_item`). An interval longer than :data:`MAX_GAP_SECONDS` is a pause, not an item,
and is left out. Skips and gold items are not judgments: the time spent on one counts toward the next
saved grade's interval.

Gold accuracy, trust and drift are those of ``graders quality`` (:func:`ndcg_labeling.labels.quality.
graders_quality`), for the same scope. Every function takes the session as a keyword argument.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.quality import median_seconds_per_item

MAX_GAP_SECONDS = 600.0
_EPOCH = datetime(1970, 1, 1)


def graders_overview(*, session: Session) -> list[dict[str, Any]]:
    """Every grader by name: display name, role, kind, active, judgments, live sign-in links."""
    now = m.utcnow()
    j, tok = m.Judgment, m.GraderToken
    judged = dict(session.execute(select(j.grader_id, func.count()).group_by(j.grader_id)).all())
    links = dict(session.execute(select(tok.grader_id, func.count()).where(tok.revoked_at.is_(None), tok.expires_at > now)
                                 .group_by(tok.grader_id)).all())
    return [{"grader": g.name, "display_name": g.display_name or "", "role": g.role, "kind": g.kind,
             "active": bool(g.active), "judgments": int(judged.get(g.id, 0)), "links": int(links.get(g.id, 0))}
            for g in session.execute(select(m.Grader).order_by(m.Grader.name)).scalars()]


@dataclass
class Activity:
    """Rows per grader (see :func:`grader_activity`) and notes for people."""

    batch: str | None
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    max_gap_seconds: float = MAX_GAP_SECONDS

    def as_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "rows": self.rows, "notes": self.notes, "max_gap_seconds": self.max_gap_seconds}


def _seconds(value: Any) -> float:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return float((value - _EPOCH).total_seconds())


def grader_activity(*, session: Session, batch: str | None = None) -> Activity:
    """Per grader with assignments in the scope (``batch`` or every batch): ``batches``, ``done``,
    ``skipped``, ``open``, ``judgments`` (in batches of the scope), ``median_seconds`` and
    ``intervals`` (see the module docstring), ``skips`` (reason -> count, most frequent first) and the
    gold figures of ``graders quality``: ``n_gold``, ``gold_accuracy``, ``trusted``, ``drift``,
    ``drift_flagged`` (None where the grader has no gold answer)."""
    from ndcg_labeling.labels.quality import TRUST_RULE, graders_quality
    from ndcg_labeling.labels.tasks import SESSION_SOURCE, require_batch

    a, b = m.Assignment, m.GradingBatch
    scope = [] if batch is None else [a.batch_id == require_batch(batch, session=session).id]
    rows: dict[str, dict[str, Any]] = {}
    for name, bname, status, reason in session.execute(
            select(m.Grader.name, b.name, a.status, a.skip_reason).join(m.Grader, m.Grader.id == a.grader_id)
            .join(b, b.id == a.batch_id).where(*scope)):
        row = rows.setdefault(name, {"grader": name, "batches": set(), "done": 0, "skipped": 0, "open": 0,
                                     "skips": Counter()})
        row["batches"].add(bname)
        row[status if status in ("done", "skipped") else "open"] += 1
        if status == "skipped":
            row["skips"][reason or ""] += 1
    names = sorted(rows)
    code = {n: k for k, n in enumerate(names)}
    j = m.Judgment
    jscope = [j.batch != ""] if batch is None else [j.batch == batch]
    counts = dict(session.execute(select(m.Grader.name, func.count()).select_from(j).join(m.Grader, m.Grader.id == j.grader_id)
                                  .where(*jscope).group_by(m.Grader.name)).all())
    timed = [(code[n], bt, _seconds(t)) for n, bt, t in session.execute(
        select(m.Grader.name, j.batch, j.created_at).join(m.Grader, m.Grader.id == j.grader_id)
        .where(*jscope, j.source_file == SESSION_SOURCE)) if n in code and t is not None]
    seq = {key: k for k, key in enumerate(sorted({(g, bt) for g, bt, _ in timed}))}
    medians, intervals = median_seconds_per_item(
        np.array([g for g, _, _ in timed], dtype=np.int64), np.array([seq[(g, bt)] for g, bt, _ in timed], dtype=np.int64),
        np.array([t for *_, t in timed], dtype=np.float64), len(names), max_gap=MAX_GAP_SECONDS)
    notes: list[str] = []
    try:
        quality = {r["grader"]: r for r in graders_quality(session=session, batch=batch).rows}
    except NdcgLabelingError:  # no gold items in the scope
        quality = {}
        notes.append("No gold answers in this scope: gold accuracy and drift appear once graders answer gold items "
                     "(upload gold items, then create a batch with a gold rate above 0).")
    out = []
    for k, name in enumerate(names):
        row = rows[name]
        q = quality.get(name, {})
        out.append({"grader": name, "batches": sorted(row["batches"]), "done": row["done"], "skipped": row["skipped"],
                    "open": row["open"], "judgments": int(counts.get(name, 0)),
                    "median_seconds": None if math.isnan(medians[k]) else round(float(medians[k]), 1),
                    "intervals": int(intervals[k]), "skips": dict(row["skips"].most_common()),
                    "n_gold": q.get("n_gold"), "gold_accuracy": q.get("gold_accuracy"), "trusted": q.get("trusted"),
                    "drift": q.get("drift"), "drift_flagged": q.get("drift_flagged")})
    if quality:
        notes.append(f"Trust and drift: {TRUST_RULE}.")  # the rule of graders quality, stated by its owner
    return Activity(batch, out, notes)
