"""File-level trec_eval: a qrels file and a run file in, per-query and mean measures out.

Follows trec_eval 10 (checked against its own test files, see tests/test_eval_cli.py):

* documents are ranked by score descending, equal scores by document id descending (byte order);
  the rank column is ignored;
* a query is evaluated when it is both in the run and in the qrels (any judgment, relevant or not);
  with ``complete`` (``-c``) every qrels query is, a query missing from the run scoring 0;
* the ideal DCG uses every judged document of the query, retrieved or not; gains are the labels
  (linear gain), negative labels ("in the pool, not judged") count as gain 0 and never as relevant;
* a document is relevant when its label is ``>= relevance_level`` (default 1);
* the same document twice in one query of the run (or of the qrels) is an error, as in trec_eval.

Measure names are trec_eval's: ``ndcg``, ``ndcg_cut.K``, ``map``, ``map_cut.K``, ``P.K``,
``recip_rank``, ``recall.K``; ``P.5,10`` is ``P.5`` and ``P.10``; a name without ``.K`` where
trec_eval needs cut-offs gets trec_eval's default ones (5,10,15,20,30,100,200,500,1000).
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from ndcg_labeling import _jit
from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.io.trec import read_trec_qrels_codes, read_trec_run_scores
from ndcg_labeling.metrics import compute_metrics, rank_order
from ndcg_labeling.metrics._kernels import warm_up as warm_up_kernels
from ndcg_labeling.metrics.registry import takes_fused_kernel
from ndcg_labeling.pipeline import _eval_join

DEFAULT_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
DEFAULT_MEASURES = ("map", "recip_rank", "P.10", "recall.10", "ndcg", "ndcg_cut.10")

# trec_eval measure -> (engine metric family, needs cut-offs), in trec_eval's output order.
_MEASURES: dict[str, tuple[str, bool]] = {
    "map": ("map", False),
    "recip_rank": ("mrr", False),
    "P": ("p", True),
    "recall": ("recall", True),
    "ndcg": ("ndcg", False),
    "ndcg_cut": ("ndcg", True),
    "map_cut": ("map", True),
}


@dataclass(frozen=True)
class Measure:
    """One output row name: ``trec_name`` as trec_eval prints it (``ndcg_cut_10``), ``metric`` ours."""

    trec_name: str
    metric: str


def parse_measures(specs: Sequence[str] | None) -> list[Measure]:
    """trec_eval ``-m`` values (``ndcg_cut.10``, ``P.5,10``, ``map``...) as measures.

    Ordered as trec_eval prints them, whatever the order given: by measure (map, recip_rank, P,
    recall, ndcg, ndcg_cut, map_cut), then cut-off ascending; duplicates dropped.
    """
    out: list[tuple[int, int, Measure]] = []
    rank = {name: i for i, name in enumerate(_MEASURES)}
    for spec in specs or DEFAULT_MEASURES:
        name, _, params = spec.strip().partition(".")
        if name not in _MEASURES:
            known = ", ".join(f"{m}.K" if cut else m for m, (_, cut) in _MEASURES.items())
            raise NdcgLabelingError(f"unknown measure {spec!r}; known measures: {known}")
        family, needs_cut = _MEASURES[name]
        if not needs_cut:
            if params:
                raise NdcgLabelingError(f"measure {name!r} takes no parameters, got {spec!r}")
            out.append((rank[name], 0, Measure(name, family)))
            continue
        cutoffs: list[int] = []
        for part in params.split(",") if params else [str(c) for c in DEFAULT_CUTOFFS]:
            try:
                value = float(part)
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and value >= 1 and value == int(value)):
                raise NdcgLabelingError(f"measure {spec!r}: cut-offs must be integers >= 1, got {part!r}")
            cutoffs.append(int(value))
        for c in cutoffs:
            out.append((rank[name], c, Measure(f"{name}_{c}", f"{family}@{c}")))
    seen: set[str] = set()
    unique = []
    for _, _, m in sorted(out, key=lambda item: (item[0], item[1])):
        if m.trec_name not in seen:
            seen.add(m.trec_name)
            unique.append(m)
    return unique


@dataclass
class EvalResult:
    """Per-query values (``values[i, j]``: query ``query_ids[i]``, measure ``measures[j]``) and means."""

    measures: list[Measure]
    query_ids: list[str]
    values: npt.NDArray[np.float64]
    means: npt.NDArray[np.float64] = field(init=False)

    def __post_init__(self) -> None:
        self.means = self.values.mean(axis=0) if len(self.query_ids) else np.zeros(len(self.measures))

    def rows(self, per_query: bool) -> list[tuple[str, str, float]]:
        """``(measure, query_id, value)`` rows: per query (query-major) when asked, then ``all``."""
        return list(zip(*self._columns(per_query), strict=True))

    def _columns(self, per_query: bool) -> tuple[list[str], list[str], list[float]]:
        """The rows of :meth:`rows` as three flat lists (no tuple per row: 100k queries print fast)."""
        names = [m.trec_name for m in self.measures]
        n = len(names)
        measure: list[str] = []
        query: list[str] = []
        value: list[float] = []
        if per_query:
            measure = names * len(self.query_ids)
            query = list(self.query_ids) if n == 1 else list(chain.from_iterable(repeat(q, n) for q in self.query_ids))
            value = self.values.ravel().tolist()  # row-major: query-major, measures in order
        return measure + names, query + ["all"] * n, value + self.means.tolist()

    def render(self, fmt: str, per_query: bool) -> str:
        """``trec`` (trec_eval's layout, 4 decimals), ``csv`` or ``json`` (full precision)."""
        measure, query, value = self._columns(per_query)
        if fmt == "trec":
            return "".join([f"{m:<22}\t{q}\t{v:.4f}\n" for m, q, v in zip(measure, query, value, strict=True)])
        if fmt == "csv":
            if any(_csv_field(q) != q for q in self.query_ids):
                query = [_csv_field(q) for q in query]
            lines = [f"{m},{q},{v!r}\n" for m, q, v in zip(measure, query, value, strict=True)]
            return "".join(["measure,query_id,value\n", *lines])
        if fmt == "json":
            return json.dumps([{"measure": m, "query_id": q, "value": v} for m, q, v in zip(measure, query, value, strict=True)],
                              indent=1) + "\n"
        raise NdcgLabelingError(f"unknown format {fmt!r}; known formats: trec, csv, json")


def _csv_field(text: str) -> str:
    if "," in text or '"' in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def evaluate_files(
    qrels_path: str | Path,
    run_path: str | Path,
    measures: Sequence[str] | None = None,
    *,
    complete: bool = False,
    relevance_level: int = 1,
) -> EvalResult:
    """Evaluate a TREC run against TREC qrels, as ``trec_eval -q [-c] -m ... qrels run``."""
    parsed = parse_measures(measures)
    # For a large run, numba's set-up and the loading of the compiled kernels (about a second)
    # overlap the reading; a small one is done sooner by the NumPy paths (see _jit.WORTH_COMPILING).
    warm = None
    if _jit.worth_compiling(_estimated_lines(run_path, qrels_path), count=False):
        fused_only = takes_fused_kernel(m.metric for m in parsed)
        warm = threading.Thread(target=_warm_up, args=(fused_only,), name="ndcg-labeling-warm-up", daemon=True)
        warm.start()
    qrels = read_trec_qrels_codes(qrels_path)
    run = read_trec_run_scores(run_path)
    if warm is not None:
        warm.join()
    return evaluate_frames(qrels, run, parsed, complete=complete, relevance_level=relevance_level,
                           qrels_path=str(qrels_path), run_path=str(run_path))


def _estimated_lines(*paths: str | Path) -> int:
    """Lines in the files, estimated from their sizes (a TREC run line is about 30 bytes)."""
    total = 0
    for path in paths:
        try:
            total += os.path.getsize(path) // 30
        except OSError:
            pass  # the reader reports it
    return total


def _warm_up(fused_only: bool) -> None:
    try:
        _eval_join.warm_up()
        warm_up_kernels(fused_only)
    except Exception:  # noqa: BLE001 - only a head start: a real problem shows again in the real call
        pass


def _codes(column: pd.Series) -> tuple[npt.NDArray[np.int32], pd.Index]:
    """Integer codes (int32: one type for the compiled join) and categories of an id column
    (categorical from the fast reader, or strings)."""
    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    return cat.cat.codes.to_numpy().astype(np.int32, copy=False), cat.cat.categories


def evaluate_frames(
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    measures: Sequence[Measure],
    *,
    complete: bool = False,
    relevance_level: int = 1,
    qrels_path: str = "qrels",
    run_path: str = "run",
) -> EvalResult:
    """:func:`evaluate_files` on already-read frames (columns as :mod:`ndcg_labeling.io.trec` gives).

    Steps: id columns to integer codes (categoricals); the run's lines grouped per query into a
    ``(queries, longest list)`` matrix in file order, each run document's label looked up among its
    query's judgments (one compiled pass, :mod:`ndcg_labeling.pipeline._eval_join`; pandas where
    numba is missing); rows whose ranking trec_eval would decide by document id (equal scores that
    matter for the cut-offs) re-ordered by id; then one call of
    :func:`ndcg_labeling.metrics.compute_metrics` with every judgment as ``ideal_labels``.
    """
    q_query, q_query_cats = _codes(qrels["query_id"])
    q_doc, q_doc_cats = _codes(qrels["doc_id"])
    r_query, r_query_cats = _codes(run["query_id"])
    r_doc, r_doc_cats = _codes(run["doc_id"])

    # Queries: qrels categories are the reference; run query -> qrels query (-1: not judged).
    run_to_qrels = q_query_cats.get_indexer(r_query_cats).astype(np.int64)
    in_qrels = np.bincount(q_query, minlength=len(q_query_cats)) > 0
    in_run = np.zeros(len(q_query_cats), dtype=bool)
    in_run[run_to_qrels[run_to_qrels >= 0]] = True
    evaluated = np.flatnonzero(in_qrels & (in_run | complete))
    # Output rows in trec_eval's order: query id, byte order.
    ids = [str(q_query_cats[c]) for c in evaluated]
    by_id = sorted(range(len(ids)), key=lambda i: ids[i].encode("utf-8"))
    evaluated, ids = evaluated[by_id].astype(np.int64), [ids[i] for i in by_id]
    row_of_qrels_query = np.full(len(q_query_cats), -1, dtype=np.int64)
    row_of_qrels_query[evaluated] = np.arange(len(evaluated))
    run_row = np.where(run_to_qrels >= 0, row_of_qrels_query[np.maximum(run_to_qrels, 0)], -1)
    run_doc_to_qrels_doc = q_doc_cats.get_indexer(r_doc_cats).astype(np.int64)
    # Labels: negative ("in the pool, not judged") -> gain 0, never relevant.
    rel = np.maximum(qrels["relevance"].to_numpy(dtype=np.float64), 0.0)
    score = run["score"].to_numpy(dtype=np.float64)

    args = (r_query, r_doc, score, len(r_query_cats), len(r_doc_cats), q_query, q_doc, rel, len(q_query_cats),
            len(q_doc_cats), run_row, run_to_qrels, run_doc_to_qrels_doc, evaluated)
    joined = _eval_join.join(*args) or _join_with_pandas(*args)
    if joined.duplicate_qrels_line >= 0:
        raise _duplicate_error(qrels_path, qrels, "qrels", joined.duplicate_qrels_line)
    if joined.duplicate_run_line >= 0:
        raise _duplicate_error(run_path, run, "run", joined.duplicate_run_line)
    if not len(evaluated):
        raise NdcgLabelingError(f"no query of {run_path} has relevance judgments in {qrels_path}")

    width = joined.scores.shape[1]
    _order_ties_by_doc_id(joined.scores, joined.labels, joined.docs, r_doc_cats, _k_needed(measures, width))
    values = compute_metrics(
        [m.metric for m in measures], joined.scores, joined.labels, ideal_labels=joined.ideal, gain="linear",
        relevant_threshold=float(relevance_level), empty="zero",
    )
    n_rows = len(evaluated)
    table = np.column_stack([values[m.metric] for m in measures]) if measures else np.zeros((n_rows, 0))
    return EvalResult(list(measures), ids, table)


def _join_with_pandas(
    r_query: npt.NDArray[np.int32], r_doc: npt.NDArray[np.int32], score: npt.NDArray[np.float64],
    n_run_queries: int, n_run_docs: int,
    q_query: npt.NDArray[np.int32], q_doc: npt.NDArray[np.int32], rel: npt.NDArray[np.float64],
    n_qrels_queries: int, n_qrels_docs: int,
    run_row: npt.NDArray[np.int64], run_to_qrels: npt.NDArray[np.int64],
    run_doc_to_qrels_doc: npt.NDArray[np.int64], evaluated: npt.NDArray[np.int64],
) -> _eval_join.Joined:
    """:func:`ndcg_labeling.pipeline._eval_join.join` with NumPy and pandas hashing (no numba)."""
    n_rows = len(evaluated)
    # int64 before multiplying: keys of (query, document) pairs overflow int32.
    q_q, q_d, r_q, r_d = (codes.astype(np.int64) for codes in (q_query, q_doc, r_query, r_doc))
    dup_q = _first_duplicate(q_q * max(n_qrels_docs, 1) + q_d)
    dup_r = _first_duplicate(r_q * max(n_run_docs, 1) + r_d)
    if dup_q >= 0 or dup_r >= 0:
        empty = np.full((n_rows, 1), np.nan)
        return _eval_join.Joined(empty, empty, np.full((n_rows, 1), -1, dtype=np.int64), empty, dup_r, dup_q)
    n_qdocs = max(n_qrels_docs, 1)
    q_key = pd.Index(q_q * n_qdocs + q_d)  # unique (checked above): a hash lookup
    rows, lines = _group_lines(r_q, run_row)
    counts = np.bincount(rows, minlength=n_rows)
    width = max(int(counts.max()) if len(counts) else 1, 1)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    cols = np.arange(len(rows)) - starts[rows]
    line_docs = r_d if lines is None else r_d[lines]
    doc_in_qrels = run_doc_to_qrels_doc[line_docs]
    found = q_key.get_indexer(evaluated[rows] * n_qdocs + doc_in_qrels)
    judged = (doc_in_qrels >= 0) & (found >= 0)
    scores = np.full((n_rows, width), np.nan)
    labels = np.full((n_rows, width), np.nan)
    docs = np.full((n_rows, width), -1, dtype=np.int64)
    scores[rows, cols] = score if lines is None else score[lines]
    labels[rows, cols] = np.where(judged, rel[found], np.nan)
    docs[rows, cols] = line_docs
    # Ideal labels: every judgment of each evaluated query.
    row_of_qrels_query = np.full(n_qrels_queries, -1, dtype=np.int64)
    row_of_qrels_query[evaluated] = np.arange(n_rows)
    q_rows = row_of_qrels_query[q_query]
    keep = np.flatnonzero(q_rows >= 0)
    keep = keep[np.argsort(q_rows[keep], kind="stable")]
    i_rows = q_rows[keep]
    i_counts = np.bincount(i_rows, minlength=n_rows)
    i_starts = np.concatenate(([0], np.cumsum(i_counts)[:-1]))
    ideal = np.full((n_rows, max(int(i_counts.max()) if len(i_counts) else 1, 1)), np.nan)
    ideal[i_rows, np.arange(len(keep)) - i_starts[i_rows]] = rel[keep]
    return _eval_join.Joined(scores, labels, docs, ideal, -1, -1)


def _group_lines(
    r_query: npt.NDArray[np.int64], q_row: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64] | None]:
    """Output row of each kept run line and the kept lines grouped by row, in file order per row.

    Returns ``(rows, lines)``; ``lines`` is None when every line is kept in file order already (a
    run whose queries are contiguous, in output order, all evaluated). Runs are usually written one
    query after the other, so blocks of lines are moved, not lines sorted.
    """
    n = len(r_query)
    change = np.flatnonzero(r_query[1:] != r_query[:-1]) + 1
    block_starts = np.concatenate(([0], change))
    block_query = r_query[block_starts]
    if len(np.unique(block_query)) == len(block_query):  # each query's lines are contiguous
        block_len = np.diff(np.concatenate((block_starts, [n])))
        block_row = q_row[block_query]
        if (block_row >= 0).all() and (np.diff(block_row) > 0).all():
            return np.repeat(block_row, block_len), None
        keep = np.flatnonzero(block_row >= 0)
        keep = keep[np.argsort(block_row[keep], kind="stable")]
        lens = block_len[keep]
        offsets = np.repeat(block_starts[keep] - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
        lines = np.arange(int(lens.sum())) + offsets
        return np.repeat(block_row[keep], lens), lines
    line_row = q_row[r_query]
    lines = np.flatnonzero(line_row >= 0)
    lines = lines[np.argsort(line_row[lines], kind="stable")]
    return line_row[lines], lines


def _k_needed(measures: Sequence[Measure], width: int) -> int:
    cuts = [m.metric.partition("@")[2] for m in measures]
    if any(c == "" for c in cuts):
        return width
    return min(max(int(c) for c in cuts), width)


def _order_ties_by_doc_id(
    scores: npt.NDArray[np.float64],
    labels: npt.NDArray[np.float64],
    docs: npt.NDArray[np.int64],
    doc_cats: pd.Index,
    k: int,
) -> None:
    """Make the matrices rank as trec_eval: equal scores by document id descending (byte order).

    The metric kernels keep equal scores in column (file) order. Only rows where that can change a
    top-``k`` result need fixing: equal adjacent scores inside the top ``k``, or the ``k``-th score
    also found below it. The cells of those rows are put in trec_eval's order (score descending,
    then document id descending), so that column order decides ties as trec_eval does. A run with
    distinct scores costs one ranking.
    """
    order = rank_order(scores, k)
    present = order >= 0
    ranked = np.where(present, np.take_along_axis(scores, np.maximum(order, 0), 1), np.nan)
    inside = (ranked[:, 1:] == ranked[:, :-1]).any(axis=1) if ranked.shape[1] > 1 else np.zeros(len(ranked), bool)
    kth = ranked[:, -1]
    with np.errstate(invalid="ignore"):
        boundary = (scores >= kth[:, None]).sum(axis=1) > present.sum(axis=1)
    fix = np.flatnonzero(inside | boundary)
    if not len(fix):
        return
    sub_scores, sub_labels, sub_docs = scores[fix], labels[fix], docs[fix]
    held = sub_docs >= 0
    # Byte order of the distinct document ids involved (UTF-8 byte order = code point order).
    codes, inverse = np.unique(sub_docs[held], return_inverse=True)
    names = [str(doc_cats[c]) for c in codes]
    by_name = np.empty(len(names), dtype=np.int64)
    by_name[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    doc_rank = np.full(sub_docs.shape, -1, dtype=np.int64)
    doc_rank[held] = by_name[inverse]
    row = np.broadcast_to(np.arange(len(fix))[:, None], sub_docs.shape)
    # Per row (the last key): documents before padding, score descending, id descending.
    new = np.lexsort((-doc_rank.ravel(), -sub_scores.ravel(), ~held.ravel(), row.ravel()))
    scores[fix] = sub_scores.ravel()[new].reshape(sub_scores.shape)
    labels[fix] = sub_labels.ravel()[new].reshape(sub_scores.shape)
    docs[fix] = sub_docs.ravel()[new].reshape(sub_scores.shape)


def _first_duplicate(keys: npt.NDArray[np.int64]) -> int:
    """Index of the first key that repeats an earlier one, -1 when all are distinct."""
    dup = pd.Series(keys).duplicated().to_numpy()
    return int(np.argmax(dup)) if dup.any() else -1


def _duplicate_error(path: str, frame: pd.DataFrame, what: str, row: int) -> InputFileError:
    return InputFileError(
        path,
        f"document {frame['doc_id'].iloc[row]!s} appears twice for query {frame['query_id'].iloc[row]!s} in the {what}",
        _line_of_row(path, row),
    )


def _line_of_row(path: str, row: int) -> int | None:
    """1-based file line of the ``row``-th non-blank line (the readers skip blank lines)."""
    try:
        with open(path, "rb") as fh:
            seen = -1
            for number, raw in enumerate(fh, start=1):
                if raw.strip():
                    seen += 1
                    if seen == row:
                        return number
    except OSError:
        return None
    return None
