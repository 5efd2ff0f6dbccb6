"""The lead's adjudication in the web workspace: the queue of flagged items, one item as its graders saw
it with every grade and skip, and the decision with the version the lead saw.

The queue is :func:`~ndcg_labeling.labels.overview.flagged_items` (``adjudicate list``); a decision is
:func:`~ndcg_labeling.labels.consensus.set_adjudication` (``adjudicate set``), which owns the rule
that a decision made meanwhile by someone else is not silently overwritten. Nothing here decides a
rule of its own. Every function takes the session as a keyword argument and never commits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import InvalidGrade, NotFoundError
from ndcg_labeling.guidelines import scale_grades
from ndcg_labeling.labels.overview import flagged_items

if TYPE_CHECKING:
    from ndcg_labeling.labels.consensus import AdjudicationRecord


def _when(value: Any) -> str:
    return value.isoformat(sep=" ", timespec="minutes") if value is not None else ""


#: flagged items shown per page of the queue (a queue of thousands is read a page at a time)
QUEUE_PAGE_SIZE = 50


@dataclass
class QueuePage:
    """One page of the adjudication queue: its rows, the counts of the whole queue, where the page is."""

    rows: list[dict[str, Any]]
    total: int
    open: int
    page: int
    pages: int
    per_page: int
    first_open: tuple[str, str] | None  # the queue's first open item (query id, doc id), on any page

    @property
    def first_row(self) -> int:
        """The 1-based position of the page's first row in the queue (0 for an empty queue)."""
        return (self.page - 1) * self.per_page + 1 if self.rows else 0


