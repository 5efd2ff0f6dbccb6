"""``graders quality``: each grader's answers to gold items against the expected grades.

The answers (:class:`~ndcg_labeling.db.models.GoldAnswer`) are read with their gold item's grade in time
order (``created_at``, then id) and handed to the kernel :func:`ndcg_labeling.quality.gold_quality`.
``consensus --exclude-untrusted`` asks :func:`untrusted_graders`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.quality import TRUSTED, UNDECIDED, gold_quality

MIN_GOLD = 5  # gold answers a grader needs before being trusted or not
DRIFT_DROP = 0.2  # a drop of accuracy from the first to the second half larger than this is flagged

QUALITY_COLUMNS: tuple[str, ...] = (
    "grader", "kind", "n_gold", "gold_accuracy", "within_one", "gold_mae", "bias", "trusted",
    "accuracy_first_half", "accuracy_second_half", "drift", "drift_flagged",
)


@dataclass
class QualityReport:
    """Rows of ``graders quality`` (sorted by grader name) and sentences for people."""

    batch: str | None
    min_accuracy: float
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "min_accuracy": self.min_accuracy, "min_gold": MIN_GOLD,
                "rows": self.rows, "notes": self.notes}


def _num(value: float, digits: int = 4) -> float | None:
    return None if math.isnan(value) else round(float(value), digits)


def _answers(*, session: Session, batch: str | None) -> tuple[list[tuple[int, str, str]], list[tuple[int, int, int]]]:
    """Graders with gold assignments in the scope ``(id, name, kind)`` and their answers
    ``(grader id, answer, expected)`` in time order."""
    a, bgi, gi, ans = m.Assignment, m.BatchGoldItem, m.GoldItem, m.GoldAnswer
    scope = []
    if batch is not None:
        from ndcg_labeling.pipeline.tasks import require_batch

        scope.append(a.batch_id == require_batch(batch, session=session).id)
    graders = session.execute(
        select(m.Grader.id, m.Grader.name, m.Grader.kind).where(m.Grader.id.in_(
            select(a.grader_id).join(bgi, bgi.item_id == a.item_id).where(*scope))).order_by(m.Grader.name)).all()
    answers = session.execute(
        select(a.grader_id, ans.grade, gi.grade).join(ans, ans.assignment_id == a.id)
        .join(bgi, bgi.item_id == a.item_id).join(gi, gi.id == bgi.gold_item_id)
        .where(*scope).order_by(ans.created_at, ans.id)).all()
    return ([(int(i), str(n), str(k)) for i, n, k in graders],
            [(int(g), int(x), int(y)) for g, x, y in answers])


def _trusted_value(code: int) -> bool | str:
    return "undecided" if code == UNDECIDED else code == TRUSTED


def graders_quality(*, session: Session, batch: str | None = None, min_accuracy: float = 0.7) -> QualityReport:
    """Per grader with gold items in the scope (``batch``, or every batch): ``n_gold``,
    ``gold_accuracy`` (exact), ``within_one``, ``gold_mae``, ``bias`` (mean answer - expected),
    ``trusted`` (true / false with at least 5 gold answers, else ``"undecided"``), the accuracy over the
    first and the second half of the grader's gold answers in time, their difference ``drift`` and
    ``drift_flagged`` (a drop of more than 0.2)."""
    if not 0.0 <= min_accuracy <= 1.0:
        raise NdcgLabelingError(f"--min-accuracy must be between 0 and 1, got {min_accuracy}")
    graders, answers = _answers(session=session, batch=batch)
    if not graders:
        where = f"batch {batch!r}" if batch is not None else "any batch"
        raise NdcgLabelingError(f"no gold items in {where}: create a batch with `tasks create ... --gold-rate 0.1` "
                                f"after `ndcg-labeling gold import`")
    code = {gid: k for k, (gid, _, _) in enumerate(graders)}
    arr = np.array(answers, dtype=np.int64).reshape(-1, 3)
    q = gold_quality(np.array([code[int(g)] for g in arr[:, 0]], dtype=np.int64), arr[:, 1], arr[:, 2],
                     len(graders), min_accuracy=min_accuracy, min_gold=MIN_GOLD, max_drop=DRIFT_DROP)
    rows = []
    notes = []
    for k, (_, name, kind) in enumerate(graders):
        rows.append({
            "grader": name, "kind": kind, "n_gold": int(q.n_gold[k]), "gold_accuracy": _num(q.accuracy[k]),
            "within_one": _num(q.within_one[k]), "gold_mae": _num(q.mae[k]), "bias": _num(q.bias[k]),
            "trusted": _trusted_value(int(q.trusted[k])), "accuracy_first_half": _num(q.accuracy_first[k]),
            "accuracy_second_half": _num(q.accuracy_second[k]), "drift": _num(q.drift[k]),
            "drift_flagged": bool(q.drift_flagged[k])})
        if q.trusted[k] == 0:
            notes.append(f"{name} is untrusted: gold accuracy {q.accuracy[k]:.2f} < {min_accuracy:g} "
                         f"over {q.n_gold[k]} gold answers")
        if q.drift_flagged[k]:
            notes.append(f"{name} drifts: gold accuracy {q.accuracy_first[k]:.2f} in the first half, "
                         f"{q.accuracy_second[k]:.2f} in the second (a drop of more than {DRIFT_DROP:g})")
    undecided = [str(r["grader"]) for r in rows if r["trusted"] == "undecided"]
    if undecided:
        notes.append(f"undecided (fewer than {MIN_GOLD} gold answers): {', '.join(undecided)}")
    return QualityReport(batch=batch, min_accuracy=min_accuracy, rows=rows, notes=notes)


def untrusted_graders(*, session: Session, batch: str | None = None, min_accuracy: float = 0.7) -> dict[int, str]:
    """``grader row id -> name`` of the graders :func:`graders_quality` calls untrusted (an empty dict
    when the scope has no gold items: nobody is untrusted then)."""
    if not 0.0 <= min_accuracy <= 1.0:
        raise NdcgLabelingError(f"--min-accuracy must be between 0 and 1, got {min_accuracy}")
    graders, answers = _answers(session=session, batch=batch)
    if not graders:
        return {}
    code = {gid: k for k, (gid, _, _) in enumerate(graders)}
    arr = np.array(answers, dtype=np.int64).reshape(-1, 3)
    q = gold_quality(np.array([code[int(g)] for g in arr[:, 0]], dtype=np.int64), arr[:, 1], arr[:, 2],
                     len(graders), min_accuracy=min_accuracy, min_gold=MIN_GOLD, max_drop=DRIFT_DROP)
    return {gid: name for k, (gid, name, _) in enumerate(graders) if q.trusted[k] == 0}
