"""``report --estimator inferred --batch NAME``: infNDCG@k of each system from a batch made with
``tasks create --strategy sample``, with 95% intervals from the sampling (docs/budget.md).

The pool is rebuilt as the batch drew it: the stored rankings of the batch's systems to the batch's depth,
for the batch's queries. Each pair's grade is the mean of the batch's judgments of it; the graded pairs of a
stratum are taken as the sample (pairs chosen but not yet graded are assumed missing at random), so each
graded pair's inclusion probability is (graded in its stratum) / (pooled in its stratum).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.budget.estimators import difference_halfwidth, inferred_ndcg, plain_ndcg, system_means
from ndcg_labeling.budget.plan import expected_halfwidths
from ndcg_labeling.budget.pool import Pool
from ndcg_labeling.budget.strategies import inclusion_probabilities
from ndcg_labeling.db import models as m
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.pipeline.tasks.budgeted import batch_edges, batch_mean_grades, global_strata, stored_pool
from ndcg_labeling.pipeline.tasks.pooling import chosen_systems, depth_pool


@dataclass
class InferredRow:
    system: str
    inferred: float
    half_width: float
    plain: float
    diff: float | None
    diff_half_width: float | None


@dataclass
class InferredReport:
    """What :func:`inferred_report` found; ``header()`` is the line the CLI prints above the table."""

    batch: str
    metric: str
    judged: int
    pool_pairs: int
    queries: int
    baseline: str
    rows: list[InferredRow] = field(default_factory=list)

    def header(self) -> str:
        return (f"estimator: inferred ({self.metric}, Horvitz-Thompson over the stratified sample of batch "
                f"{self.batch}); {self.judged} of {self.pool_pairs} pooled pairs judged "
                f"({self.judged / max(self.pool_pairs, 1):.0%}), {self.queries} queries; 95% intervals reflect "
                f"the sampling only; diff = system - {self.baseline} (paired over the same sample)")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _batch_pool(batch_name: str, *, session: Session, need_sample: bool
                ) -> tuple[m.GradingBatch, list[str], Pool, list[int], np.ndarray]:
    """The batch, its systems (by name), the pool it was drawn from, its queries and each pair's mean grade."""
    batch = session.execute(select(m.GradingBatch).where(m.GradingBatch.name == batch_name)).scalar_one_or_none()
    if batch is None:
        raise NotFoundError(f"no batch {batch_name!r}")
    if need_sample and batch.strategy != "sample":
        raise NdcgLabelingError(f"the inferred estimator needs a batch made with `tasks create --strategy sample`; "
                                f"batch {batch_name!r} was made with {batch.strategy or 'depth pooling'}")
    names = sorted(batch.systems or [])
    ids = dict(session.execute(select(m.System.name, m.System.id).where(m.System.name.in_(names))).all())
    names = [n for n in names if n in ids]
    items = session.execute(select(m.BatchItem.query_id, m.BatchItem.document_id)
                            .where(m.BatchItem.batch_id == batch.id)).all()
    queries = sorted({q for q, _ in items})
    full = depth_pool(session=session, depth=batch.depth, system_ids=[ids[n] for n in names], query_types=[],
                      query_ids=[])
    full = full[full["qid"].isin(queries)]
    pool = stored_pool(session=session, depth=batch.depth, system_ids=[ids[n] for n in names],
                       pairs=set(zip(full["qid"].tolist(), full["did"].tolist(), strict=True)), query_ids=queries)
    mean_grade = batch_mean_grades(batch.name, session=session)
    grades = np.array([mean_grade.get((queries[int(q)], int(c)), np.nan)
                       for q, c in zip(pool.query, pool.code, strict=True)])
    return batch, names, pool, queries, grades


