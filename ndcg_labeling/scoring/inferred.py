"""``report --estimator inferred --batch NAME``: infNDCG@k of each system from a batch made with
``tasks create --strategy sample``, with 95% intervals from the sampling (docs/budget.md).

The pool is rebuilt as the batch drew it (:func:`ndcg_labeling.labels.tasks.budgeted.batch_pool`): the
stored rankings of the batch's systems to the batch's depth, every query, less the pairs judged enough
before the batch. Each pair's grade is the mean of the batch's judgments of it; the graded pairs of a
stratum are taken as the sample (pairs chosen but not yet graded are assumed missing at random), so each
graded pair's inclusion probability is (graded in its stratum) / (pooled in its stratum). A stratum with no
graded pair yet cannot be estimated: its pairs drop out of the estimates, and the report says so in a
warning with how many strata, pairs and queries that is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.budget.estimators import (
    difference_halfwidth,
    inferred_ndcg,
    plain_ap,
    plain_ndcg,
    system_means,
)
from ndcg_labeling.budget.plan import expected_halfwidths
from ndcg_labeling.budget.pool import Pool
from ndcg_labeling.budget.strategies import inclusion_probabilities
from ndcg_labeling.budget.xinfap_intervals import xinfap_means
from ndcg_labeling.db import models as m
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.tasks.budgeted import (
    batch_edges,
    batch_mean_grades,
    batch_pool,
    global_strata,
    stored_pool,
)
from ndcg_labeling.labels.tasks.pooling import check_depth, chosen_systems, depth_pool


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
    warnings: list[str] = field(default_factory=list)
    method: str = "Horvitz-Thompson"

    def header(self) -> str:
        return (f"estimator: inferred ({self.metric}, {self.method} over the stratified sample of batch "
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
    names, queries, pool = batch_pool(batch, session=session)
    mean_grade = batch_mean_grades(batch.name, session=session)
    grades = np.array([mean_grade.get((queries[int(q)], int(c)), np.nan)
                       for q, c in zip(pool.query, pool.code, strict=True)])
    return batch, names, pool, queries, grades


def inferred_report(batch_name: str, *, session: Session, k: int | None = 10, gain: str = "exponential",
                    baseline: str | None = None, systems: list[str] | None = None, measure: str = "ndcg",
                    relevant: float = 1.0) -> InferredReport:
    """infNDCG@``k`` (``measure="ndcg"``) or xinfAP (``"map"``, each list read to rank ``k``, or to the
    batch's depth when ``k`` is None; a mean grade >= ``relevant`` is relevant) of every system of the batch
    (or of ``systems``), the plain value of the same grades (unjudged = 0), and each system's difference
    from ``baseline`` (default: the first system by name) with its paired interval.

    Raises :class:`NotFoundError` for an unknown batch or system and :class:`NdcgLabelingError` for a batch
    not made with ``--strategy sample``, with no graded pair yet, or a ``k`` outside 1 to its depth.
    """
    batch, names, pool, queries, grades = _batch_pool(batch_name, session=session, need_sample=True)
    if measure not in ("ndcg", "map") or (measure == "ndcg" and k is None):
        raise NdcgLabelingError(f"the inferred estimator estimates ndcg@K or map[@K], got {measure}")
    name = measure if k is None else f"{measure}@{k}"
    if k is not None and k < 1:
        raise NdcgLabelingError(f"{name}: the cut-off must be at least 1")
    if k is not None and k > batch.depth:
        raise NdcgLabelingError(f"{name} needs a pool at least {k} deep; batch {batch_name!r} pooled to depth "
                                f"{batch.depth}")
    for name in [*(systems or []), *([baseline] if baseline else [])]:
        if name not in names:
            raise NotFoundError(f"system {name!r} is not one of batch {batch_name!r}'s systems: {', '.join(names)}")
    graded = ~np.isnan(grades)
    if not graded.any():
        raise NdcgLabelingError(f"batch {batch_name!r} has no graded pair yet")
    strata = global_strata(pool, queries, batch_edges(batch))
    base = names.index(baseline) if baseline else 0
    out = InferredReport(batch=batch_name, metric=name, judged=int(graded.sum()), pool_pairs=pool.n_pairs,
                         queries=pool.n_queries, baseline=names[base], warnings=_unsampled(pool, strata, graded))
    cut = batch.depth if k is None else k  # k is None for map only
    pair_width: Callable[[int], float]  # the half-width of a system's difference from the baseline
    if measure == "map":
        ap = xinfap_means(pool, grades, strata, cut=cut, relevant=relevant)
        means, half, plain = ap.means, ap.half_widths(), plain_ap(pool, grades, cut=cut, relevant=relevant).mean(axis=1)
        pair_width = partial(ap.difference_half_width, b=base)
        out.method = "xinfAP, stratified jackknife intervals,"
        if ap.single:
            out.warnings.append(f"{ap.single} strata have a single graded pair: the jackknife cannot leave it "
                                f"out, so they add nothing to the intervals, which are that much too narrow")
    else:
        est = inferred_ndcg(pool, grades, inclusion_probabilities(strata, graded), strata, cut, gain=gain)
        means, half = system_means(est)
        plain = plain_ndcg(pool, grades, cut, gain=gain).mean(axis=1)
        pair_width = partial(difference_halfwidth, est, b=base)
    for s, system in enumerate(names):
        if systems and system not in systems:
            continue
        diff = None if s == base else float(means[s] - means[base])
        dhw = None if s == base else pair_width(s)
        out.rows.append(InferredRow(system=system, inferred=float(means[s]), half_width=float(half[s]),
                                    plain=float(plain[s]), diff=diff, diff_half_width=dhw))
    return out


def _unsampled(pool: Pool, strata: np.ndarray, graded: np.ndarray) -> list[str]:
    """The warning for strata with no graded pair (none when every stratum has one)."""
    labels, inverse = np.unique(strata, return_inverse=True)
    hit = np.bincount(inverse, weights=graded.astype(np.float64), minlength=labels.size)
    empty = hit[inverse] == 0
    if not empty.any():
        return []
    return [f"{int((hit == 0).sum())} of {labels.size} strata ({int(empty.sum())} of {pool.n_pairs} pooled pairs, in "
            f"{np.unique(pool.query[empty]).size} of {pool.n_queries} queries) have no graded pair yet: they drop "
            f"out of the estimates, which are biased until they are graded (grade the open items or `tasks "
            f"extend` the batch)"]


def plan_budget(budgets: list[int], *, session: Session, batch: str | None = None, depth: int = 20,
                systems: list[str] | None = None, repeats: int = 20, seed: int = 0,
                progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """``plan --budget``: for each number of judgments, the expected 95% half-width of each system's
    infNDCG@10 and of its difference from the first system by name: 1.96 standard deviations of the estimate
    over the samples of that budget (:func:`expected_halfwidths`). The pool is the batch's (its grades so
    far inform the simulation; a sampled batch's strata, fixed by its first round, are the design's, as
    ``tasks extend`` keeps them) or, without ``batch``, the top ``depth`` of the stored rankings of
    ``systems`` (all when None) with no grades (the consensus prior). A budget below two pairs per query
    gets no widths (None). ``progress`` is called with the number of samples simulated so far."""
    edges: tuple[int, ...] | None = None
    if batch is not None:
        made, names, pool, _, grades = _batch_pool(batch, session=session, need_sample=False)
        # tasks extend keeps the strata of a sampled batch's first round: the widths are those of that design
        # (a batch made otherwise only lends its pool and grades to a new sample, in the budget's own strata)
        edges = batch_edges(made) if made.strategy == "sample" else None
    else:
        check_depth(depth)
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
        per_system, per_diff = expected_halfwidths(pool, usable, grades, repeats=repeats, seed=seed,
                                                      edges=edges, progress=progress)
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
