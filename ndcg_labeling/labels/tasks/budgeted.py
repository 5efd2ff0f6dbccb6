"""``tasks create --strategy S --budget N`` and ``tasks extend``: batches that judge part of the depth-k pool,
chosen by a strategy of :mod:`ndcg_labeling.budget` (docs/budget.md), grown in rounds.

The strategy sees the pool (the stored rankings of the batch's systems, to the batch's depth) and, on
``extend``, the grades the batch already has (each item's mean grade over its judgments; items not graded
yet count as chosen, outcome unknown). Each round's items are assigned as ``tasks create`` assigns them, in
each grader's own random order after the items they already have, so graders never learn which strategy or
round chose an item. The design (round, stratum, inclusion probability) goes to ``batch_item_designs``.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ndcg_labeling.assignment import balanced_assignment, grader_orders
from ndcg_labeling.budget.pool import Pool, build_pool
from ndcg_labeling.budget.strategies import (
    DEFAULT_EDGES,
    STRATEGIES,
    design_edges,
    inclusion_probabilities,
    select_next,
    stratum_ids,
)
from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.tasks.create import BatchCreated, create_batch, item_keys, store_assignments
from ndcg_labeling.labels.tasks.pooling import check_depth, chosen_systems, depth_pool, drop_judged

# the most pairs one call may ask for: the batch's budget column is a 32-bit integer (PostgreSQL INTEGER);
# a budget is checked against this before anything is built, then against the pool's size
MAX_BUDGET = 2**31 - 1


def _check(strategy: str, budget: int | None) -> int:
    if strategy not in STRATEGIES:
        raise NdcgLabelingError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if budget is None:
        raise NdcgLabelingError(f"--strategy {strategy} needs --budget N: how many pairs of the pool to judge")
    if not 1 <= budget <= MAX_BUDGET:
        raise NdcgLabelingError(f"--budget must be a number of pairs between 1 and {MAX_BUDGET}, got {budget}")
    return budget


def _check_fits(budget: int, free: int, where: str) -> None:
    if budget > free:
        raise NdcgLabelingError(f"--budget must be between 1 and the {free} pooled pairs{where}, got {budget}")


def stored_pool(*, session: Session, depth: int, system_ids: list[int], pairs: set[tuple[int, int]],
          query_ids: list[int]) -> Pool:
    """The kernel's pool of the stored rankings: documents coded by their row id, those outside ``pairs``
    (already judged enough) left out."""
    re_ = m.RankingEntry
    rows = session.execute(select(re_.system_id, re_.query_id, re_.document_id, re_.rank)
                           .where(re_.rank <= depth, re_.system_id.in_(system_ids))).all()
    s_index = {s: i for i, s in enumerate(system_ids)}
    q_index = {q: i for i, q in enumerate(query_ids)}
    runs = np.full((len(system_ids), len(query_ids), depth), -1, dtype=np.int64)
    for sid, qid, did, rank in rows:
        if qid in q_index and (qid, did) in pairs:
            runs[s_index[sid], q_index[qid], rank - 1] = did
    # ranks left empty by a pair left out are closed up, so each list stays in its order
    for s in range(runs.shape[0]):
        for q in range(runs.shape[1]):
            kept = runs[s, q][runs[s, q] >= 0]
            runs[s, q] = -1
            runs[s, q, : kept.size] = kept
    return build_pool(runs, depth)


def _pool_of(*, session: Session, depth: int, system_ids: list[int], scale: str, overlap: int,
             batch: m.GradingBatch | None = None) -> tuple[list[int], Pool]:
    """The queries (row ids) and the pool a budgeted batch draws from: the stored rankings of its systems to
    its depth, every query, less the pairs already judged ``overlap`` times by people on ``scale``. For an
    existing ``batch`` the judgments counted are those made before it, outside it, and its own items are
    always in: the pool of its first round, whatever has been graded since."""
    full = depth_pool(session=session, depth=depth, system_ids=system_ids, query_types=[], query_ids=[])
    left = full
    if not full.empty:
        left = drop_judged(full, scale=scale, overlap=overlap, session=session,
                           before=None if batch is None else batch.created_at,
                           outside=None if batch is None else batch.name)
    pairs = set(zip(left["qid"].tolist(), left["did"].tolist(), strict=True))
    if batch is not None:
        pairs |= {(q, d) for q, d in session.execute(select(m.BatchItem.query_id, m.BatchItem.document_id)
                                                     .where(m.BatchItem.batch_id == batch.id)).all()}
    if not pairs:
        raise NdcgLabelingError(f"nothing to pool: no unjudged pair with rank <= {depth} for the chosen systems "
                                f"and queries")
    queries = sorted({q for q, _ in pairs})
    return queries, stored_pool(session=session, depth=depth, system_ids=system_ids, pairs=pairs, query_ids=queries)


def batch_pool(batch: m.GradingBatch, *, session: Session) -> tuple[list[str], list[int], Pool]:
    """The systems (names, sorted), the queries (row ids) and the pool of a budgeted batch, as
    ``tasks create`` drew its first round (:func:`_pool_of`): ``tasks extend``, ``report --estimator
    inferred`` and ``plan --batch`` all read this one pool."""
    names = sorted(batch.systems or [])
    ids = dict(session.execute(select(m.System.name, m.System.id).where(m.System.name.in_(names))).all())
    names = [n for n in names if n in ids]
    queries, pool = _pool_of(session=session, depth=batch.depth, system_ids=[ids[n] for n in names],
                             scale=batch.scale, overlap=batch.overlap, batch=batch)
    return names, queries, pool


def batch_mean_grades(batch_name: str, *, session: Session) -> dict[tuple[int, int], float]:
    """The mean grade of each (query, document) row-id pair graded in the batch so far."""
    return dict(((q, d), float(g)) for q, d, g in session.execute(
        select(m.Judgment.query_id, m.Judgment.document_id, func.avg(m.Judgment.grade))
        .where(m.Judgment.batch == batch_name).group_by(m.Judgment.query_id, m.Judgment.document_id)).all())


@dataclass
class BatchExtended:
    """What :func:`extend_batch` did; ``str()`` is the summary the CLI prints."""

    batch: str
    strategy: str
    round: int
    items: int
    assignments: int
    judged_so_far: int
    pool_pairs: int
    batch_items: int

    def __str__(self) -> str:
        return (f"batch {self.batch}: round {self.round} ({self.strategy}) added {self.items} items, "
                f"{self.assignments} assignments; {self.batch_items} of {self.pool_pairs} pooled pairs now in "
                f"the batch ({self.batch_items / max(self.pool_pairs, 1):.0%}); {self.judged_so_far} graded "
                f"before this round")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def create_budgeted(name: str, *, strategy: str, budget: int | None, scale: str, depth: int, overlap: int,
                    graders: Sequence[str], session: Session, systems: Sequence[str] | None = None,
                    query_types: Sequence[str] | None = None, query_ids: Sequence[str] | None = None,
                    seed: int | None = None, gold_rate: float = 0.0, gold_feedback: bool = False) -> BatchCreated:
    """Round 1 of a budgeted batch: ``budget`` pairs of the depth-``depth`` pool chosen by ``strategy``,
    then assigned and stored as :func:`create_batch` does. Pairs already judged ``overlap`` times are left
    out of the pool first (as ``tasks create`` does)."""
    budget = _check(strategy, budget)
    check_depth(depth)
    if query_types or query_ids:
        # tasks extend and report --estimator inferred rebuild the pool from what the batch records (its
        # systems, depth, scale and overlap); a query selection is not recorded, so it cannot be honoured
        raise NdcgLabelingError(f"--{'query-type' if query_types else 'query-id'} does not go with --strategy: a "
                                f"budgeted batch pools every query of its systems")
    all_systems, system_names = chosen_systems(systems, session=session)
    system_ids = [all_systems[s] for s in system_names]
    queries, pool = _pool_of(session=session, depth=depth, system_ids=system_ids, scale=scale, overlap=overlap)
    _check_fits(budget, pool.n_pairs, "")
    seed = secrets.randbelow(2**31) if seed is None else seed
    edges = design_edges(pool, budget)
    picks = select_next(pool, strategy, budget, np.full(pool.n_pairs, np.nan),
                        rng=np.random.default_rng([seed, 31]), edges=edges)
    import pandas as pd

    chosen = pd.DataFrame({"qid": [queries[q] for q in pool.query[picks]], "did": pool.code[picks]}).astype(np.int64)
    created = create_batch(name, scale=scale, depth=depth, overlap=overlap, graders=graders, session=session,
                           seed=seed, gold_rate=gold_rate, gold_feedback=gold_feedback, pool=chosen)
    batch = session.execute(select(m.GradingBatch).where(m.GradingBatch.name == created.batch)).scalar_one()
    batch.systems, batch.strategy, batch.budget = list(system_names), strategy, budget
    batch.strata_edges = list(edges) if strategy == "sample" else None
    created.systems = list(system_names)
    _store_design(batch.id, pool, queries, picks, 1, strategy, edges, session=session)
    if strategy == "sample" and budget < 2 * len(queries):
        created.warnings.append(f"a budget of {budget} gives some of the {len(queries)} queries fewer than two "
                                f"sampled pairs: their estimates and intervals are unreliable")
    if strategy == "sample" and edges != DEFAULT_EDGES:
        created.warnings.append(_coarse_strata(pool, budget, edges))
    created.warnings.append(f"strategy {strategy}: {len(picks)} of {pool.n_pairs} pooled pairs "
                            f"({len(picks) / pool.n_pairs:.0%}); grow the batch with `tasks extend {created.batch} "
                            f"--budget N`")
    return created


def _coarse_strata(pool: Pool, budget: int, edges: tuple[int, ...]) -> str:
    """The warning for a first round too small for the full sampling design: the first round fixes the
    strata and every later round keeps them, so the batch stays coarser than one created at its final size."""
    lo, hi = budget, pool.n_pairs  # the smallest budget that gets DEFAULT_EDGES (design_edges grows with it)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if design_edges(pool, mid) == DEFAULT_EDGES else (mid + 1, hi)
    # lo is the whole pool when even that is too small for the full design: then no size is named
    full = f"; a first round of at least {lo} pairs gets all {len(DEFAULT_EDGES)}" \
        if design_edges(pool, lo) == DEFAULT_EDGES else ""
    strata = "stratum" if len(edges) == 1 else "strata"
    return (f"a first round of {budget} pairs samples in {len(edges)} best-rank {strata} per query, not "
            f"{len(DEFAULT_EDGES)}, and `tasks extend` keeps them: a batch grown from it has wider intervals than "
            f"one created at its final size{full}")


def batch_edges(batch: m.GradingBatch) -> tuple[int, ...]:
    """The best-rank bands of a batch's strata (fixed by its first round)."""
    return tuple(batch.strata_edges) if batch.strata_edges else DEFAULT_EDGES


