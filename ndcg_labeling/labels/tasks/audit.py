"""``tasks create NAME --audit-of BATCH --judge GRADER --budget N``: the queries people audit of a batch a judge
graded in full, drawn by stratum, with their inclusion probabilities (issue 47; docs/judges.md).

The unit is the query (PPI of a per-query metric audits whole queries): every pooled pair of a drawn query
goes to people. Strata: the query type crossed with the judge's grade band (equal-count bands of the judge's
mean grade per query, as a share of the scale's top; up to three bands per type, fewer when the budget is
small). Allocation (:func:`ndcg_labeling.stats.audit_allocation`): Neyman's, minimizing the stratified
estimate's variance, with each stratum's spread taken as ``sqrt(mean(m (1 - m)))`` over its queries' judge
mean ``m`` (the variance a label of that mean would have if it were a coin: the judge-based proxy of stratified
PPI, Fisch et al. 2024, for a stratum no person has graded yet) and at least two queries per stratum. Each
drawn query's inclusion probability is ``n_h / N_h``, stored in ``audit_samples`` (revision 0015), which
``report --estimator ppi`` weights the audit by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.labels.lookups import require_batch, require_grader
from ndcg_labeling.labels.tasks.create import create_batch
from ndcg_labeling.results import UNTYPED
from ndcg_labeling.scales import get_scale
from ndcg_labeling.stats import audit_allocation

MAX_BANDS = 3


@dataclass
class AuditStratum:
    stratum: str
    queries: int
    audited: int
    inclusion: float
    judge_mean: float  # the judge's mean grade over the stratum's pairs, as a share of the scale's top


@dataclass
class AuditCreated:
    """What :func:`create_audit` did; ``str()`` is the summary the CLI prints."""

    batch: str
    audit_of: str
    judge: str
    budget: int
    queries: int
    items: int
    assignments: int
    seed: int
    strata: list[AuditStratum] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"audit batch {self.batch}: {self.budget} of the {self.queries} queries of batch {self.audit_of} "
                 f"(judged by {self.judge}) for people, {self.items} items, {self.assignments} assignments, "
                 f"seed {self.seed}"]
        lines += [f"  {s.stratum}: {s.audited} of {s.queries} queries (inclusion {s.inclusion:.3f}; judge mean "
                  f"{s.judge_mean:.2f} of the top grade)" for s in self.strata]
        return "\n".join(lines + [f"Warning: {w}" for w in self.warnings])

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _judge_means(batch: m.GradingBatch, judge: m.Grader, *, session: Session) -> dict[int, float]:
    """Per query of ``batch``: the judge's mean grade over the batch's pairs (its newest judgment of each), as
    a share of the scale's top grade. Refuses a batch the judge has not graded in full."""
    items = session.execute(select(m.BatchItem.query_id, m.BatchItem.document_id)
                            .where(m.BatchItem.batch_id == batch.id)).all()
    if not items:
        raise NdcgLabelingError(f"batch {batch.name!r} has no items to audit")
    j = m.Judgment
    graded = session.execute(
        select(j.query_id, j.document_id, j.grade).where(j.grader_id == judge.id, j.scale == batch.scale,
                                                          j.query_id.in_({q for q, _ in items}))
        .order_by(j.created_at, j.id)).all()
    newest = {(q, d): g for q, d, g in graded}  # the newest wins
    missing = [pair for pair in items if tuple(pair) not in newest]
    if missing:
        raise NdcgLabelingError(f"judge {judge.name!r} graded {len(items) - len(missing)} of the {len(items)} items of "
                                f"batch {batch.name!r}: an audit needs a batch the judge graded in full (run "
                                f"`ndcg-labeling judge run` first)")
    top = float(get_scale(batch.scale).max_grade)
    sums: dict[int, list[float]] = {}
    for q, d in items:
        sums.setdefault(q, []).append(newest[(q, d)] / top)
    return {q: float(np.mean(v)) for q, v in sums.items()}


