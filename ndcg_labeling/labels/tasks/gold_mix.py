"""Mixing gold items into a new batch (``tasks create --gold-rate R``), so that no grader can tell them
apart by their place, their sharing or their recurrence (docs/quality.md, "Mixing gold into a batch").

* each grader gets gold items at rate ``R`` of their assignments (:func:`gold_count`), each gold item
  goes to exactly ``overlap`` graders, gold items of the grader's own queries and unseen ones first
  (:func:`ndcg_labeling.quality.allocate_gold`);
* a gold item of a query the grader has no item of would form a one-document block: it is **padded**
  with other documents of its query (from the stored runs and judgments, :func:`_padding_docs`), given
  as ordinary items to the same graders, so that it sits in a block whose size is drawn from the
  batch's own block sizes (:func:`ndcg_labeling.quality.insert_blocks`);
* gold items go into gaps where an ordinary item could be (:func:`ndcg_labeling.quality.gold_gaps`:
  never two in a row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.quality import allocate_gold, block_sizes, gold_gaps, insert_blocks

MAX_GOLD_RATE = 0.5
_EMPTY = np.empty(0, dtype=np.int64)


@dataclass
class GoldMix:
    """The gold part of a new batch, from :func:`mix_gold`.

    ``position``: the new position of every ordinary assignment; ``gold_item_ids`` / ``gold_qid`` /
    ``gold_did``: the gold items used (one batch item each); ``gold_item``, ``gold_grader``,
    ``gold_position``: one entry per gold assignment (``gold_item`` indexes ``gold_item_ids``).
    ``pad_qid`` / ``pad_did``: the padding items (ordinary items added beside gold items of queries their
    graders have no other item of); ``pad_item``, ``pad_grader``, ``pad_position``: one entry per padding
    assignment (``pad_item`` indexes ``pad_qid``).
    ``short``: gold assignments fewer than the rate asks for; ``reused``: gold assignments of a gold item
    the grader had in an earlier batch; ``short_block``: gold assignments in a block smaller than drawn
    (their query has too few other documents to pad with).
    """

    position: NDArray[np.int64]
    gold_item_ids: list[int]
    gold_qid: list[int]
    gold_did: list[int]
    gold_item: NDArray[np.int64]
    gold_grader: NDArray[np.int64]
    gold_position: NDArray[np.int64]
    pad_qid: list[int] = field(default_factory=list)
    pad_did: list[int] = field(default_factory=list)
    pad_item: NDArray[np.int64] = field(default_factory=lambda: _EMPTY)
    pad_grader: NDArray[np.int64] = field(default_factory=lambda: _EMPTY)
    pad_position: NDArray[np.int64] = field(default_factory=lambda: _EMPTY)
    short: int = 0
    reused: int = 0
    short_block: int = 0

    @property
    def n_assignments(self) -> int:
        return int(self.gold_item.size)


def check_gold_rate(rate: float) -> None:
    if not 0.0 <= rate <= MAX_GOLD_RATE or rate != rate:
        raise NdcgLabelingError(f"gold rate must be between 0 and {MAX_GOLD_RATE} (a share of each grader's "
                                f"assignments; above {MAX_GOLD_RATE} two gold items would touch), got {rate}")


def gold_count(n_ordinary: int, rate: float, padding_per_gold: float = 0.0) -> int:
    """Gold items for a grader with ``n_ordinary`` items, so that gold / (gold + ordinary) ~ ``rate``;
    with ``padding_per_gold`` ordinary items added per gold item (:func:`_pad`), so that
    gold / (gold + ordinary + padding) ~ ``rate``. At most ``n_ordinary + 1`` (one per gap)."""
    if rate <= 0 or n_ordinary == 0:
        return 0
    rest = 1.0 - rate * (1.0 + padding_per_gold)
    if rest <= 0:
        return n_ordinary + 1
    return min(n_ordinary + 1, max(1, round(n_ordinary * rate / rest)))


def _candidates(*, session: Session, scale: str, pool_pairs: set[tuple[int, int]], query_types: Sequence[str],
                query_ids: Sequence[str]) -> list[tuple[int, int, int]]:
    stmt = (select(m.GoldItem.id, m.GoldItem.query_id, m.GoldItem.document_id).join(m.Query, m.Query.id == m.GoldItem.query_id)
            .where(m.GoldItem.scale == scale).order_by(m.GoldItem.id))
    if query_types:
        stmt = stmt.where(m.Query.query_type.in_(list(query_types)))
    if query_ids:
        stmt = stmt.where(m.Query.external_id.in_(list(query_ids)))
    gold = [(gid, qid, did) for gid, qid, did in session.execute(stmt) if (qid, did) not in pool_pairs]
    if not gold:
        limit = " of the batch's queries" if query_types or query_ids else ""
        raise NdcgLabelingError(f"--gold-rate needs gold items on scale {scale}{limit} that are not in the pool: "
                                f"import some with `ndcg-labeling gold import FILE --scale {scale}`")
    return gold


def _seen_before(gold_ids: list[int], grader_ids: Sequence[int], *, session: Session) -> NDArray[np.bool_]:
    """``(n_gold, n_graders)``: the grader had the gold item in an earlier batch."""
    index = {gid: k for k, gid in enumerate(gold_ids)}
    col = {gid: k for k, gid in enumerate(grader_ids)}
    out = np.zeros((len(gold_ids), len(grader_ids)), dtype=bool)
    if not col:
        return out
    for gold_id, grader_id in session.execute(
            select(m.BatchGoldItem.gold_item_id, m.Assignment.grader_id).distinct()
            .join(m.Assignment, m.Assignment.item_id == m.BatchGoldItem.item_id)
            .where(m.Assignment.grader_id.in_(list(col)))):
        if gold_id in index:
            out[index[gold_id], col[grader_id]] = True
    return out


def _padding_docs(queries: list[int], *, scale: str, overlap: int, exclude: set[tuple[int, int]],
                  session: Session) -> dict[int, list[int]]:
    """Per query, the documents a gold item of it may be padded with, best first: every document of the
    query in a stored run or a judgment, less the pairs in ``exclude`` (the pool) and the gold pairs of
    ``scale``; those judged by fewer than ``overlap`` people on ``scale`` first (the padding is graded
    like any item, so it adds what is missing), then by their best rank in any run, then by id."""
    if not queries:
        return {}
    re_, j = m.RankingEntry, m.Judgment
    best: dict[tuple[int, int], float] = {}
    for q, d, rank in session.execute(select(re_.query_id, re_.document_id, func.min(re_.rank))
                                      .where(re_.query_id.in_(queries)).group_by(re_.query_id, re_.document_id)):
        best[(q, d)] = float(rank)
    judged: dict[tuple[int, int], int] = {}
    for q, d, n in session.execute(
            select(j.query_id, j.document_id, func.count(j.grader_id.distinct()))
            .where(j.query_id.in_(queries), j.scale == scale,
                   j.grader_id.in_(select(m.Grader.id).where(m.Grader.kind == "human")))
            .group_by(j.query_id, j.document_id)):
        judged[(q, d)] = int(n)
    gold_pairs = {(q, d) for q, d in session.execute(select(m.GoldItem.query_id, m.GoldItem.document_id)
                                                     .where(m.GoldItem.scale == scale, m.GoldItem.query_id.in_(queries)))}
    out: dict[int, list[int]] = {q: [] for q in queries}
    pairs = sorted((set(best) | set(judged)) - exclude - gold_pairs,
                   key=lambda p: (judged.get(p, 0) >= overlap, best.get(p, float("inf")), p[1]))
    for q, d in pairs:
        out[q].append(d)
    return out


@dataclass
class _Padding:
    qid: list[int] = field(default_factory=list)
    did: list[int] = field(default_factory=list)
    graders: list[NDArray[np.int64]] = field(default_factory=list)  # per padding item, its graders
    short_block: int = 0


def _block_size_weights(sizes: NDArray[np.int64], rate: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The sizes a padded gold item's block may have and their probabilities, from ``sizes`` (the block
    size of every ordinary assignment: ``n_s`` items sit in blocks of size ``s``).

    A padded block of size ``s`` holds one gold item among ``s``. For the share of gold items to be the
    same (``rate``) in blocks of every size, padded blocks of size ``s`` must number ``b_s`` with
    ``b_s = rate·(n_s + s·b_s)``, so ``b_s ∝ n_s / (1 − rate·s)``; sizes with ``rate·s >= 1`` would need
    more than one gold item per block and get none (a large block is then slightly less often gold,
    which tells a grader nothing about the items that are).
    """
    values, counts = np.unique(sizes, return_counts=True)
    weights = np.where(rate * values < 1, counts / np.maximum(1 - rate * values, 1e-9), 0.0)
    if not weights.sum() > 0:
        return values, np.full(values.size, 1.0 / values.size) if values.size else weights
    return values, weights / weights.sum()