def global_strata(pool: Pool, queries: list[int], edges: tuple[int, ...]) -> np.ndarray:
    """(pairs,) the sampling stratum of each pair named by the query's row id and the rank band, so a
    stratum keeps its number whichever queries a later round's pool lists."""
    band = stratum_ids(pool, edges) % len(edges)
    return np.asarray(queries, dtype=np.int64)[pool.query] * len(edges) + band


def _store_design(batch_id: int, pool: Pool, queries: list[int], picks: np.ndarray, round_: int, strategy: str,
                  edges: tuple[int, ...], *, session: Session) -> None:
    """Insert the design rows of this round's items and, for ``sample``, bring every item's inclusion
    probability up to date (its stratum now holds more sampled pairs)."""
    item_of = {(q, d): i for i, q, d in session.execute(
        select(m.BatchItem.id, m.BatchItem.query_id, m.BatchItem.document_id)
        .where(m.BatchItem.batch_id == batch_id)).all()}
    strata = global_strata(pool, queries, edges)
    rows = [(item_of[(queries[int(pool.query[p])], int(pool.code[p]))], round_,
             int(strata[p]) if strategy == "sample" else None, None) for p in picks.tolist()]
    repo.bulk_insert(m.BatchItemDesign, ["item_id", "round", "stratum", "inclusion"], rows, session=session)
    if strategy != "sample":
        return
    pair_of = {(queries[int(q)], int(c)): p for p, (q, c) in enumerate(zip(pool.query, pool.code, strict=True))}
    in_batch = np.zeros(pool.n_pairs, dtype=bool)
    for key in item_of:
        if key in pair_of:
            in_batch[pair_of[key]] = True
    pi = inclusion_probabilities(strata, in_batch)
    for key, item_id in item_of.items():
        if key in pair_of:
            session.execute(update(m.BatchItemDesign).where(m.BatchItemDesign.item_id == item_id)
                            .values(inclusion=float(pi[pair_of[key]])))