def audit_strata(types: Sequence[str], judge_mean: np.ndarray, budget: int) -> np.ndarray:
    """Stratum labels ``TYPE|band b/B`` of each query: its type and its equal-count band of the judge's mean
    within the type; ``B`` (1 to 3) as many as the budget allows two audited queries per stratum."""
    kinds = sorted(set(types))
    type_arr = np.asarray(types, dtype=object)
    bands = max(1, min(MAX_BANDS, budget // (2 * len(kinds))))
    labels = np.empty(len(types), dtype=object)
    for kind in kinds:
        idx = np.flatnonzero(type_arr == kind)
        b = min(bands, max(1, idx.size // 2))
        ranks = np.argsort(np.argsort(judge_mean[idx], kind="stable"), kind="stable")
        band = ranks * b // idx.size
        for i, k in zip(idx, band, strict=True):
            labels[i] = f"{kind}|band {k + 1}/{b}"
    return labels


def create_audit(name: str, *, audit_of: str, judge: str, budget: int, overlap: int, graders: Sequence[str],
                 session: Session, seed: int | None = None, scale: str | None = None) -> AuditCreated:
    """Draw ``budget`` queries of batch ``audit_of`` (which ``judge`` graded in full) for people, stratified and
    allocated as the module docstring says; create the batch of every pooled pair of those queries (assigned as
    :func:`~ndcg_labeling.labels.tasks.create.create_batch` does) and record the draw in ``audit_samples``.

    Raises :class:`NdcgLabelingError` for a budget below 2 or above the batch's queries, a ``scale`` other than
    the batch's, or a batch the judge has not graded in full; :class:`~ndcg_labeling.errors.NotFoundError` for an unknown batch or judge.
    """
    import pandas as pd

    source = require_batch(audit_of, session=session)
    grader = require_grader(judge, session=session)
    if scale is not None and scale != source.scale:
        raise NdcgLabelingError(f"batch {audit_of!r} is graded on scale {source.scale}, not {scale}: its audit is too")
    means = _judge_means(source, grader, session=session)
    qids = np.array(sorted(means), dtype=np.int64)
    if not 2 <= budget <= qids.size:
        raise NdcgLabelingError(f"--budget must be between 2 and the {qids.size} queries of batch {audit_of!r}, "
                                f"got {budget}")
    type_of = dict(session.execute(select(m.Query.id, m.Query.query_type).where(m.Query.id.in_(qids.tolist()))).all())
    types = [type_of.get(int(q)) or UNTYPED for q in qids]
    judge_mean = np.array([means[int(q)] for q in qids])
    labels = audit_strata(types, judge_mean, budget)
    names = sorted(set(labels))
    sizes = np.array([int((labels == s).sum()) for s in names])
    spreads = np.array([float(np.sqrt(np.mean(judge_mean[labels == s] * (1 - judge_mean[labels == s]))))
                        for s in names])
    try:
        counts = audit_allocation(sizes, spreads, budget, minimum=2 if budget >= 2 * len(names) else 1)
    except ValueError as exc:
        raise NdcgLabelingError(str(exc).removeprefix("audit_allocation: ")) from None
    if seed is None:
        import secrets

        seed = secrets.randbelow(2**31)
    rng = np.random.default_rng([seed, 0xA0D17])
    drawn: list[tuple[int, str, int, float]] = []
    for s, size, count in zip(names, sizes, counts, strict=True):
        members = qids[labels == s]
        for q in rng.choice(members, int(count), replace=False):
            drawn.append((int(q), s, int(size), count / size))
    chosen = {q for q, *_ in drawn}
    items = session.execute(select(m.BatchItem.query_id, m.BatchItem.document_id)
                            .where(m.BatchItem.batch_id == source.id)).all()
    pool = pd.DataFrame([(q, d) for q, d in items if q in chosen], columns=["qid", "did"]).astype(np.int64)
    created = create_batch(name, scale=source.scale, depth=source.depth, overlap=overlap, graders=graders,
                           session=session, seed=seed, pool=pool)
    batch_id = session.execute(select(m.GradingBatch.id).where(m.GradingBatch.name == created.batch)).scalar_one()
    repo.bulk_insert(m.AuditSample, ["batch_id", "query_id", "source_batch_id", "judge_id", "stratum",
                                     "stratum_size", "inclusion"],
                     [(batch_id, q, source.id, grader.id, s, size, p) for q, s, size, p in drawn], session=session)
    strata = [AuditStratum(stratum=s, queries=int(size), audited=int(c), inclusion=float(c / size),
                           judge_mean=float(judge_mean[labels == s].mean()))
              for s, size, c in zip(names, sizes, counts, strict=True)]
    return AuditCreated(batch=created.batch, audit_of=source.name, judge=grader.name, budget=budget,
                        queries=int(qids.size), items=created.items, assignments=created.assignments, seed=seed,
                        strata=strata, warnings=created.warnings)


__all__ = ["AuditCreated", "audit_strata", "create_audit"]
