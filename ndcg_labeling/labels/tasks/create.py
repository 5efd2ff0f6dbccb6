"""``tasks create``: pool (TREC-style, top-``depth`` of the chosen systems), leave out what is already
judged enough, assign to graders (:mod:`ndcg_labeling.assignment`) and store the batch."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.assignment import balanced_assignment, grader_orders
from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.db.locks import serialize
from ndcg_labeling.errors import ConflictError, NdcgLabelingError, NotFoundError
from ndcg_labeling.guidelines import load_guideline
from ndcg_labeling.labels.tasks.gold_mix import GoldMix, check_gold_rate, mix_gold
from ndcg_labeling.labels.tasks.pooling import (
    chosen_queries,
    chosen_systems,
    depth_pool,
    drop_judged,
    validate_names,
)
from ndcg_labeling.scales import Scale, get_scale

if TYPE_CHECKING:
    import pandas as pd

_GOLD_STREAM = 0x601D  # the gold draws' own generator: [seed, this], so ordinary draws stay as without gold


@dataclass
class BatchCreated:
    """What :func:`create_batch` did; ``str()`` is the summary the CLI prints."""

    batch: str
    scale: str
    depth: int
    overlap: int
    seed: int
    systems: list[str]
    graders: list[str]
    queries: int
    items: int
    assignments: int
    already_judged: int
    guideline_path: str
    guideline_version: str | None
    guideline_sha256: str
    gold_rate: float = 0.0
    gold_feedback: bool = False
    gold_assignments: int = 0
    gold_rate_achieved: float = 0.0  # gold assignments / all assignments
    gold_reused: int = 0  # gold assignments of a gold item the grader had in an earlier batch
    gold_padding: int = 0  # ordinary items added beside gold items of queries their graders have no other item of
    gold_short_block: int = 0  # gold assignments in a block smaller than drawn (too few documents to pad with)
    warnings: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = (f"batch {self.batch}: {self.items} items from {self.queries} queries (scale {self.scale}, "
                f"depth {self.depth}, systems {', '.join(self.systems)}), {self.assignments} assignments to "
                f"{len(self.graders)} graders (overlap {self.overlap}), seed {self.seed}")
        if self.already_judged:
            text += f"; {self.already_judged} pooled pairs left out (already judged {self.overlap} times)"
        if self.gold_rate:
            text += (f"; gold rate {self.gold_rate:g} asked, {self.gold_rate_achieved:.3f} achieved "
                     f"({self.gold_assignments} gold assignments, {self.gold_reused} reused from earlier batches"
                     f"{self._padding_text()})"
                     f"{' with feedback' if self.gold_feedback else ''}")
        text += f"; guideline {self.guideline_path} version {self.guideline_version or '?'}"
        return "\n".join([text] + [f"Warning: {w}" for w in self.warnings])

    def _padding_text(self) -> str:
        if not self.gold_padding:
            return ""
        return (f", {self.gold_padding} items of the gold items' own queries added so that those sit in "
                f"query blocks like any other")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def create_batch(name: str, *, scale: str, depth: int, overlap: int, graders: Sequence[str], session: Session,
                 systems: Sequence[str] | None = None, query_types: Sequence[str] | None = None,
                 query_ids: Sequence[str] | None = None, seed: int | None = None, gold_rate: float = 0.0,
                 gold_feedback: bool = False, pool: pd.DataFrame | None = None) -> BatchCreated:
    """Pool, assign and store a grading batch.

    Pooling (as in TREC): per query, the union of the top-``depth`` documents (rank <= depth) of the
    chosen ``systems`` (all systems when none is named), for the queries of the chosen
    ``query_types`` and/or ``query_ids`` (all queries when none). Pairs that already have ``overlap``
    judgments by distinct graders on ``scale`` (in any batch, or none) are left out, so a batch created
    after adding a system pools only what is new. Pairs with open assignments in another batch are
    not left out.

    Assignment: each item goes to ``overlap`` distinct graders, greedily to the least-loaded ones with
    random tie-breaks, so the busiest and the idlest grader differ by at most one item. Each grader's
    order is shuffled independently: queries in random order, documents within a query in random
    order. ``seed`` (random when None, and recorded) makes the pool order, the assignment and the
    orders reproducible; the item ids come from a cryptographic source, independent of the seed.

    ``gold_rate`` > 0 mixes gold items in (:func:`_add_gold`); ``gold_feedback``: graders may see the
    expected grade after one (:func:`ndcg_labeling.labels.gold.gold_feedback`).

    Raises :class:`NdcgLabelingError` for bad arguments, :class:`NotFoundError` for unknown graders,
    systems, query types or query ids, :class:`ConflictError` for an existing batch name.
    """
    name, scale_obj, grader_names = _check_arguments(name, scale=scale, depth=depth, overlap=overlap,
                                                     graders=graders, seed=seed)
    check_gold_rate(gold_rate)
    gmap = repo.grader_map(session=session)
    unknown = [g for g in grader_names if g not in gmap]
    if unknown:
        raise NotFoundError(f"unknown grader {unknown[0]!r}; add it with `ndcg-labeling graders add {unknown[0]}`")
    serialize("batch", name, session=session)  # two creates of one name: the second sees the first's batch
    if session.execute(select(m.GradingBatch.id).where(m.GradingBatch.name == name)).first() is not None:
        raise ConflictError(f"batch {name!r} already exists; choose another name")
    all_systems, system_names = chosen_systems(systems, session=session) if pool is None else ({}, [])
    type_names, qid_names = chosen_queries(query_types, query_ids, session=session)

    guideline = load_guideline(scale_obj.name)
    if pool is None:  # else given: --from-traffic
        pool = depth_pool(session=session, depth=depth, query_types=type_names,
                          system_ids=[all_systems[s] for s in system_names], query_ids=qid_names)
    n_pooled = len(pool)
    pool = drop_judged(pool, scale=scale_obj.name, overlap=overlap, session=session)
    if pool.empty:
        if n_pooled == 0:
            raise NdcgLabelingError(f"nothing to pool: no ranking entries with rank <= {depth} for systems "
                                    f"{', '.join(system_names)} and the chosen queries")
        raise NdcgLabelingError(f"nothing to grade: all {n_pooled} pooled pairs already have {overlap} judgments "
                                f"on scale {scale_obj.name}")

    if seed is None:
        seed = secrets.randbelow(2**31)
    rng = np.random.default_rng(seed)
    # The SQL order is not guaranteed: sort, then shuffle with the seed so that results are reproducible.
    pool = pool.sort_values(["qid", "did"], kind="stable").reset_index(drop=True)
    pool = pool.iloc[rng.permutation(len(pool))].reset_index(drop=True)
    n_items, grader_ids = len(pool), np.array([gmap[g] for g in grader_names], dtype=np.int64)
    chosen = balanced_assignment(n_items, len(grader_ids), overlap, rng)
    item, grader, position = grader_orders(pool["qid"].to_numpy(dtype=np.int64), chosen, rng)
    qids, dids = pool["qid"].tolist(), pool["did"].tolist()
    gold_of: list[int | None] = [None] * n_items
    item, grader, position, mix = _add_gold(qids, dids, gold_of, item, grader, position, scale=scale_obj.name,
                                            rate=gold_rate, grader_ids=grader_ids, seed=seed, session=session,
                                            queries=(type_names, qid_names), overlap=overlap)
    keys = item_keys(len(qids))  # one source for every item id, gold ones included

    batch = m.GradingBatch(name=name, scale=scale_obj.name, depth=depth, overlap=overlap, seed=seed,
                           systems=list(system_names), guideline_path=guideline.path,
                           guideline_version=guideline.version, guideline_sha256=guideline.sha256,
                           gold_rate=gold_rate, gold_feedback=gold_feedback)
    session.add(batch)
    session.flush()
    item_ids = _store_items(batch.id, keys, qids, dids, gold_of, seed=seed, session=session)
    n_assign = store_assignments(batch.id, item_ids[item], grader_ids[grader], position, session=session)
    return _gold_summary(BatchCreated(
        batch=name, scale=scale_obj.name, depth=depth, overlap=overlap, seed=seed, systems=list(system_names),
        graders=grader_names, queries=int(pool["qid"].nunique()), items=n_items, assignments=n_assign,
        already_judged=n_pooled - n_items, guideline_path=guideline.path, guideline_version=guideline.version,
        guideline_sha256=guideline.sha256, gold_rate=gold_rate, gold_feedback=gold_feedback), mix)


def _gold_summary(created: BatchCreated, mix: GoldMix | None) -> BatchCreated:
    """The gold rate achieved, reuse and give-aways, with a warning for each shortfall (in place)."""
    if mix is None:
        return created
    created.gold_assignments = mix.n_assignments
    created.gold_rate_achieved = round(mix.n_assignments / created.assignments, 4) if created.assignments else 0.0
    created.gold_reused, created.gold_short_block = mix.reused, mix.short_block
    created.gold_padding = len(mix.pad_qid)
    # a grader's count is rounded and each gold item goes to `overlap` graders: allow one per grader
    if mix.n_assignments + len(created.graders) < created.gold_rate * created.assignments:
        padding = (f"; the {mix.pad_item.size} assignments of items added beside gold items count as ordinary ones"
                   if mix.pad_item.size else "")
        created.warnings.append(
            f"gold rate {created.gold_rate_achieved:.3f} achieved, below the {created.gold_rate:g} asked: not enough "
            f"gold items (each goes to {created.overlap} graders, as every item){padding}; import more with "
            f"`ndcg-labeling gold import`")
    if mix.reused:
        created.warnings.append(f"{mix.reused} of {mix.n_assignments} gold assignments repeat a gold item the same "
                                f"grader had in an earlier batch")
    if mix.short_block:
        created.warnings.append(f"{mix.short_block} gold assignments sit in a query block smaller than the batch's "
                                f"blocks (a one-document block can give them away): their queries have too few "
                                f"other documents in the runs or judgments; import gold items for the batch's queries")
    return created


def _add_gold(qids: list[int], dids: list[int], gold_of: list[int | None], item: NDArray[np.int64],
              grader: NDArray[np.int64], position: NDArray[np.int64], *, scale: str, rate: float,
              grader_ids: NDArray[np.int64], seed: int, session: Session, overlap: int,
              queries: tuple[list[str], list[str]] = ([], [])
              ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], GoldMix | None]:
    """Mix gold items in (:func:`ndcg_labeling.labels.tasks.gold_mix.mix_gold`): the padding items and then the
    gold items used are appended to ``qids``, ``dids`` and ``gold_of`` (in place); returns the
    assignments' item, grader and position, and the mix (for the summary; None and nothing changed at
    rate 0)."""
    if rate <= 0:
        return item, grader, position, None
    n_items = len(qids)
    mix = mix_gold(session=session, scale=scale, rate=rate, pool_pairs=set(zip(qids, dids, strict=True)),
                   item_query=np.array(qids, dtype=np.int64), item=item, grader=grader, position=position,
                   n_graders=len(grader_ids), rng=np.random.default_rng([seed, _GOLD_STREAM]),
                   query_types=queries[0], query_ids=queries[1], overlap=overlap,
                   grader_ids=grader_ids.tolist())
    qids += mix.pad_qid
    dids += mix.pad_did
    gold_of += [None] * len(mix.pad_qid)
    n_padded = len(qids)
    used, gold_index = np.unique(mix.gold_item, return_inverse=True)
    qids += [mix.gold_qid[i] for i in used]
    dids += [mix.gold_did[i] for i in used]
    gold_of += [mix.gold_item_ids[i] for i in used]
    return (np.r_[item, n_items + mix.pad_item, n_padded + gold_index.ravel()].astype(np.int64),
            np.r_[grader, mix.pad_grader, mix.gold_grader].astype(np.int64),
            np.r_[mix.position, mix.pad_position, mix.gold_position].astype(np.int64), mix)


def store_assignments(batch_id: int, item_ids: NDArray[np.int64], grader_ids: NDArray[np.int64],
                       position: NDArray[np.int64], *, session: Session) -> int:
    """Insert the open assignments, by grader then position; returns their number."""
    order = np.lexsort((position, grader_ids))
    n = len(order)
    repo.bulk_insert(m.Assignment, ["batch_id", "item_id", "grader_id", "position", "status"],
                     zip([batch_id] * n, item_ids[order].tolist(), grader_ids[order].tolist(),
                         position[order].tolist(), ["open"] * n, strict=True), session=session)
    return n


def _store_items(batch_id: int, keys: list[str], qids: list[int], dids: list[int], gold_of: list[int | None], *,
                 seed: int, session: Session) -> NDArray[np.int64]:
    """Insert the batch items (and the gold marks) and return their row ids, in the order given.

    With gold items the rows go in in a random order, so that not even the row ids (which no grader
    sees) put the gold items last.
    """
    n = len(keys)
    order = np.arange(n)
    if any(g is not None for g in gold_of):
        order = np.random.default_rng([seed, _GOLD_STREAM, 1]).permutation(n)
    repo.bulk_insert(m.BatchItem, ["batch_id", "item_key", "query_id", "document_id"],
                     ((batch_id, keys[i], qids[i], dids[i]) for i in order.tolist()), session=session)
    key_to_id = dict(session.execute(select(m.BatchItem.item_key, m.BatchItem.id)
                                     .where(m.BatchItem.batch_id == batch_id)).all())
    item_ids = np.array([key_to_id[k] for k in keys], dtype=np.int64)
    marks = [(int(item_ids[i]), g) for i, g in enumerate(gold_of) if g is not None]
    if marks:
        repo.bulk_insert(m.BatchGoldItem, ["item_id", "gold_item_id"], marks, session=session)
    return item_ids


def _check_arguments(name: str, *, scale: str, depth: int, overlap: int, graders: Sequence[str],
                     seed: int | None) -> tuple[str, Scale, list[str]]:
    """The stripped batch name, the scale and the grader names, or an error naming the bad argument."""
    name = name.strip()
    if not name:
        raise NdcgLabelingError("empty batch name")
    if len(name) > 128:
        raise NdcgLabelingError(f"batch name is {len(name)} characters long; the limit is 128")
    try:
        scale_obj = get_scale(scale)
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    if depth < 1:
        raise NdcgLabelingError(f"depth must be at least 1, got {depth}")
    if overlap < 1:
        raise NdcgLabelingError(f"overlap must be at least 1, got {overlap}")
    grader_names = validate_names(graders, "grader")
    if not grader_names:
        raise NdcgLabelingError("no graders given")
    if overlap > len(grader_names):
        raise NdcgLabelingError(f"overlap {overlap} needs at least {overlap} graders, got {len(grader_names)} "
                                f"({', '.join(grader_names)})")
    if seed is not None and not 0 <= seed < 2**31:
        raise NdcgLabelingError(f"seed must be between 0 and {2**31 - 1}, got {seed}")
    return name, scale_obj, grader_names


def item_keys(n: int) -> list[str]:
    """``n`` distinct random 24-hex-digit item ids (96 bits each) from the operating system's
    cryptographic source (:mod:`secrets`).

    They do not depend on the batch's seed or name: the seed is printed and stored, and ids derived from
    it could be recomputed, and with them the pool order. The seed still governs the assignment and
    every grader's order, so those stay reproducible.
    """
    while True:
        raw = secrets.token_bytes(12 * n).hex()
        keys = [raw[i * 24 : (i + 1) * 24] for i in range(n)]
        if len(set(keys)) == n:  # 96 random bits: a collision is practically impossible
            return keys