def adjudication_page(batch: str | None, *, session: Session, page: int = 1) -> QueuePage:
    """Page ``page`` (from 1; past the end: the last page) of :func:`adjudication_queue`, in its order,
    :data:`QUEUE_PAGE_SIZE` rows a page."""
    per_page = QUEUE_PAGE_SIZE
    rows = flagged_items(session=session, batch=batch)
    pages = max(1, -(-len(rows) // per_page))
    page = min(max(1, page), pages)
    open_rows = [r for r in rows if r["adjudicated"] is None]
    first = (open_rows[0]["query_id"], open_rows[0]["doc_id"]) if open_rows else None
    shown = _with_texts(rows[(page - 1) * per_page: page * per_page], session=session)
    return QueuePage(shown, len(rows), len(open_rows), page, pages, per_page, first)


def adjudication_queue(batch: str | None, *, session: Session, offset: int = 0,
                       limit: int | None = None) -> list[dict[str, Any]]:
    """The items flagged for adjudication (``adjudicate list``; with ``batch``, the flagged items of its
    pairs, whichever consensus run flagged them), each with the query's text, the document's title,
    the note of the decision in force and its ``version`` (the adjudication's id, 0 for none).
    ``offset`` / ``limit``: only that slice of the queue, in its order (the texts are read for it alone)."""
    rows = flagged_items(session=session, batch=batch)
    return _with_texts(rows[offset:None if limit is None else offset + limit], session=session)


def _with_texts(rows: list[dict[str, Any]], *, session: Session) -> list[dict[str, Any]]:
    if not rows:
        return []
    queries = repo.external_id_map(m.Query, session=session, only={r["query_id"] for r in rows}, column=m.Query.text)
    titles = repo.external_id_map(m.Document, session=session, only={r["doc_id"] for r in rows},
                                  column=m.Document.title)
    latest = _latest_by_external(session=session)
    out = []
    for r in rows:
        adj = latest.get((r["query_id"], r["doc_id"]))
        out.append({**r, "query": queries.get(r["query_id"]) or "", "title": titles.get(r["doc_id"]) or "",
                    "note": adj.note if adj is not None else None,
                    "version": int(adj.id) if adj is not None else 0})
    return out


def _latest_by_external(*, session: Session) -> dict[tuple[str, str], Any]:
    adj = m.Adjudication
    rows = session.execute(select(m.Query.external_id, m.Document.external_id, adj.id, adj.note)
                           .join(m.Query, m.Query.id == adj.query_id)
                           .join(m.Document, m.Document.id == adj.document_id).order_by(adj.id)).all()
    return {(r[0], r[1]): r for r in rows}  # ids grow: the last row of a pair is the decision in force


@dataclass
class AdjudicationItem:
    """One flagged (query, document) as its graders saw it, with everything a lead decides from."""

    query_id: str
    doc_id: str
    query: str
    title: str
    url: str
    body: str
    scale: str
    grades: list[dict[str, Any]]  # the scale's grades: value, name, definition
    flag: dict[str, Any] | None  # the queue's row (consensus, reason, flagged_by, grades); None if not flagged
    judgments: list[dict[str, Any]] = field(default_factory=list)  # grader, grade, batch, when
    skips: list[dict[str, Any]] = field(default_factory=list)  # grader, reason, batch
    history: list[dict[str, Any]] = field(default_factory=list)  # newest first: grade, adjudicator, note, when
    version: int = 0  # the id of the adjudication in force (0: none): what a decision from this page saw
    next_open: tuple[str, str] | None = None  # the queue's next open item after this one


def adjudication_item(query_id: str, doc_id: str, *, session: Session, batch: str | None = None) -> AdjudicationItem:
    """The item page of the lead: query, title, URL, body; every grade with its grader and batch, every
    skip with its reason, the consensus and why it was flagged, the decisions so far (newest first)."""
    q = session.execute(select(m.Query).where(m.Query.external_id == query_id)).scalar_one_or_none()
    d = session.execute(select(m.Document).where(m.Document.external_id == doc_id)).scalar_one_or_none()
    if q is None or d is None:
        raise NotFoundError(f"no item ({query_id}, {doc_id})")
    queue = adjudication_queue(batch, session=session)
    flag = next((r for r in queue if (r["query_id"], r["doc_id"]) == (query_id, doc_id)), None)
    j = m.Judgment
    judgments: list[dict[str, Any]] = [{"grader": g, "grade": int(v), "batch": b or "", "scale": s, "when": _when(w),
                                        "kind": k}
                 for g, v, b, s, w, k in session.execute(
                     select(m.Grader.name, j.grade, j.batch, j.scale, j.created_at, m.Grader.kind)
                     .join(m.Grader, m.Grader.id == j.grader_id)
                     .where(j.query_id == q.id, j.document_id == d.id).order_by(m.Grader.name, j.id))]
    judgments.sort(key=lambda r: r["kind"] != "human")  # people's grades first, then models' and behavior's
    a = m.Assignment
    skips = [{"grader": g, "reason": r or "", "batch": b} for g, r, b in session.execute(
        select(m.Grader.name, a.skip_reason, m.GradingBatch.name)
        .join(m.Grader, m.Grader.id == a.grader_id).join(m.BatchItem, m.BatchItem.id == a.item_id)
        .join(m.GradingBatch, m.GradingBatch.id == a.batch_id)
        .where(m.BatchItem.query_id == q.id, m.BatchItem.document_id == d.id, a.status == "skipped")
        .order_by(m.Grader.name))]
    adj = m.Adjudication
    history: list[dict[str, Any]] = [{"grade": float(v), "adjudicator": who, "note": note or "", "when": _when(w), "version": int(i)}
               for i, v, who, note, w in session.execute(
                   select(adj.id, adj.grade, adj.adjudicator, adj.note, adj.created_at)
                   .where(adj.query_id == q.id, adj.document_id == d.id).order_by(adj.id.desc()))]
    label_scale = session.execute(select(m.ConsensusLabel.scale).where(
        m.ConsensusLabel.query_id == q.id, m.ConsensusLabel.document_id == d.id)).scalar()
    scale = str(label_scale or next((x["scale"] for x in judgments), None) or "0-3")
    grades, _ = scale_grades(scale)
    return AdjudicationItem(query_id, doc_id, q.text or "", d.title or "", d.url or "", d.body or "", scale,
                            grades, flag, judgments, skips, history, int(history[0]["version"]) if history else 0,
                            _next_open(queue, (query_id, doc_id)))


def _next_open(queue: list[dict[str, Any]], current: tuple[str, str]) -> tuple[str, str] | None:
    """The queue's first open item after ``current`` in (query, document) order, else its first other one."""
    keys = [k for r in queue if r["adjudicated"] is None and (k := (r["query_id"], r["doc_id"])) != current]
    return next((k for k in keys if k > current), keys[0] if keys else None)


@dataclass
class Decision:
    """What :func:`adjudicate` stored: the message (``adjudicate set``'s), the new version, the next open item."""

    message: str
    version: int
    next_open: tuple[str, str] | None
    #: the stored decision's fields, for a surface that words the message its own way (the web pages)
    record: AdjudicationRecord | None = None

    def as_dict(self) -> dict[str, Any]:
        nxt = None if self.next_open is None else {"query_id": self.next_open[0], "doc_id": self.next_open[1]}
        return {"message": self.message, "version": self.version, "next": nxt}


def adjudicate(query_id: str, doc_id: str, grade: Any, note: str | None, adjudicator: str, *, session: Session,
               version: int | None = None, confirm: bool = False, batch: str | None = None) -> Decision:
    """Record the lead's final grade of (query, document) with a note (``adjudicate set``), under the
    lead's name (``adjudicator``: the signed-in lead; the role check is the web's). ``version``: the adjudication the lead saw (see
    :func:`~ndcg_labeling.labels.consensus.set_adjudication`, which refuses a decision over another
    made meanwhile unless ``confirm``). The decision names the next open item of ``batch``'s queue."""
    from ndcg_labeling.labels.consensus import set_adjudication

    if isinstance(grade, bool):
        raise InvalidGrade(f"grade {grade!r} is not an integer")
    try:
        value = int(str(grade).strip())
    except ValueError:
        raise InvalidGrade(f"grade {grade!r} is not an integer") from None
    record = set_adjudication(query_id, doc_id, value, adjudicator=adjudicator, session=session,
                              note=(note or "").strip() or None, seen=version, confirm=confirm)
    return Decision(str(record), record.version, _next_open(flagged_items(session=session, batch=batch),
                                                            (query_id, doc_id)), record)
