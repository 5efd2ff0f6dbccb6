"""The database side of ``judge run``: the judge grader, its items in its own random order, the cache
of responses, and each answer stored with its judgment and provenance in a short transaction.

Every function takes the session as a keyword argument and never commits; :mod:`.judging` runs each
answer's :func:`store_outcome` in a transaction of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from ndcg_labeling.assignment import grader_orders
from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.labels import gold

MODEL = "model"
JUDGE_SOURCE = "(judge run)"
_IN_CHUNK = 5_000


@dataclass
class JudgeItem:
    """One open item of the judge: what the prompt is built from, and where its answer goes."""

    assignment_id: int
    item_id: int
    query_id: int
    document_id: int
    query: str
    title: str
    url: str
    body: str
    gold: bool


def judge_grader(name: str, *, session: Session) -> tuple[m.Grader, bool]:
    """The grader ``name`` of kind ``model``, added when it does not exist (then the flag is True); a
    human grader is refused."""
    grader = repo.grader_by_name(name, session=session)
    if grader is None:
        grader = m.Grader(name=name, kind=MODEL, role="grader", active=True)
        session.add(grader)
        session.flush()
        return grader, True
    if grader.kind != MODEL:
        raise NdcgLabelingError(f"grader {name!r} is of kind {grader.kind}; a judge needs a grader of kind model "
                                f"(choose a new name, or add it with `ndcg-labeling graders add {name} --kind model`)")
    return grader, False


def ensure_assignments(batch: m.GradingBatch, grader: m.Grader, *, session: Session) -> int:
    """Give the judge every ordinary (not gold) item of the batch, in its own random order (queries
    shuffled, documents within a query shuffled, reproducible from the batch's seed and the grader's
    id), unless it has items in the batch already. Returns the number of assignments added."""
    a = m.Assignment
    if session.execute(select(a.id).where(a.batch_id == batch.id, a.grader_id == grader.id).limit(1)).first():
        return 0
    bi = m.BatchItem
    rows = session.execute(select(bi.id, bi.query_id).where(
        bi.batch_id == batch.id, bi.id.not_in(select(m.BatchGoldItem.item_id))).order_by(bi.id)).all()
    if not rows:
        raise NdcgLabelingError(f"batch {batch.name!r} has no items to judge")
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    queries = np.array([r[1] for r in rows], dtype=np.int64)
    rng = np.random.default_rng([batch.seed or 0, grader.id])
    item, _grader, position = grader_orders(queries, np.zeros((len(ids), 1), dtype=np.int64), rng)
    start = session.scalar(select(func.coalesce(func.max(a.position) + 1, 0)).where(a.batch_id == batch.id,
                                                                                   a.grader_id == grader.id)) or 0
    session.add_all([a(batch_id=batch.id, item_id=int(ids[i]), grader_id=grader.id, position=int(start + p),
                       status="open") for i, p in zip(item.tolist(), position.tolist(), strict=True)])
    session.flush()
    return len(ids)


def open_items(batch: m.GradingBatch, grader: m.Grader, *, session: Session) -> tuple[list[JudgeItem], int, int]:
    """The judge's open items in its order, and how many of its items are done and skipped."""
    a, bi, q, d = m.Assignment, m.BatchItem, m.Query, m.Document
    stmt = (select(a.id, a.status, bi.id, q.id, d.id, q.text, q.external_id, d.title, d.url, d.body,
                   bi.id.in_(select(m.BatchGoldItem.item_id)))
            .join(bi, bi.id == a.item_id).join(q, q.id == bi.query_id).join(d, d.id == bi.document_id)
            .where(a.batch_id == batch.id, a.grader_id == grader.id).order_by(a.position))
    items, done, skipped = [], 0, 0
    for aid, status, iid, qid, did, text, ext, title, url, body, is_gold in session.execute(stmt):
        if status == "done":
            done += 1
        elif status == "skipped":
            skipped += 1
        else:
            items.append(JudgeItem(aid, iid, qid, did, text or ext, title or "", url or "", body or "", bool(is_gold)))
    return items, done, skipped


def cached(keys: Sequence[str], *, session: Session) -> dict[str, tuple[int, str, int | None]]:
    """``cache key -> (response id, status, grade)`` of the keys already answered."""
    r = m.JudgeResponse
    out: dict[str, tuple[int, str, int | None]] = {}
    for start in range(0, len(keys), _IN_CHUNK):
        chunk = list(keys[start:start + _IN_CHUNK])
        for key, rid, status, grade in session.execute(select(r.cache_key, r.id, r.status, r.grade)
                                                       .where(r.cache_key.in_(chunk))):
            out[key] = (rid, status, grade)
    return out


@dataclass
class Provenance:
    run_id: int | None
    model: str
    template_version: str
    template_sha256: str
    temperature: float
    base_url: str | None = None  # the endpoint (normalized base URL; never the key)


# What no database text column holds: NUL (PostgreSQL refuses it) and a lone surrogate (not UTF-8;
# a JSON answer can carry one as an escape, "\ud800").
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def storable_text(text: str) -> tuple[str, int]:
    """``text`` with each NUL and lone surrogate shown as U+FFFD, and how many there were. Only the raw
    answer of a skipped item can hold one: an answer that parses as a grade never does (neither is JSON
    white space, nor allowed in the one key), so no grade depends on this."""
    return _UNSTORABLE.subn("\ufffd", text)


