"""``tasks create --from-traffic``: pool the unjudged pairs users see most.

The logs are aggregated in place by the behavior log engine (impressions per (query, document),
weighted by ``0.5^(age / half-life)``); a pair is judged when it has a label in force (consensus or
adjudication); :func:`ndcg_labeling.online.traffic.pick_by_traffic` picks the pairs; the batch is
then created by :func:`ndcg_labeling.labels.tasks.create_batch` with this pool in place of the
systems' top-k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db.bulk import external_row_ids
from ndcg_labeling.engines import LogRequest, get_engine
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.online.traffic import judged_share, pick_by_traffic
from ndcg_labeling.sources.behavior import parse_duration

BY = ("pair", "query-type")


@dataclass
class TrafficPool:
    """The chosen pairs (row ids, created where new) and the judged share of impressions."""

    qid: list[int]
    did: list[int]
    n_pairs_seen: int
    n_unjudged: int
    share_before: float
    share_after: float
    half_life: str
    by: str

    def as_dict(self) -> dict[str, Any]:
        return {"pairs_seen": self.n_pairs_seen, "pairs_unjudged": self.n_unjudged, "pairs_pooled": len(self.qid),
                "judged_share_before": self.share_before, "judged_share_after": self.share_after,
                "half_life": self.half_life, "by": self.by}

    def __str__(self) -> str:
        return (f"from traffic: {len(self.qid)} of {self.n_unjudged} unjudged pairs ({self.n_pairs_seen} seen; "
                f"impressions halved every {self.half_life}); judged share of impressions {self.share_before:.1%} "
                f"now, {self.share_after:.1%} once this batch is graded")


def _labelled(session: Session) -> set[tuple[str, str]]:
    from ndcg_labeling.labels.consensus import effective_labels

    frame = effective_labels(session=session)
    return set(zip(frame["query_id"].astype(str), frame["doc_id"].astype(str), strict=True))


def traffic_pool(logs: list[str], *, budget: int, by: str = "pair", half_life: str = "14d",
                 session: Session) -> TrafficPool:
    """The pool of ``tasks create --from-traffic`` (see the module docstring)."""
    if by not in BY:
        raise NdcgLabelingError(f"--by: use {' or '.join(BY)}, got {by!r}")
    if budget < 1:
        raise NdcgLabelingError(f"--budget must be at least 1, got {budget}")
    agg = get_engine().aggregate(LogRequest(sources=tuple(logs), half_life_s=parse_duration(half_life)))
    cells = agg.cells
    weight = np.bincount(cells.pair, weights=cells.weight, minlength=cells.n_pairs).astype(np.float64)
    labelled = _labelled(session)
    judged = np.fromiter(((q, d) in labelled for q, d in zip(agg.query_ids, agg.doc_ids, strict=True)),
                         dtype=bool, count=cells.n_pairs)
    groups = None
    if by == "query-type":
        types = dict(session.execute(select(m.Query.external_id, m.Query.query_type)).tuples().all())
        names = sorted({str(types.get(q)) for q in agg.query_ids})
        code = {n: i for i, n in enumerate(names)}
        groups = np.asarray([code[str(types.get(q))] for q in agg.query_ids], dtype=np.int64)
    chosen = pick_by_traffic(weight, judged, budget, groups)
    after = judged.copy()
    after[chosen] = True
    q_ids, _ = external_row_ids(m.Query, [agg.query_ids[i] for i in chosen], session=session)
    d_ids, _ = external_row_ids(m.Document, [agg.doc_ids[i] for i in chosen], session=session)
    return TrafficPool([int(x) for x in q_ids], [int(x) for x in d_ids], cells.n_pairs,
                       int(np.sum(~judged & (weight > 0))), judged_share(weight, judged), judged_share(weight, after),
                       half_life, by)


def create_batch_from_traffic(name: str, logs: list[str], *, budget: int, by: str = "pair", half_life: str = "14d",
                              scale: str, overlap: int, graders: list[str], session: Session,
                              seed: int | None = None, gold_rate: float = 0.0,
                              gold_feedback: bool = False) -> tuple[Any, TrafficPool]:
    """Pool by traffic and create the batch in the caller's transaction: ``(BatchCreated, TrafficPool)``."""
    import pandas as pd

    from ndcg_labeling.labels.tasks import create_batch

    found = traffic_pool(logs, budget=budget, by=by, half_life=half_life, session=session)
    if not found.qid:
        raise NdcgLabelingError(f"nothing to pool: every pair seen in {', '.join(logs)} is judged")
    pool = pd.DataFrame({"qid": found.qid, "did": found.did}, dtype="int64")
    result = create_batch(name, scale=scale, depth=1, overlap=overlap, graders=graders, session=session, seed=seed,
                          gold_rate=gold_rate, gold_feedback=gold_feedback, pool=pool)
    return result, found
