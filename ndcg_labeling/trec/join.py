"""The run/qrels join behind ``eval``: run lines and judgments into ranked relevance lists.

trec_eval's rules (``form_res_rels.c``, ``trec_eval.c``):

* a query is evaluated when it has judgments and run lines; with ``complete`` (``-c``) every judged
  query is, one missing from the run with an empty list; output rows are in query-id byte order;
* a query's documents are ranked by score descending, equal scores by document id descending (byte
  order): :func:`trec_order`, the one owner of that rule; the rank column is ignored;
* ``max_docs`` (``-M``) keeps the first N ranked documents; the same document twice among them is an
  error; ``judged_only`` (``-J``) then drops documents without a judgment (label >= 0), keeping order;
* each ranked document gets its label, :data:`~ndcg_labeling.metrics._trec_kernels.NONPOOL` when the
  qrels do not name it, :data:`~ndcg_labeling.metrics._trec_kernels.UNJUDGED` when its label is
  negative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.metrics.trec_measures import NONPOOL, UNJUDGED, RankedLists
from ndcg_labeling.trec.files import QrelsColumns, RunColumns


@dataclass
class Options:
    """trec_eval's flags that shape the lists: ``-c``, ``-M``, ``-J``."""

    complete: bool = False
    max_docs: int | None = None
    judged_only: bool = False


@dataclass
class Joined:
    """The evaluated queries (byte order), their lists, which had no run lines (``-c``), the number of
    qrels queries and of positive judgments in the whole qrels (trec_eval's ``-c`` summaries), the
    run's tag."""

    query_ids: list[str]
    lists: RankedLists
    missing: npt.NDArray[np.bool_]
    n_qrels_queries: int
    n_positive_judgments: int
    run_id: str


def trec_order(doc_ids: Sequence[str], scores: Sequence[float]) -> list[int]:
    """Positions of one query's documents in trec_eval's ranking: score descending, then document id
    descending in byte order (UTF-8 byte order is code point order, Python's string order)."""
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__, reverse=True)
    order.sort(key=scores.__getitem__, reverse=True)  # stable: equal scores keep id order
    return order


def judgments_by_query(qrels: QrelsColumns, path: str) -> dict[str, dict[str, int]]:
    """``{query: {doc: label}}``; a document judged twice for a query is an error naming the line."""
    out: dict[str, dict[str, int]] = {}
    for q, d, rel, line in zip(qrels.query_id, qrels.doc_id, qrels.relevance, qrels.line, strict=True):
        docs = out.setdefault(q, {})
        if d in docs:
            raise InputFileError(path, f"document {d} appears twice for query {q} in the qrels", line)
        docs[d] = rel
    return out


def join(run: RunColumns, qrels: QrelsColumns, options: Options, *, run_path: str, qrels_path: str) -> Joined:
    """Ranked relevance lists of the evaluated queries (see the module docstring)."""
    judged = judgments_by_query(qrels, qrels_path)
    by_query: dict[str, list[int]] = {}
    for i, q in enumerate(run.query_id):
        by_query.setdefault(q, []).append(i)
    query_ids = sorted((q for q in judged if options.complete or q in by_query), key=lambda q: q.encode())
    if not query_ids:
        raise NdcgLabelingError(f"no query of {run_path} has relevance judgments in {qrels_path}")
    rows: list[list[float]] = []
    duplicates: list[tuple[int, str, str]] = []
    for q in query_ids:
        lines = by_query.get(q, [])
        docs = [run.doc_id[i] for i in lines]
        order = trec_order(docs, [run.score[i] for i in lines])
        if options.max_docs is not None:
            order = order[: options.max_docs]
        duplicates += _duplicates(q, sorted(lines[j] for j in order), run)
        labels = judged[q]
        row = [NONPOOL if (v := labels.get(docs[j])) is None else UNJUDGED if v < 0 else float(v) for j in order]
        if options.judged_only:
            row = [v for v in row if v >= 0]
        rows.append(row)
    if duplicates:
        line, doc, q = min(duplicates)
        raise InputFileError(run_path, f"document {doc} appears twice for query {q} in the run", line)
    width = max((len(r) for r in rows), default=0)
    rel = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        rel[i, : len(row)] = row
    num_ret = np.array([len(r) for r in rows], dtype=np.int64)
    levels = np.unique(np.array([v for q in query_ids for v in judged[q].values() if v >= 0], dtype=np.float64))
    counts = np.zeros((len(query_ids), len(levels)), dtype=np.int64)
    for i, q in enumerate(query_ids):
        values = np.array([v for v in judged[q].values() if v >= 0], dtype=np.float64)
        np.add.at(counts[i], np.searchsorted(levels, values), 1)
    missing = np.array([q not in by_query for q in query_ids], dtype=bool)
    n_pos = sum(1 for rel_ in qrels.relevance if rel_ > 0)
    return Joined(query_ids, RankedLists(rel, num_ret, levels, counts), missing, len(judged), n_pos, run.run_id)


def _duplicates(query: str, lines: list[int], run: RunColumns) -> list[tuple[int, str, str]]:
    """``(file line, doc, query)`` of the first repeated document of a query (lines in file order)."""
    seen: set[str] = set()
    for i in lines:
        d = run.doc_id[i]
        if d in seen:
            return [(run.line[i], d, query)]
        seen.add(d)
    return []