def inferred_report(batch_name: str, *, session: Session, k: int = 10, gain: str = "exponential") -> InferredReport:
    """infNDCG@``k`` of every system of the batch, the plain NDCG@k of the same grades (unjudged = 0), and
    each system's difference from the first system by name with its paired interval.

    Raises :class:`NotFoundError` for an unknown batch and :class:`NdcgLabelingError` for a batch not made
    with ``--strategy sample`` or with no graded pair yet.
    """
    batch, names, pool, queries, grades = _batch_pool(batch_name, session=session, need_sample=True)
    if k > batch.depth:
        raise NdcgLabelingError(f"ndcg@{k} needs a pool at least {k} deep; batch {batch_name!r} pooled to depth "
                                f"{batch.depth}")
    graded = ~np.isnan(grades)
    if not graded.any():
        raise NdcgLabelingError(f"batch {batch_name!r} has no graded pair yet")
    strata = global_strata(pool, queries, batch_edges(batch))
    est = inferred_ndcg(pool, grades, inclusion_probabilities(strata, graded), strata, k, gain=gain)
    means, half = system_means(est)
    plain = plain_ndcg(pool, grades, k, gain=gain).mean(axis=1)
    out = InferredReport(batch=batch_name, metric=f"ndcg@{k}", judged=int(graded.sum()), pool_pairs=pool.n_pairs,
                         queries=pool.n_queries, baseline=names[0])
    for s, name in enumerate(names):
        diff = None if s == 0 else float(means[s] - means[0])
        dhw = None if s == 0 else difference_halfwidth(est, s, 0)
        out.rows.append(InferredRow(system=name, inferred=float(means[s]), half_width=float(half[s]),
                                    plain=float(plain[s]), diff=diff, diff_half_width=dhw))
    return out


def plan_budget(budgets: list[int], *, session: Session, batch: str | None = None, depth: int = 20,
                systems: list[str] | None = None, repeats: int = 20, seed: int = 0) -> list[dict[str, Any]]:
    """``plan --budget``: for each number of judgments, the expected 95% half-width of each system's
    infNDCG@10 and of its difference from the first system by name (:func:`expected_halfwidths`). The pool
    is the batch's (its grades so far inform the simulation) or, without ``batch``, the top ``depth`` of the
    stored rankings of ``systems`` (all when None) with no grades (a uniform prior). A budget below two
    pairs per query gets no widths (None)."""
    if batch is not None:
        _, names, pool, _, grades = _batch_pool(batch, session=session, need_sample=False)
    else:
        all_systems, names = chosen_systems(systems, session=session)
        frame = depth_pool(session=session, depth=depth, system_ids=[all_systems[n] for n in names],
                           query_types=[], query_ids=[])
        if frame.empty:
            raise NdcgLabelingError(f"nothing to pool: no ranking entries with rank <= {depth}")
        queries = sorted(set(frame["qid"].tolist()))
        pool = stored_pool(session=session, depth=depth, system_ids=[all_systems[n] for n in names],
                           pairs=set(zip(frame["qid"].tolist(), frame["did"].tolist(), strict=True)),
                           query_ids=queries)
        grades = np.full(pool.n_pairs, np.nan)
    if pool.depth < 10:
        raise NdcgLabelingError(f"planning infNDCG@10 needs a pool at least 10 deep, got depth {pool.depth}")
    bad = [b for b in budgets if not 1 <= b <= pool.n_pairs]
    if bad:
        raise NdcgLabelingError(f"--budget must be between 1 and the {pool.n_pairs} pooled pairs, got {bad[0]}")
    # below two pairs per query a query's sample has no variance of its own and some queries none at all:
    # no width is given there rather than a falsely narrow one
    usable = [b for b in budgets if b >= 2 * pool.n_queries]
    if usable:
        per_system, per_diff = expected_halfwidths(pool, usable, grades, repeats=repeats, seed=seed)
    rows: list[dict[str, Any]] = []
    for b in budgets:
        i = usable.index(b) if b in usable else None
        for s, name in enumerate(names):
            rows.append({"budget": b, "share": round(b / pool.n_pairs, 4), "pool_pairs": pool.n_pairs,
                         "queries": pool.n_queries, "system": name,
                         "halfwidth": None if i is None else round(float(per_system[i, s]), 4),
                         "baseline": names[0],
                         "diff_halfwidth": None if i is None or s == 0 else round(float(per_diff[i, s]), 4)})
    return rows
