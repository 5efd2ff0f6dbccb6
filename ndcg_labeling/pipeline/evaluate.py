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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.io.trec import read_trec_qrels_codes, read_trec_run_scores
from ndcg_labeling.metrics import compute_metrics, rank_order

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
        rows: list[tuple[str, str, float]] = []
        names = [m.trec_name for m in self.measures]
        if per_query:
            for qid, row in zip(self.query_ids, self.values.tolist(), strict=True):
                rows.extend((name, qid, v) for name, v in zip(names, row, strict=True))
        rows.extend((name, "all", float(v)) for name, v in zip(names, self.means.tolist(), strict=True))
        return rows

    def render(self, fmt: str, per_query: bool) -> str:
        """``trec`` (trec_eval's layout, 4 decimals), ``csv`` or ``json`` (full precision)."""
        rows = self.rows(per_query)
        if fmt == "trec":
            return "".join(f"{name:<22}\t{qid}\t{value:.4f}\n" for name, qid, value in rows)
        if fmt == "csv":
            lines = ["measure,query_id,value"]
            lines += [f"{name},{_csv_field(qid)},{value!r}" for name, qid, value in rows]
            return "\n".join(lines) + "\n"
        if fmt == "json":
            return json.dumps([{"measure": n, "query_id": q, "value": v} for n, q, v in rows], indent=1) + "\n"
        raise NdcgLabelingError(f"unknown format {fmt!r}; known formats: trec, csv, json")


def _csv_field(text: str) -> str:
    if any(ch in text for ch in ',"\n'):
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
    qrels = read_trec_qrels_codes(qrels_path)
    run = read_trec_run_scores(run_path)
    return evaluate_frames(qrels, run, parsed, complete=complete, relevance_level=relevance_level,
                           qrels_path=str(qrels_path), run_path=str(run_path))