def extend_batch(name: str, *, budget: int | None, session: Session) -> BatchExtended:
    """Grow a budgeted batch by ``budget`` pairs chosen by its strategy, seeing its grades so far."""
    batch = session.execute(select(m.GradingBatch).where(m.GradingBatch.name == name)).scalar_one_or_none()
    if batch is None:
        raise NotFoundError(f"no batch {name!r}")
    if batch.strategy is None:
        raise NdcgLabelingError(f"batch {name!r} was made by depth pooling without --strategy; only a batch made "
                                f"with `tasks create --strategy S --budget N` can be extended")
    budget = _check(batch.strategy, budget)
    _, queries, pool = batch_pool(batch, session=session)
    in_batch = {(q, d) for q, d in session.execute(select(m.BatchItem.query_id, m.BatchItem.document_id)
                                                   .where(m.BatchItem.batch_id == batch.id)).all()}
    keys = [(queries[int(q)], int(c)) for q, c in zip(pool.query, pool.code, strict=True)]
    free = sum(k not in in_batch for k in keys)
    if free == 0:
        raise NdcgLabelingError(f"batch {name!r} already holds every pooled pair")
    _check_fits(budget, free, f" not yet in batch {name!r}")
    mean_grade = batch_mean_grades(batch.name, session=session)
    grades = np.array([mean_grade.get(k, np.nan) for k in keys])
    pending = np.array([k in in_batch and k not in mean_grade for k in keys])
    round_ = 1 + int(session.execute(select(func.max(m.BatchItemDesign.round)).join(
        m.BatchItem, m.BatchItem.id == m.BatchItemDesign.item_id).where(m.BatchItem.batch_id == batch.id)
    ).scalar_one() or 0)
    picks = select_next(pool, batch.strategy, budget, grades, pending=pending,
                        rng=np.random.default_rng([batch.seed or 0, 31, round_]), edges=batch_edges(batch))
    if picks.size == 0:
        raise NdcgLabelingError(f"batch {name!r} already holds every pooled pair")
    n_assign = _add_items(batch, [keys[p] for p in picks.tolist()], round_, session=session)
    _store_design(batch.id, pool, queries, picks, round_, batch.strategy, batch_edges(batch), session=session)
    batch.budget = (batch.budget or 0) + budget
    return BatchExtended(batch=name, strategy=batch.strategy, round=round_, items=int(picks.size),
                         assignments=n_assign, judged_so_far=len(mean_grade), pool_pairs=pool.n_pairs,
                         batch_items=len(in_batch) + int(picks.size))