def _pad(alloc_gold: NDArray[np.int64], alloc_grader: NDArray[np.int64], lacks: NDArray[np.bool_],
         gold: list[tuple[int, int, int]], sizes: NDArray[np.int64], *, scale: str, overlap: int, rate: float,
         pool_pairs: set[tuple[int, int]], rng: np.random.Generator, session: Session) -> _Padding:
    """Padding for every gold item given to a grader who has no other item of its query (``lacks``, per
    gold assignment): a block size ``k`` (:func:`_block_size_weights`) and ``k - 1`` documents of its
    query (:func:`_padding_docs`), each given to all the gold item's graders (so each padding item, like
    every item, has ``overlap`` graders)."""
    out = _Padding()
    needy = np.unique(alloc_gold[lacks])
    if needy.size == 0:
        return out
    values, weights = _block_size_weights(sizes, rate)
    docs = _padding_docs(sorted({gold[g][1] for g in needy.tolist()}), scale=scale, overlap=overlap,
                         exclude=pool_pairs, session=session)
    for g in rng.permutation(needy).tolist():
        query = gold[g][1]
        want = int(rng.choice(values, p=weights)) - 1 if values.size else 0
        take, docs[query] = docs[query][:want], docs[query][want:]
        graders = alloc_grader[alloc_gold == g]
        if len(take) < want:
            out.short_block += int(lacks[alloc_gold == g].sum())
        out.qid += [query] * len(take)
        out.did += take
        out.graders += [graders] * len(take)
    return out


