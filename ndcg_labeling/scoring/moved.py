"""The queries that moved: per comparison with the baseline, the largest per-query gains and losses
on the headline metric, with the query text, both scores, and the documents that changed places in
the top k (title, label, rank in each system).

Only the handful of queries listed is read back from the database (texts and titles by row id).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db.reads import EffectiveLabelRows
from ndcg_labeling.scoring.caveats import top_k_positions
from ndcg_labeling.stats import TIE_EPS

Array = NDArray[Any]
#: the most documents listed per moved query (those highest in either list first)
MAX_DOCUMENTS = 10


def _pick(diff: Array, n: int) -> tuple[Array, Array]:
    """Row indices of the ``n`` largest gains (descending) and losses (most negative first)."""
    ok = np.flatnonzero(np.isfinite(diff))
    d = diff[ok]
    gains = ok[np.argsort(-d, kind="stable")]
    losses = ok[np.argsort(d, kind="stable")]
    return gains[diff[gains] > TIE_EPS][:n], losses[diff[losses] < -TIE_EPS][:n]


def _ranks(rank_rows: Array, pos: Array, system_id: int, query: int, k: int) -> dict[int, int]:
    sel = (rank_rows[:, 0] == system_id) & (rank_rows[:, 1] == query) & (pos < k)
    return {int(d): int(p) + 1 for d, p in zip(rank_rows[sel, 2], pos[sel], strict=True)}


def moved_queries(*, session: Session, metric_values: dict[str, Array], baseline: str, system_ids: dict[str, int],
                  scored_q: NDArray[np.int64], ext_ids: Array, qtypes: Array, rank_rows: NDArray[np.int64],
                  labels: EffectiveLabelRows, k: int, n_moved: int) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``{system: {"gains": [...], "losses": [...]}}`` for every system in ``metric_values`` but the
    baseline. ``metric_values[s]`` holds the headline metric per scored query (NaN: not scored). Each
    entry: ``query_id, query_type, text, baseline_value, value, diff, documents`` where ``documents``
    lists ``document_id, title, label, rank_baseline, rank_system`` (None: not in that top ``k``)."""
    base = metric_values[baseline]
    picks: dict[str, dict[str, Array]] = {}
    for s, v in metric_values.items():
        if s != baseline:
            gains, losses = _pick(v - base, n_moved)
            picks[s] = {"gains": gains, "losses": losses}
    rows_wanted = sorted({int(i) for p in picks.values() for idx in p.values() for i in idx})
    if not rows_wanted:
        return {s: {"gains": [], "losses": []} for s in picks}
    wanted_q = scored_q[rows_wanted]
    near = np.isin(rank_rows[:, 1], wanted_q)
    rr = rank_rows[near]
    pos = top_k_positions(rank_rows)[near]
    mine = np.isin(labels.query, wanted_q)  # the labels of the listed queries only
    label_of = dict(zip((labels.query[mine] * (1 << 31) + labels.document[mine]).tolist(), labels.value[mine].tolist(),
                        strict=True))
    found = session.execute(select(m.Query.id, m.Query.text).where(m.Query.id.in_(wanted_q.tolist())))
    texts: dict[int, str | None] = {int(i): t for i, t in found}
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    docs_needed: set[int] = set()
    for s, p in picks.items():
        out[s] = {}
        for kind, idx in p.items():
            entries = []
            for i in idx:
                q = int(scored_q[i])
                rb = _ranks(rr, pos, system_ids[baseline], q, k)
                rs = _ranks(rr, pos, system_ids[s], q, k)
                changed = [d for d in set(rb) | set(rs) if rb.get(d) != rs.get(d)]
                changed.sort(key=lambda d: (min(rb.get(d, k + 1), rs.get(d, k + 1)), d))
                docs = [{"document": d, "label": label_of.get(q * (1 << 31) + d), "rank_baseline": rb.get(d),
                         "rank_system": rs.get(d)} for d in changed[:MAX_DOCUMENTS]]
                docs_needed.update(changed[:MAX_DOCUMENTS])
                entries.append({"query_id": str(ext_ids[i]), "query_type": str(qtypes[i]), "text": texts.get(q),
                                "baseline_value": float(base[i]), "value": float(metric_values[s][i]),
                                "diff": float(metric_values[s][i] - base[i]), "documents": docs})
            out[s][kind] = entries
    _name_documents(session, out, docs_needed)
    return out


def _name_documents(session: Session, moved: dict[str, dict[str, list[dict[str, Any]]]], ids: set[int]) -> None:
    """Replace each listed document's row id by its external id and title (one SELECT)."""
    names: dict[int, tuple[str, str | None]] = {}
    id_list = sorted(ids)
    for start in range(0, len(id_list), 5000):
        chunk = id_list[start : start + 5000]
        for i, ext, title in session.execute(select(m.Document.id, m.Document.external_id, m.Document.title)
                                             .where(m.Document.id.in_(chunk))):
            names[int(i)] = (str(ext), title)
    for per_system in moved.values():
        for entries in per_system.values():
            for e in entries:
                for j, d in enumerate(e["documents"]):
                    ext, title = names.get(d["document"], ("?", None))
                    e["documents"][j] = {"document_id": ext, "title": title, "label": d["label"],
                                         "rank_baseline": d["rank_baseline"], "rank_system": d["rank_system"]}
