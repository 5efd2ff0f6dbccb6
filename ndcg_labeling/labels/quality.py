"""``graders quality``: each grader's answers to gold items against the expected grades.

The answers (:class:`~ndcg_labeling.db.models.GoldAnswer`, the first answer of each gold assignment) are
read with their gold item's grade in time order (``created_at``, then id) and handed to the kernel
:func:`ndcg_labeling.quality.gold_quality`.

**Trust is a grader's**, over all their gold answers on the scale (issue 30): a batch's answers are a
detail of the row, never the ground of the decision, so a grader who is wrong on every gold item of one
batch is not trusted in another. ``consensus --exclude-untrusted`` asks :func:`grader_trust`.
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
from ndcg_labeling.quality import (
    MIN_DRIFT_HALF,
    TRUST_CONFIDENCE,
    TRUSTED,
    UNDECIDED,
    UNTRUSTED,
    GoldQuality,
    gold_quality,
)

QUALITY_COLUMNS: tuple[str, ...] = (
    "grader", "kind", "n_gold", "gold_accuracy", "accuracy_low", "accuracy_high", "within_one", "gold_mae", "bias",
    "trusted", "n_gold_all", "accuracy_all", "accuracy_first_half", "accuracy_second_half", "drift", "drift_low",
    "drift_high", "drift_flagged",
)
TABLE_COLUMNS: tuple[str, ...] = ("grader", "n_gold", "gold_accuracy", "accuracy_low", "accuracy_high", "bias",
                                  "trusted", "n_gold_all", "drift", "drift_flagged")
TRUST_RULE = (f"trusted when the {TRUST_CONFIDENCE:.0%} Wilson interval of the gold accuracy (over all the grader's gold "
              f"answers on the scale) lies at or above the threshold, untrusted when it lies below, else undecided; "
              f"drift when each half has >= {MIN_DRIFT_HALF} answers and Newcombe's {TRUST_CONFIDENCE:.0%} interval of "
              f"(second - first) lies below 0")


@dataclass
class QualityReport:
    """Rows of ``graders quality`` (sorted by grader name) and sentences for people."""

    batch: str | None
    min_accuracy: float
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "min_accuracy": self.min_accuracy, "confidence": TRUST_CONFIDENCE,
                "min_drift_half": MIN_DRIFT_HALF, "rule": TRUST_RULE, "rows": self.rows, "notes": self.notes}


def _num(value: float, digits: int = 4) -> float | None:
    return None if math.isnan(value) else round(float(value), digits)


def _answers(*, session: Session, batch_id: int | None = None, scale: str | None = None
             ) -> tuple[list[tuple[int, str, str]], list[tuple[int, int, int]]]:
    """Graders with gold assignments in the scope ``(id, name, kind)`` and their answers
    ``(grader id, answer, expected)`` in time order; the scope is a batch, a scale, or everything."""
    a, bgi, gi, ans = m.Assignment, m.BatchGoldItem, m.GoldItem, m.GoldAnswer
    scope = []
    if batch_id is not None:
        scope.append(a.batch_id == batch_id)
    if scale is not None:
        scope.append(gi.scale == scale)
    graders = session.execute(
        select(m.Grader.id, m.Grader.name, m.Grader.kind).where(m.Grader.id.in_(
            select(a.grader_id).join(bgi, bgi.item_id == a.item_id).join(gi, gi.id == bgi.gold_item_id)
            .where(*scope))).order_by(m.Grader.name)).all()
    answers = session.execute(
        select(a.grader_id, ans.grade, gi.grade).join(ans, ans.assignment_id == a.id)
        .join(bgi, bgi.item_id == a.item_id).join(gi, gi.id == bgi.gold_item_id)
        .where(*scope).order_by(ans.created_at, ans.id)).all()
    return ([(int(i), str(n), str(k)) for i, n, k in graders],
            [(int(g), int(x), int(y)) for g, x, y in answers])


def _quality(graders: list[tuple[int, str, str]], answers: list[tuple[int, int, int]],
             min_accuracy: float) -> GoldQuality:
    code = {gid: k for k, (gid, _, _) in enumerate(graders)}
    arr = np.array(answers, dtype=np.int64).reshape(-1, 3)
    return gold_quality(np.array([code[int(g)] for g in arr[:, 0]], dtype=np.int64), arr[:, 1], arr[:, 2],
                        len(graders), min_accuracy=min_accuracy)


def _trusted_value(code: int) -> bool | str:
    return "undecided" if code == UNDECIDED else code == TRUSTED


def _check(min_accuracy: float) -> None:
    if not 0.0 <= min_accuracy <= 1.0:
        raise NdcgLabelingError(f"--min-accuracy must be between 0 and 1, got {min_accuracy}")


def _batch_scope(batch: str | None, *, session: Session) -> tuple[int | None, str | None]:
    if batch is None:
        return None, None
    from ndcg_labeling.labels.tasks import require_batch

    found = require_batch(batch, session=session)
    return found.id, found.scale


def graders_quality(*, session: Session, batch: str | None = None, min_accuracy: float = 0.7) -> QualityReport:
    """Per grader with gold items in the scope (``batch``, or every batch): ``n_gold``,
    ``gold_accuracy`` (exact) with its Wilson interval ``accuracy_low``/``accuracy_high``, ``within_one``,
    ``gold_mae``, ``bias`` (mean answer - expected), the accuracy over the first and the second half of
    the grader's gold answers in time, their difference ``drift`` with Newcombe's interval and
    ``drift_flagged``. ``trusted`` (true, false or ``"undecided"``), ``n_gold_all`` and ``accuracy_all``
    are over all the grader's gold answers on the batch's scale (every scale without a batch)."""
    _check(min_accuracy)
    batch_id, scale = _batch_scope(batch, session=session)
    graders, answers = _answers(session=session, batch_id=batch_id)
    if not graders:
        where = f"batch {batch!r}" if batch is not None else "any batch"
        raise NdcgLabelingError(f"no gold items in {where}: create a batch with `tasks create ... --gold-rate 0.1` "
                                f"after `ndcg-labeling gold import`")
    q = _quality(graders, answers, min_accuracy)
    trust = grader_trust(session=session, scale=scale, min_accuracy=min_accuracy)
    rows, notes = [], []
    for k, (gid, name, kind) in enumerate(graders):
        _, code, n_all, acc_all = trust.get(gid, (name, UNDECIDED, 0, math.nan))
        rows.append({
            "grader": name, "kind": kind, "n_gold": int(q.n_gold[k]), "gold_accuracy": _num(q.accuracy[k]),
            "accuracy_low": _num(q.accuracy_low[k]), "accuracy_high": _num(q.accuracy_high[k]),
            "within_one": _num(q.within_one[k]), "gold_mae": _num(q.mae[k]), "bias": _num(q.bias[k]),
            "trusted": _trusted_value(code), "n_gold_all": n_all, "accuracy_all": _num(acc_all),
            "accuracy_first_half": _num(q.accuracy_first[k]), "accuracy_second_half": _num(q.accuracy_second[k]),
            "drift": _num(q.drift[k]), "drift_low": _num(q.drift_low[k]), "drift_high": _num(q.drift_high[k]),
            "drift_flagged": bool(q.drift_flagged[k])})
        if code == UNTRUSTED:
            notes.append(f"{name} is untrusted: gold accuracy {acc_all:.2f} over {n_all} gold answers, its "
                         f"{TRUST_CONFIDENCE:.0%} interval below {min_accuracy:g}")
        if q.drift_flagged[k]:
            notes.append(f"{name} drifts: gold accuracy {q.accuracy_first[k]:.2f} in the first half, "
                         f"{q.accuracy_second[k]:.2f} in the second (drop interval "
                         f"[{-q.drift_high[k]:.2f}, {-q.drift_low[k]:.2f}], excluding 0)")
    undecided = [str(r["grader"]) for r in rows if r["trusted"] == "undecided"]
    if undecided:
        notes.append(f"undecided (the interval of their gold accuracy straddles {min_accuracy:g}: more gold answers "
                     f"decide): {', '.join(undecided)}")
    return QualityReport(batch=batch, min_accuracy=min_accuracy, rows=rows, notes=notes)


MIN_SHIFT_GOLD = 5  # gold answers a grader needs before their grades are shifted


def _shifted(answers: list[tuple[int, int, int]], shifts: dict[int, int], scale: str | None
             ) -> list[tuple[int, int, int]]:
    if not shifts:
        return answers
    from ndcg_labeling.scales import get_scale

    lo, hi = (get_scale(scale).min_grade, get_scale(scale).max_grade) if scale else (-(10**9), 10**9)
    return [(g, min(hi, max(lo, a + shifts.get(g, 0))), e) for g, a, e in answers]


def grader_shifts(*, session: Session, scale: str) -> dict[int, tuple[str, int]]:
    """``grader row id -> (name, shift)`` of the consistently biased graders on ``scale``: the ordinal
    shift ``-round(median(answer - reference))`` over their gold answers (at least 5), kept when it is
    not 0 and makes strictly more of their gold answers exact (a grader one grade too lenient on every
    item gets -1). ``consensus --recalibrate`` adds it to their grades (clipped to the scale)."""
    from ndcg_labeling.scales import get_scale

    graders, answers = _answers(session=session, scale=scale)
    sc = get_scale(scale)
    out: dict[int, tuple[str, int]] = {}
    for gid, name, _ in graders:
        err = np.array([a - e for g, a, e in answers if g == gid], dtype=np.int64)
        exp = np.array([e for g, _, e in answers if g == gid], dtype=np.int64)
        if err.size < MIN_SHIFT_GOLD:
            continue
        shift = -int(np.round(np.median(err)))
        fixed = np.clip(exp + err + shift, sc.min_grade, sc.max_grade)
        if shift and np.count_nonzero(fixed == exp) > np.count_nonzero(err == 0):
            out[gid] = (name, shift)
    return out


def grader_trust(*, session: Session, scale: str | None = None, min_accuracy: float = 0.7,
                 shifts: dict[int, int] | None = None) -> dict[int, tuple[str, int, int, float]]:
    """``grader row id -> (name, trust code, n gold answers, accuracy)`` over **all** the grader's gold
    answers on ``scale`` (every scale when None), in any batch; with ``shifts`` (grader row id -> shift,
    :func:`grader_shifts`) the answers are judged as recalibrated."""
    _check(min_accuracy)
    graders, answers = _answers(session=session, scale=scale)
    if not graders:
        return {}
    answers = _shifted(answers, shifts or {}, scale)
    q = _quality(graders, answers, min_accuracy)
    return {gid: (name, int(q.trusted[k]), int(q.n_gold[k]), float(q.accuracy[k]))
            for k, (gid, name, _) in enumerate(graders)}


def untrusted_graders(*, session: Session, batch: str | None = None, min_accuracy: float = 0.7,
                      include_undecided: bool = False, shifts: dict[int, int] | None = None) -> dict[int, str]:
    """``grader row id -> name`` of the graders :func:`grader_trust` calls untrusted (and undecided, with
    ``include_undecided``) on the scale of ``batch`` (every scale when None); an empty dict when there are
    no gold answers: nobody is untrusted then."""
    scale = _batch_scope(batch, session=session)[1]
    states = {UNTRUSTED, UNDECIDED} if include_undecided else {UNTRUSTED}
    trust = grader_trust(session=session, scale=scale, min_accuracy=min_accuracy, shifts=shifts)
    return {gid: name for gid, (name, code, _, _) in trust.items() if code in states}
