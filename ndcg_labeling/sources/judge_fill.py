"""``consensus --judge-fills NAME``: a calibrated judge fills items that people left short.

For the query types where the judge's newest stored calibration verdict (``calibrate --judge``) says
it agrees with people, every item of the batch with fewer human grades than the batch's overlap gets
the judge's grade as one more grade (an item no person graded gets the judge's grade as its label).
The consensus method then runs as usual, and the labels of those items name the judge in
``consensus_labels.filled_by``. Query types without an "agrees" verdict never get a judge's grade;
the summary counts their items that stayed short.

The judge gate (:mod:`ndcg_labeling.sources.judge_gate`) comes first: a judge whose newest canary failed
is refused, and so are labels whose model or prompt template differs from what the newest calibration
verdict measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import reads
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.labels.agreement import NO_QUERY_TYPE, GradeSelection
from ndcg_labeling.labels.lookups import require_batch, require_grader
from ndcg_labeling.sources import judge_gate as gate
from ndcg_labeling.sources.calibration import agreeing_query_types


@dataclass
class JudgeFill:
    """What the judge filled: per item of the selection (``filled``), counts per query type."""

    judge: str
    agreeing: list[str]
    filled: NDArray[np.bool_]
    by_type: dict[str, int] = field(default_factory=dict)
    left_short: dict[str, int] = field(default_factory=dict)  # short items of types without "agrees"

    def as_dict(self) -> dict[str, object]:
        return {"judge": self.judge, "agreeing_query_types": self.agreeing, "filled": int(self.filled.sum()),
                "filled_by_query_type": dict(self.by_type), "left_short_by_query_type": dict(self.left_short)}


def judge_filler(judge: str, *, batch: str | None,
                 session: Session) -> Callable[[GradeSelection], tuple[GradeSelection, JudgeFill]]:
    """The ``fill`` step of :func:`ndcg_labeling.labels.consensus.run_consensus` for ``--judge-fills judge``
    (consensus takes the step as input, so the label side does not import the judge side)."""
    return partial(fill_with_judge, judge=judge, batch=batch, session=session)


def fill_with_judge(sel: GradeSelection, *, judge: str, batch: str | None,
                    session: Session) -> tuple[GradeSelection, JudgeFill]:
    """``sel`` (human grades) with the judge's grades added where the module docstring says."""
    if batch is None:
        raise NdcgLabelingError("--judge-fills needs --batch: the batch's overlap is the number of human grades an "
                                "item should have")
    overlap = require_batch(batch, session=session).overlap
    grader = require_grader(judge, session=session)
    if grader.kind != "model":
        raise NdcgLabelingError(f"--judge-fills: {judge!r} is a {grader.kind} grader, not a model judge")
    gate.require_canary_passed(grader, session=session)
    agreeing = agreeing_query_types(grader, session=session)
    j = m.Judgment
    # a verdict holds for the model and prompt it measured: labels of another are refused (issue 47)
    gate.require_calibrated_provenance(grader, batch=batch, use="--judge-fills", session=session)
    rows = reads.fetch_array(select(j.query_id, j.document_id, j.grade).where(
        j.grader_id == grader.id, j.batch == batch, j.scale == sel.scale.name), 3, session=session, dtype=np.int64)
    qtypes = {int(q): (t or NO_QUERY_TYPE) for q, _ext, t in reads.query_rows(session=session)}
    span = np.int64(1) << np.int64(31)
    item_keys = sel.item_query_id * span + sel.item_document_id
    order = np.argsort(item_keys)
    sorted_keys = item_keys[order]
    human = np.bincount(sel.item, minlength=sel.n_items)
    add_item: list[int] = []
    add_grade: list[int] = []
    new_q: list[int] = []
    new_d: list[int] = []
    by_type: dict[str, int] = {}
    left: dict[str, int] = {}
    for q, d, g in rows.tolist():
        pos = int(np.searchsorted(sorted_keys, q * span + d))
        known = pos < order.size and sorted_keys[pos] == q * span + d
        idx = int(order[pos]) if known else None
        if (human[idx] if idx is not None else 0) >= overlap:
            continue
        qtype = qtypes.get(int(q), NO_QUERY_TYPE)
        if qtype not in agreeing:
            left[qtype] = left.get(qtype, 0) + 1
            continue
        if idx is None:
            idx = sel.n_items + len(new_q)
            new_q.append(q)
            new_d.append(d)
        add_item.append(idx)
        add_grade.append(g)
        by_type[qtype] = by_type.get(qtype, 0) + 1
    return _with_grades(sel, grader.id, add_item, add_grade, new_q, new_d), JudgeFill(
        grader.name, sorted(agreeing), _mask(sel.n_items + len(new_q), add_item), by_type, left)


def _mask(n: int, items: list[int]) -> NDArray[np.bool_]:
    out = np.zeros(n, dtype=bool)
    out[np.asarray(items, dtype=np.int64)] = True
    return out


def _with_grades(sel: GradeSelection, judge_id: int, items: list[int], grades: list[int], new_q: list[int],
                 new_d: list[int]) -> GradeSelection:
    if not items:
        return sel
    item = np.asarray(items, dtype=np.int64)
    iq = np.concatenate([sel.item_query_id, np.asarray(new_q, dtype=np.int64)])
    idoc = np.concatenate([sel.item_document_id, np.asarray(new_d, dtype=np.int64)])
    code = len(sel.grader_ids)
    n = item.size
    return replace(sel, query_id=np.concatenate([sel.query_id, iq[item]]),
                   document_id=np.concatenate([sel.document_id, idoc[item]]),
                   grader_id=np.concatenate([sel.grader_id, np.full(n, judge_id, np.int64)]),
                   grade=np.concatenate([sel.grade, np.asarray(grades, dtype=np.int64)]),
                   item=np.concatenate([sel.item, item]), item_query_id=iq, item_document_id=idoc,
                   grader=np.concatenate([sel.grader, np.full(n, code, np.int64)]),
                   grader_ids=np.concatenate([sel.grader_ids, np.asarray([judge_id], np.int64)]))