def _add_items(batch: m.GradingBatch, pairs: list[tuple[int, int]], round_: int, *, session: Session) -> int:
    """Store the new items and give each to ``overlap`` of the batch's graders, placed after what each grader
    already has, in each grader's own random order."""
    graders = sorted({g for (g,) in session.execute(select(m.Assignment.grader_id)
                                                    .where(m.Assignment.batch_id == batch.id))})
    if len(graders) < batch.overlap:
        raise NdcgLabelingError(f"batch {batch.name!r} has {len(graders)} graders, fewer than its overlap")
    keys = item_keys(len(pairs))
    repo.bulk_insert(m.BatchItem, ["batch_id", "item_key", "query_id", "document_id"],
                     ((batch.id, k, q, d) for k, (q, d) in zip(keys, pairs, strict=True)), session=session)
    key_to_id = dict(session.execute(select(m.BatchItem.item_key, m.BatchItem.id)
                                     .where(m.BatchItem.item_key.in_(keys))).all())
    item_ids = np.array([key_to_id[k] for k in keys], dtype=np.int64)
    rng = np.random.default_rng([batch.seed or 0, 31, round_, 1])
    chosen = balanced_assignment(len(pairs), len(graders), batch.overlap, rng)
    item, grader, position = grader_orders(np.array([q for q, _ in pairs], dtype=np.int64), chosen, rng)
    grader_ids = np.array(graders, dtype=np.int64)[grader]
    last = dict(session.execute(select(m.Assignment.grader_id, func.max(m.Assignment.position))
                                .where(m.Assignment.batch_id == batch.id).group_by(m.Assignment.grader_id)).all())
    offset = np.array([last.get(int(g), -1) + 1 for g in grader_ids], dtype=np.int64)
    return store_assignments(batch.id, item_ids[item], grader_ids, position + offset, session=session)