def mix_gold(*, session: Session, scale: str, rate: float, pool_pairs: set[tuple[int, int]],
             item_query: NDArray[np.int64], item: NDArray[np.int64], grader: NDArray[np.int64],
             position: NDArray[np.int64], n_graders: int, rng: np.random.Generator,
             query_types: Sequence[str] = (), query_ids: Sequence[str] = (), overlap: int = 1,
             grader_ids: Sequence[int] = ()) -> GoldMix:
    """Choose gold items for each grader and where they go in the grader's order.

    Gold items of ``scale`` whose (query, document) is not one of the batch's ordinary pairs are
    candidates (a batch limited to ``query_types`` / ``query_ids`` uses only gold items of those queries:
    another query type would stand out). Each grader should get :func:`gold_count` of them; they are
    given out by :func:`ndcg_labeling.quality.allocate_gold`: each gold item to exactly ``overlap``
    graders, gold items of the grader's own queries first (they sit in that query's block) and items
    the grader (``grader_ids``: their row ids) has not had in an earlier batch first. A gold item of a
    query a grader has no item of is padded (:func:`_pad`); the padding goes in as a block of its own
    (:func:`ndcg_labeling.quality.insert_blocks`) and the gold items by
    :func:`ndcg_labeling.quality.gold_gaps`.
    """
    gold = _candidates(session=session, scale=scale, pool_pairs=pool_pairs, query_types=query_types,
                       query_ids=query_ids)
    gold_q = np.array([g[1] for g in gold], dtype=np.int64)
    mine_of = [np.flatnonzero(grader == gr) for gr in range(n_graders)]
    mine_of = [mine[np.argsort(position[mine], kind="stable")] for mine in mine_of]
    wanted = np.array([gold_count(mine.size, rate) for mine in mine_of], dtype=np.int64)
    has_query = np.column_stack([np.isin(gold_q, item_query[item[mine]]) for mine in mine_of]) if n_graders else \
        np.zeros((len(gold), 0), dtype=bool)
    seen = _seen_before([g[0] for g in gold], list(grader_ids), session=session) if grader_ids else \
        np.zeros_like(has_query)
    sizes = np.concatenate([block_sizes(item_query[item[mine]]) for mine in mine_of] or [_EMPTY])

    def allocate(wanted: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64], _Padding]:
        alloc_gold, alloc_grader = allocate_gold(has_query, seen, wanted, min(overlap, n_graders), rng, gold_q)
        return alloc_gold, alloc_grader, _pad(alloc_gold, alloc_grader, ~has_query[alloc_gold, alloc_grader], gold,
                                              sizes, scale=scale, overlap=overlap, rate=rate, pool_pairs=pool_pairs,
                                              rng=rng, session=session)

    alloc_gold, alloc_grader, pad = allocate(wanted)
    if pad.qid:  # the padding is ordinary items too: ask again for the gold that keeps the rate (once)
        per_gold = sum(len(gs) for gs in pad.graders) / max(alloc_gold.size, 1)
        wanted = np.array([gold_count(mine.size, rate, per_gold) for mine in mine_of], dtype=np.int64)
        alloc_gold, alloc_grader, pad = allocate(wanted)
    pad_q = np.array(pad.qid, dtype=np.int64)
    pad_of = [np.array([k for k, gs in enumerate(pad.graders) if gr in gs], dtype=np.int64) for gr in range(n_graders)]
    new_position = position.copy()
    out: dict[str, list[NDArray[np.int64]]] = {k: [] for k in ("g_item", "g_grader", "g_pos", "p_item", "p_grader", "p_pos")}
    for gr, mine in enumerate(mine_of):
        chosen = rng.permutation(alloc_gold[alloc_grader == gr])
        if chosen.size == 0:
            continue
        old_pos, pad_pos = insert_blocks(item_query[item[mine]], pad_q[pad_of[gr]], rng)
        seq_q = np.empty(mine.size + pad_of[gr].size, dtype=np.int64)
        seq_q[old_pos], seq_q[pad_pos] = item_query[item[mine]], pad_q[pad_of[gr]]
        gaps = gold_gaps(seq_q, gold_q[chosen], rng)
        sorted_gaps = np.sort(gaps)
        # an item at i in the padded order moves down by the gold items in gaps 0..i; the gold item in
        # gap k (the r-th smallest gap) lands at k + r
        new_position[mine] = old_pos + np.searchsorted(sorted_gaps, old_pos, side="right")
        out["p_pos"].append(pad_pos + np.searchsorted(sorted_gaps, pad_pos, side="right"))
        out["p_item"].append(pad_of[gr])
        out["p_grader"].append(np.full(pad_of[gr].size, gr, dtype=np.int64))
        out["g_item"].append(chosen)
        out["g_grader"].append(np.full(chosen.size, gr, dtype=np.int64))
        out["g_pos"].append(gaps + np.searchsorted(sorted_gaps, gaps, side="left"))
    cat = {k: np.concatenate(v).astype(np.int64) if v else _EMPTY for k, v in out.items()}
    got = np.bincount(alloc_grader, minlength=n_graders)
    return GoldMix(position=new_position, gold_item_ids=[g[0] for g in gold], gold_qid=[g[1] for g in gold],
                   gold_did=[g[2] for g in gold], gold_item=cat["g_item"], gold_grader=cat["g_grader"],
                   gold_position=cat["g_pos"], pad_qid=pad.qid, pad_did=pad.did, pad_item=cat["p_item"],
                   pad_grader=cat["p_grader"], pad_position=cat["p_pos"],
                   short=int(np.maximum(wanted - got, 0).sum()), reused=int(seen[alloc_gold, alloc_grader].sum()),
                   short_block=pad.short_block)