def _codes(column: pd.Series) -> tuple[npt.NDArray[np.int64], pd.Index]:
    """Integer codes and categories of an id column (categorical from the fast reader, or strings)."""
    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    return cat.cat.codes.to_numpy().astype(np.int64), cat.cat.categories


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
    ``(queries, longest list)`` matrix in file order; each run document's label looked up by a
    binary search over the qrels' (query, document) codes; rows whose ranking trec_eval would decide
    by document id (equal scores that matter for the cut-offs) re-ordered by id; then one call of
    :func:`ndcg_labeling.metrics.compute_metrics` with every judgment as ``ideal_labels``.
    """
    q_query, q_query_cats = _codes(qrels["query_id"])
    q_doc, q_doc_cats = _codes(qrels["doc_id"])
    r_query, r_query_cats = _codes(run["query_id"])
    r_doc, r_doc_cats = _codes(run["doc_id"])
    _no_duplicates(q_query * len(q_doc_cats) + q_doc, qrels_path, qrels, "qrels")
    _no_duplicates(r_query * len(r_doc_cats) + r_doc, run_path, run, "run")

    # Queries: qrels categories are the reference; run query -> qrels query (-1: not judged).
    run_to_qrels = q_query_cats.get_indexer(r_query_cats)
    in_qrels = np.bincount(q_query, minlength=len(q_query_cats)) > 0
    in_run = np.zeros(len(q_query_cats), dtype=bool)
    in_run[run_to_qrels[run_to_qrels >= 0]] = True
    evaluated = np.flatnonzero(in_qrels & (in_run | complete))
    if not len(evaluated):
        raise NdcgLabelingError(f"no query of {run_path} has relevance judgments in {qrels_path}")
    # Output rows in trec_eval's order: query id, byte order.
    ids = [str(q_query_cats[c]) for c in evaluated]
    by_id = sorted(range(len(ids)), key=lambda i: ids[i].encode("utf-8"))
    evaluated, ids = evaluated[by_id], [ids[i] for i in by_id]
    n_rows = len(evaluated)
    row_of_qrels_query = np.full(len(q_query_cats), -1, dtype=np.int64)
    row_of_qrels_query[evaluated] = np.arange(n_rows)

    # Labels: negative ("in the pool, not judged") -> gain 0, never relevant.
    rel = np.maximum(qrels["relevance"].to_numpy(dtype=np.float64), 0.0)
    n_qdocs = max(len(q_doc_cats), 1)
    q_key = pd.Index(q_query * n_qdocs + q_doc)  # unique (checked above): a hash lookup

    rows, lines = _group_lines(r_query, run_to_qrels, row_of_qrels_query)
    counts = np.bincount(rows, minlength=n_rows)
    width = max(int(counts.max()), 1)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    cols = np.arange(len(rows)) - starts[rows]

    line_docs = r_doc if lines is None else r_doc[lines]
    doc_in_qrels = q_doc_cats.get_indexer(r_doc_cats)[line_docs]
    found = q_key.get_indexer(evaluated[rows] * n_qdocs + doc_in_qrels)
    judged = (doc_in_qrels >= 0) & (found >= 0)
    line_labels = np.where(judged, rel[found], np.nan)
    all_scores = run["score"].to_numpy(dtype=np.float64)
    line_scores = all_scores if lines is None else all_scores[lines]

    scores = np.full((n_rows, width), np.nan)
    labels = np.full((n_rows, width), np.nan)
    scores[rows, cols] = line_scores
    labels[rows, cols] = line_labels

    k_needed = _k_needed(measures, width)
    _order_ties_by_doc_id(scores, labels, rows, line_scores, line_labels, line_docs, r_doc_cats, k_needed)

    # Ideal labels: every judgment of each evaluated query.
    q_rows = row_of_qrels_query[q_query]
    keep = np.flatnonzero(q_rows >= 0)
    keep = keep[np.argsort(q_rows[keep], kind="stable")]
    i_rows = q_rows[keep]
    i_counts = np.bincount(i_rows, minlength=n_rows)
    i_starts = np.concatenate(([0], np.cumsum(i_counts)[:-1]))
    ideal = np.full((n_rows, max(int(i_counts.max()), 1)), np.nan)
    ideal[i_rows, np.arange(len(keep)) - i_starts[i_rows]] = rel[keep]

    values = compute_metrics(
        [m.metric for m in measures], scores, labels, ideal_labels=ideal, gain="linear",
        relevant_threshold=float(relevance_level), empty="zero",
    )
    table = np.column_stack([values[m.metric] for m in measures]) if measures else np.zeros((n_rows, 0))
    return EvalResult(list(measures), ids, table)


def _group_lines(
    r_query: npt.NDArray[np.int64], run_to_qrels: npt.NDArray[np.int64], row_of_qrels_query: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64] | None]:
    """Output row of each kept run line and the kept lines grouped by row, in file order per row.

    Returns ``(rows, lines)``; ``lines`` is None when every line is kept in file order already (a
    run whose queries are contiguous, in output order, all evaluated). Runs are usually written one
    query after the other, so blocks of lines are moved, not lines sorted.
    """
    q_row = np.where(run_to_qrels >= 0, row_of_qrels_query[np.maximum(run_to_qrels, 0)], -1)
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
    rows: npt.NDArray[np.int64],
    line_scores: npt.NDArray[np.float64],
    line_labels: npt.NDArray[np.float64],
    line_docs: npt.NDArray[np.int64],
    doc_cats: pd.Index,
    k: int,
) -> None:
    """Make the matrices rank as trec_eval: equal scores by document id descending (byte order).

    The metric kernels keep equal scores in column (file) order. Only rows where that can change a
    top-``k`` result need fixing: equal adjacent scores inside the top ``k``, or the ``k``-th score
    also found below it. Those rows are sorted here by (score desc, id desc) and rewritten in rank
    order with strictly decreasing stand-in scores. A run with distinct scores costs one ranking.
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
    fix_mask = np.zeros(len(scores), dtype=bool)
    fix_mask[fix] = True
    sel = np.flatnonzero(fix_mask[rows])
    # Byte order of the distinct document ids involved (UTF-8 byte order = code point order).
    doc_codes, doc_inverse = np.unique(line_docs[sel], return_inverse=True)
    names = [str(doc_cats[c]) for c in doc_codes]
    doc_rank = np.empty(len(names), dtype=np.int64)
    doc_rank[sorted(range(len(names)), key=lambda i: names[i])] = np.arange(len(names))
    new = sel[np.lexsort((-doc_rank[doc_inverse], -line_scores[sel], rows[sel]))]
    r = rows[new]
    starts = np.concatenate(([0], np.flatnonzero(r[1:] != r[:-1]) + 1))
    pos = np.arange(len(new)) - np.repeat(starts, np.diff(np.concatenate((starts, [len(new)]))))
    scores[fix] = np.nan
    labels[fix] = np.nan
    scores[r, pos] = -pos.astype(np.float64)
    labels[r, pos] = line_labels[new]


def _no_duplicates(keys: npt.NDArray[np.int64], path: str, frame: pd.DataFrame, what: str) -> None:
    dup = pd.Series(keys).duplicated().to_numpy()
    if dup.any():
        row = int(np.argmax(dup))
        raise InputFileError(
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
