"""Pooling shared by the batch-making use cases (``tasks create``, its ``--strategy`` rounds, ``tasks
extend``, ``report --inferred``, ``plan --budget``): the chosen systems and queries, checked to exist; the
TREC-style depth pool of the stored rankings; and the pairs already judged enough, left out."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.tasks._common import _IN_CHUNK

if TYPE_CHECKING:
    import pandas as pd

# the deepest pool: far beyond any judged depth in practice (TREC pools go to 100), and it bounds the
# (systems, queries, depth) arrays the strategies and estimators build
MAX_DEPTH = 1000


def check_depth(depth: int) -> int:
    """``depth`` if it is a pool depth (1 to :data:`MAX_DEPTH`), else an error naming ``--depth``."""
    if not 1 <= depth <= MAX_DEPTH:
        raise NdcgLabelingError(f"--depth must be a number of ranks between 1 and {MAX_DEPTH}, got {depth}")
    return depth


def validate_names(values: Sequence[str] | None, what: str) -> list[str]:
    """The names stripped, in the order given; an error for an empty one or one named twice (``what``: the
    kind of name, for the message)."""
    out: list[str] = []
    for raw in values or []:
        value = raw.strip()
        if not value:
            raise NdcgLabelingError(f"empty {what} name")
        if value in out:
            raise NdcgLabelingError(f"{what} {value!r} is named twice")
        out.append(value)
    return out


def chosen_systems(systems: Sequence[str] | None, *, session: Session) -> tuple[dict[str, int], list[str]]:
    """Every system (name -> id) and the names to pool from (all when none is named)."""
    all_systems = dict(session.execute(select(m.System.name, m.System.id).order_by(m.System.name)).all())
    system_names = validate_names(systems, "system")
    for s in system_names:
        if s not in all_systems:
            known = ", ".join(all_systems) or "(none: import a run first)"
            raise NotFoundError(f"unknown system {s!r}; known systems: {known}")
    if not system_names:
        system_names = list(all_systems)
    if not system_names:
        raise NdcgLabelingError("no systems to pool from: import a run first (`ndcg-labeling import run`)")
    return all_systems, system_names


def chosen_queries(query_types: Sequence[str] | None, query_ids: Sequence[str] | None, *,
                    session: Session) -> tuple[list[str], list[str]]:
    """The query types and query ids to pool, each checked to exist."""
    type_names = validate_names(query_types, "query type")
    if type_names:
        known_types = {v for v in session.execute(select(m.Query.query_type).distinct()).scalars() if v is not None}
        for t in type_names:
            if t not in known_types:
                raise NotFoundError(f"unknown query type {t!r}; known query types: {', '.join(sorted(known_types)) or '(none)'}")
    qid_names = validate_names(query_ids, "query id")
    if qid_names:
        qmap = repo.external_id_map(m.Query, session=session, only=qid_names)
        missing = [q for q in qid_names if q not in qmap]
        if missing:
            raise NotFoundError(f"unknown query id {missing[0]!r}")
    return type_names, qid_names


def depth_pool(*, session: Session, depth: int, system_ids: list[int], query_types: list[str],
          query_ids: list[str]) -> pd.DataFrame:
    """Distinct (qid, did) with rank <= depth in any of the systems, for the chosen queries."""
    re_ = m.RankingEntry
    stmt = (select(re_.query_id, re_.document_id).distinct()
            .where(re_.rank <= depth, re_.system_id.in_(system_ids)))
    if query_types or query_ids:
        stmt = stmt.join(m.Query, m.Query.id == re_.query_id)
        if query_types:
            stmt = stmt.where(m.Query.query_type.in_(query_types))
        if query_ids:
            stmt = stmt.where(m.Query.external_id.in_(query_ids))
    import pandas as pd

    rows = session.execute(stmt).all()
    return pd.DataFrame(rows, columns=["qid", "did"]).astype(np.int64)


def drop_judged(pool: pd.DataFrame, *, scale: str, overlap: int, session: Session, before: datetime | None = None,
                outside: str | None = None) -> pd.DataFrame:
    """The pool without the pairs already judged by ``overlap`` distinct human graders on ``scale``; with
    ``before`` and ``outside``, counting only judgments made before that time outside that batch (the pool a
    batch was drawn from, as it was when the batch was made)."""
    import pandas as pd

    if pool.empty:
        return pool
    j = m.Judgment
    # model graders' judgments (automatic judges) do not count: people grade what only a model judged
    stmt = (select(j.query_id, j.document_id).where(j.scale == scale)
            .where(j.grader_id.in_(select(m.Grader.id).where(m.Grader.kind == "human")))
            .group_by(j.query_id, j.document_id).having(func.count(j.grader_id.distinct()) >= overlap))
    if before is not None:
        stmt = stmt.where(j.created_at < before)
    if outside is not None:
        stmt = stmt.where(j.batch != outside)
    queries = pool["qid"].unique().tolist()
    frames = []
    if len(queries) <= _IN_CHUNK:
        frames.append(pd.DataFrame(session.execute(stmt.where(j.query_id.in_(queries))).all(),
                                   columns=["qid", "did"]))
    else:
        frames.append(pd.DataFrame(session.execute(stmt).all(), columns=["qid", "did"]))
    judged = pd.concat(frames).astype(np.int64)
    if judged.empty:
        return pool
    merged = pool.merge(judged.assign(_judged=True), on=["qid", "did"], how="left")
    return pool[merged["_judged"].isna().to_numpy()].reset_index(drop=True)