def store_response(key: str, *, session: Session, run_id: int, model: str, base_url: str, prompt_sha256: str,
                   status: str, grade: int | None, raw: str, reason: str | None, tokens: tuple[int, int]) -> int:
    """Insert one answer into the cache (the first answer of a key wins); returns its id. A raw answer
    with characters no database holds is stored with them shown as U+FFFD, and the reason says so."""
    row = session.execute(select(m.JudgeResponse.id).where(m.JudgeResponse.cache_key == key)).scalar_one_or_none()
    if row is not None:
        return int(row)
    raw, replaced = storable_text(raw)
    if replaced:
        note = f"{replaced} NUL or unpaired surrogate characters of the raw answer are stored as U+FFFD"
        reason = f"{reason}; {note}" if reason else note
    resp = m.JudgeResponse(cache_key=key, run_id=run_id, model=model, base_url=base_url, prompt_sha256=prompt_sha256,
                           status=status, grade=grade, raw=raw, reason=reason, prompt_tokens=tokens[0],
                           completion_tokens=tokens[1], created_at=m.utcnow())
    session.add(resp)
    session.flush()
    return resp.id


def apply_answer(item: JudgeItem, *, session: Session, batch: m.GradingBatch, grader_id: int, response_id: int,
                 grade: int | None, reason: str | None, prompt_sha256: str, prov: Provenance) -> None:
    """The answer's effect on the item: a judgment with its provenance (a gold item: a gold answer), or
    the item marked skipped with the reason and the cached raw answer's id."""
    assignment = session.get(m.Assignment, item.assignment_id)
    if assignment is None or assignment.status != "open":
        return  # stored meanwhile (two runs at once): the first answer stands
    now = m.utcnow()
    assignment.updated_at = now
    if grade is None:
        assignment.status = "skipped"
        assignment.skip_reason = f"judge: {reason or 'no grade'} (raw answer: judge response {response_id})"[:2000]
        session.flush()
        return
    assignment.status = "done"
    if item.gold:
        gold.store_answer(assignment, grade, session=session, source_file=JUDGE_SOURCE)
        return
    judgment = m.Judgment(grader_id=grader_id, query_id=item.query_id, document_id=item.document_id, grade=grade,
                          scale=batch.scale, batch=batch.name, source_file=JUDGE_SOURCE, created_at=now)
    session.add(judgment)
    session.flush()
    session.add(m.JudgmentProvenance(judgment_id=judgment.id, run_id=prov.run_id, response_id=response_id,
                                     model=prov.model, prompt_sha256=prompt_sha256,
                                     template_version=prov.template_version, template_sha256=prov.template_sha256,
                                     temperature=prov.temperature, base_url=prov.base_url))
    session.flush()


def undo_start(run_id: int | None, *, session: Session, batch_id: int, grader_id: int, assignments: bool,
               grader: bool) -> bool:
    """Remove what a run stored before its first answer: its run row, and (when the run added them) the
    judge's assignments in the batch and the grader itself. Each is removed only while nothing refers to
    it (no answer stored, every assignment still open, no other run): a run going on at the same time
    keeps what it uses. True when everything asked for was removed."""
    a, r = m.Assignment, m.JudgeRun
    if run_id is not None:
        if session.scalar(select(func.count()).where(m.JudgeResponse.run_id == run_id)):
            return False
        session.execute(delete(r).where(r.id == run_id))
    if assignments:
        mine = (a.batch_id == batch_id) & (a.grader_id == grader_id)
        if (session.scalar(select(func.count()).where(mine, a.status != "open"))
                or session.scalar(select(func.count()).where(r.batch_id == batch_id, r.grader_id == grader_id))):
            return False
        session.execute(delete(a).where(mine))
    if grader:
        used = [session.scalar(select(func.count()).where(t.grader_id == grader_id))
                for t in (m.Assignment, m.Judgment, m.JudgeRun)]
        if any(used):
            return False
        session.execute(delete(m.Grader).where(m.Grader.id == grader_id))
    session.flush()
    return True


def run_usage(run_id: int, *, session: Session) -> tuple[int, int, int, int]:
    """``(graded, skipped, prompt tokens, completion tokens)`` of the answers stored by run ``run_id``."""
    r = m.JudgeResponse
    graded, skipped, p_tok, c_tok = session.execute(select(
        func.count(r.grade), func.count() - func.count(r.grade), func.coalesce(func.sum(r.prompt_tokens), 0),
        func.coalesce(func.sum(r.completion_tokens), 0)).where(r.run_id == run_id)).one()
    return int(graded), int(skipped), int(p_tok), int(c_tok)


def finish_run(run_id: int, *, session: Session, finished: bool, fields: dict[str, Any],
               prices: tuple[float | None, float | None]) -> tuple[int, int, float | None]:
    """Store a run's counts, token usage and cost (from the answers it stored); returns (prompt tokens,
    completion tokens, cost). ``finished=False`` leaves ``finished_at`` empty (interrupted)."""
    run = session.get(m.JudgeRun, run_id)
    if run is None:
        return 0, 0, None
    graded, skipped, p_tok, c_tok = run_usage(run_id, session=session)
    cost = None
    if prices[0] is not None or prices[1] is not None:
        cost = round(p_tok * (prices[0] or 0.0) / 1e6 + c_tok * (prices[1] or 0.0) / 1e6, 6)
    for name, value in fields.items():
        setattr(run, name, value)
    run.n_graded, run.n_skipped, run.prompt_tokens, run.completion_tokens, run.cost = graded, skipped, p_tok, c_tok, cost
    run.finished_at = m.utcnow() if finished else None
    session.flush()
    return p_tok, c_tok, cost
