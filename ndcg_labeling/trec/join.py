"""The run/qrels join behind ``eval``: run lines and judgments into ranked relevance lists.

trec_eval's rules (``form_res_rels.c``, ``trec_eval.c``):

* a query is evaluated when it has judgments and run lines; with ``complete`` (``-c``) every judged
  query is, one missing from the run with an empty list; output rows are in query-id byte order;
* a query's documents are ranked by score descending, equal scores by document id descending (byte
  order): :func:`trec_order`, the one statement of that rule (importers use it too); the rank column
  is ignored;
* ``max_docs`` (``-M``) keeps the first N ranked documents; the same document twice among them is an
  error; ``judged_only`` (``-J``) then drops documents without a judgment (label >= 0), keeping order;
* each ranked document gets its label, :data:`~ndcg_labeling.metrics.trec_measures.NONPOOL` when the
  qrels do not name it, :data:`~ndcg_labeling.metrics.trec_measures.UNJUDGED` when its label is
  negative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.metrics.trec_measures import NONPOOL, UNJUDGED, RankedLists, distinct, level_counts
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


def trec_order(query_ids: Sequence[str] | npt.ArrayLike, doc_ids: Sequence[str] | npt.ArrayLike,
               scores: Sequence[float] | npt.ArrayLike) -> npt.NDArray[np.int64]:
    """trec_eval's ranking of run lines, the one statement of the rule: the permutation that orders
    lines by query id, then score descending, then document id descending, ids in byte order
    (``np.unique`` sorts strings by code point, which is UTF-8 byte order). The rank column plays no
    part. (``_scan`` applies the same rule inside the compiled reader; tests hold the two equal.)"""
    _, q = np.unique(np.asarray(query_ids, dtype=str), return_inverse=True)
    _, d = np.unique(np.asarray(doc_ids, dtype=str), return_inverse=True)
    return _order(q.ravel(), d.ravel(), np.asarray(scores, dtype=np.float64))


def _order(query_codes: npt.NDArray[np.int64], doc_codes: npt.NDArray[np.int64],
           scores: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """:func:`trec_order` over codes that follow byte order."""
    return np.lexsort((-doc_codes, -scores, query_codes)).astype(np.int64)


def duplicate_error(path: str, doc: str, query: str, what: str, line: int) -> InputFileError:
    """The one message for a document listed twice for a query (``what``: ``qrels`` or ``run``), in
    every reader."""
    return InputFileError(path, f"document {doc} appears twice for query {query} in the {what}", line)


def evaluated_queries(judged: npt.NDArray[np.int64], run_codes: npt.NDArray[np.int64], n_codes: int,
                      options: Options, *, run_path: str, qrels_path: str
                      ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """trec_eval's evaluated queries, the one statement of the rule for every reader: the judged query
    codes that have run lines (every judged one with ``-c``), and which of the ``n_codes`` codes have
    run lines. :class:`NdcgLabelingError` when no query is evaluated."""
    in_run = np.zeros(n_codes, dtype=bool)
    in_run[run_codes] = True
    rows = judged if options.complete else judged[in_run[judged]]
    if not len(rows):
        raise NdcgLabelingError(f"no query of {run_path} has relevance judgments in {qrels_path}")
    return rows, in_run


def fill_lists(row: npt.NDArray[np.int64], pos: npt.NDArray[np.int64], label: npt.NDArray[np.float64],
               n_rows: int, judged_only: bool) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """``(rel, num_ret)``: each ranked document's label at its (``row``, ``pos``), rows in order, NaN
    past a list's end; with ``judged_only`` (``-J``) the documents without a judgment are dropped and
    the rest close up."""
    if judged_only:
        keep = label >= 0
        row, label = row[keep], label[keep]
        pos = positions(row, n_rows)
    num_ret = np.bincount(row, minlength=n_rows).astype(np.int64)
    rel = np.full((n_rows, int(num_ret.max()) if len(num_ret) else 0), np.nan)
    rel[row, pos] = label
    return rel, num_ret


def join(run: RunColumns, qrels: QrelsColumns, options: Options, *, run_path: str, qrels_path: str) -> Joined:
    """Ranked relevance lists of the evaluated queries (see the module docstring), with NumPy: ids to
    codes in byte order (``np.unique`` sorts strings by code point, which is UTF-8 byte order), one
    ``lexsort`` for trec_eval's ranking, a ``searchsorted`` for the labels."""
    nq = len(qrels.query_id)
    q_names, q_codes = np.unique(np.array(qrels.query_id + run.query_id), return_inverse=True)
    d_names, d_codes = np.unique(np.array(qrels.doc_id + run.doc_id), return_inverse=True)
    q_codes, d_codes = q_codes.astype(np.int64).ravel(), d_codes.astype(np.int64).ravel()
    nd = max(len(d_names), 1)
    qkey = q_codes[:nq] * nd + d_codes[:nq]
    dup = _first_repeat(qkey)
    if dup >= 0:
        raise duplicate_error(qrels_path, qrels.doc_id[dup], qrels.query_id[dup], "qrels", qrels.line[dup])
    rq, rd = q_codes[nq:], d_codes[nq:]
    judged = distinct(q_codes[:nq])
    rows, in_run = evaluated_queries(judged, rq, len(q_names), options, run_path=run_path, qrels_path=qrels_path)
    row_of = np.full(len(q_names), -1, dtype=np.int64)
    row_of[rows] = np.arange(len(rows))
    order = _order(rq, rd, np.asarray(run.score, dtype=np.float64))
    order = order[row_of[rq[order]] >= 0]
    row = row_of[rq[order]]
    pos = positions(row, len(rows))
    if options.max_docs is not None:
        order, row, pos = order[pos < options.max_docs], row[pos < options.max_docs], pos[pos < options.max_docs]
    dup = _first_repeat(rq[np.sort(order)] * nd + rd[np.sort(order)], np.sort(order))
    if dup >= 0:
        raise duplicate_error(run_path, run.doc_id[dup], run.query_id[dup], "run", run.line[dup])
    by_key = np.argsort(qkey)
    key = rq[order] * nd + rd[order]
    at = np.clip(np.searchsorted(qkey[by_key], key), 0, max(nq - 1, 0))
    found = qkey[by_key][at] == key
    labels_q = np.asarray(qrels.relevance, dtype=np.float64)
    label = np.where(found, labels_q[by_key][at], NONPOOL)
    label = np.where(found & (label < 0), UNJUDGED, label)
    rel, num_ret = fill_lists(row, pos, label, len(rows), options.judged_only)
    levels, counts = level_counts(row_of[q_codes[:nq]], labels_q, len(rows))
    return Joined([str(q_names[c]) for c in rows], RankedLists(rel, num_ret, levels, counts), ~in_run[rows],
                  len(judged), int((labels_q > 0).sum()), run.run_id)


def positions(row: npt.NDArray[np.int64], n_rows: int) -> npt.NDArray[np.int64]:
    """0-based position of each element within its row (rows given in non-decreasing order)."""
    counts = np.bincount(row, minlength=n_rows)
    starts = np.cumsum(counts) - counts
    return np.arange(len(row), dtype=np.int64) - starts[row]


def _first_repeat(keys: npt.NDArray[np.int64], index: npt.NDArray[np.int64] | None = None) -> int:
    """The line (``index[i]``, default ``i``) of the first key in file order that repeats an earlier one;
    -1 when all differ. ``keys`` are in file order."""
    if len(keys) < 2:
        return -1
    order = np.argsort(keys, kind="stable")
    repeat = np.flatnonzero(keys[order][1:] == keys[order][:-1]) + 1
    if not len(repeat):
        return -1
    first = int(order[repeat].min())
    return int(index[first]) if index is not None else first
