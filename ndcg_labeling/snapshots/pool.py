"""``tasks create --from-snapshot S``: pool exactly the documents of a snapshot's top ``depth`` that have no
label in force (what ``snapshot diff`` lists as unjudged), and make the batch of them in the caller's
transaction, as ``tasks create`` does (pairs already judged ``overlap`` times are left out there too)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db.reads import effective_label_rows
from ndcg_labeling.db.search_models import SearchSnapshot
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.tasks import create_batch


@dataclass
class SnapshotPool:
    snapshot: str
    depth: int
    ranked_pairs: int
    unjudged_pairs: int

    def __str__(self) -> str:
        return (f"from snapshot {self.snapshot}: {self.unjudged_pairs} of its {self.ranked_pairs} top-{self.depth} "
                "pairs have no label in force and were pooled")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def unjudged_pool(snapshot: str, depth: int | None, *, session: Session) -> tuple[pd.DataFrame, SnapshotPool]:
    """``(qid, did)`` row ids of the snapshot's top-``depth`` pairs without a label in force; ``depth``
    None: the depth the snapshot was taken at."""
    found = session.execute(select(m.System.id, SearchSnapshot.depth).outerjoin(
        SearchSnapshot, SearchSnapshot.system_id == m.System.id).where(m.System.name == snapshot)).first()
    if found is None:
        raise NotFoundError(f"no snapshot named {snapshot!r} (see `snapshot list`)")
    system_id, taken_depth = found
    k = depth or taken_depth or 10
    if not 1 <= k <= 1000:
        raise NdcgLabelingError(f"--depth must be 1 to 1000, got {k}")
    ranked = np.array(session.execute(select(m.RankingEntry.query_id, m.RankingEntry.document_id).where(
        m.RankingEntry.system_id == system_id, m.RankingEntry.rank <= k)).all(), dtype=np.int64).reshape(-1, 2)
    labels = effective_label_rows(session=session)
    span = np.int64(1) << np.int64(31)
    keys = ranked[:, 0] * span + ranked[:, 1]
    unjudged = ranked[~np.isin(keys, labels.query * span + labels.document)]
    pool = pd.DataFrame({"qid": unjudged[:, 0], "did": unjudged[:, 1]}, dtype="int64")
    return pool, SnapshotPool(snapshot, k, len(ranked), len(unjudged))


def create_batch_from_snapshot(name: str, snapshot: str, *, depth: int | None, scale: str, overlap: int,
                               graders: list[str], session: Session, seed: int | None = None,
                               gold_rate: float = 0.0, gold_feedback: bool = False) -> tuple[Any, SnapshotPool]:
    """Pool a snapshot's unjudged pairs and create the batch: ``(BatchCreated, SnapshotPool)``."""
    pool, found = unjudged_pool(snapshot, depth, session=session)
    if pool.empty:
        raise NdcgLabelingError(f"nothing to pool: every pair of {snapshot}'s top {found.depth} has a label in force")
    result = create_batch(name, scale=scale, depth=found.depth, overlap=overlap, graders=graders, session=session,
                          seed=seed, gold_rate=gold_rate, gold_feedback=gold_feedback, pool=pool)
    return result, found
