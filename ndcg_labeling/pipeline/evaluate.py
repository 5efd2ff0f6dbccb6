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
from ndcg_labeling.io.trec import read_trec_qrels, read_trec_run_scores
from ndcg_labeling.metrics import compute_metrics

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
    qrels = read_trec_qrels(qrels_path)
    run = read_trec_run_scores(run_path)
    return evaluate_frames(qrels, run, parsed, complete=complete, relevance_level=relevance_level,
                           qrels_path=str(qrels_path), run_path=str(run_path))


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
    """:func:`evaluate_files` on already-read frames (columns as :mod:`ndcg_labeling.io.trec` gives)."""
    # Shared codes for query ids and document ids across both files make the join a searchsorted.
    q_codes, q_uniques = pd.factorize(pd.concat([qrels["query_id"], run["query_id"]], ignore_index=True))
    d_codes, d_uniques = pd.factorize(pd.concat([qrels["doc_id"], run["doc_id"]], ignore_index=True))
    nq_rel = len(qrels)
    qrels_q, run_q = q_codes[:nq_rel].astype(np.int64), q_codes[nq_rel:].astype(np.int64)
    qrels_d, run_d = d_codes[:nq_rel].astype(np.int64), d_codes[nq_rel:].astype(np.int64)
    n_docs = max(len(d_uniques), 1)
    qrels_key = qrels_q * n_docs + qrels_d
    run_key = run_q * n_docs + run_d
    _no_duplicates(qrels_key, qrels_path, qrels["doc_id"], qrels["query_id"], "qrels")
    _no_duplicates(run_key, run_path, run["doc_id"], run["query_id"], "run")

    in_qrels = np.zeros(len(q_uniques), dtype=bool)
    in_qrels[qrels_q] = True
    in_run = np.zeros(len(q_uniques), dtype=bool)
    in_run[run_q] = True
    evaluated = in_qrels & (in_run | complete)
    if not evaluated.any():
        raise NdcgLabelingError(f"no query of {run_path} has relevance judgments in {qrels_path}")
    # Evaluated queries in trec_eval's output order: query id, byte order.
    eval_codes = np.flatnonzero(evaluated)
    eval_ids = [str(q_uniques[c]) for c in eval_codes]
    by_id = sorted(range(len(eval_ids)), key=lambda i: eval_ids[i].encode("utf-8"))
    eval_codes = eval_codes[by_id]
    eval_ids = [eval_ids[i] for i in by_id]
    row_of = np.full(len(q_uniques), -1, dtype=np.int64)
    row_of[eval_codes] = np.arange(len(eval_codes))
    n_rows = len(eval_codes)

    # Labels: negative ("in pool, not judged") -> gain 0, never relevant.
    rel = np.maximum(qrels["relevance"].to_numpy(dtype=np.float64), 0.0)
    sort_q = np.argsort(qrels_key, kind="stable")
    sorted_keys = qrels_key[sort_q]

    # The run, restricted to evaluated queries, ranked: query, score desc, doc id desc.
    keep = row_of[run_q] >= 0
    r_rows = row_of[run_q[keep]]
    r_scores = run["score"].to_numpy(dtype=np.float64)[keep]
    r_keys = run_key[keep]
    r_docs = run["doc_id"].to_numpy()[keep]
    order = np.lexsort((-r_scores, r_rows))
    order = _break_ties_by_doc_id(order, r_rows, r_scores, r_docs)
    r_rows, r_keys = r_rows[order], r_keys[order]

    pos_in = np.searchsorted(sorted_keys, r_keys)
    pos_in = np.minimum(pos_in, max(len(sorted_keys) - 1, 0))
    judged = (sorted_keys[pos_in] == r_keys) if len(sorted_keys) else np.zeros(len(r_keys), dtype=bool)
    r_labels = np.where(judged, rel[sort_q[pos_in]] if len(sorted_keys) else 0.0, np.nan)

    counts = np.bincount(r_rows, minlength=n_rows)
    width = max(int(counts.max()) if len(counts) else 0, 1)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    col = np.arange(len(r_rows)) - starts[r_rows]
    scores = np.full((n_rows, width), np.nan)
    labels = np.full((n_rows, width), np.nan)
    scores[r_rows, col] = -col.astype(np.float64)  # already ranked: strictly decreasing scores
    labels[r_rows, col] = r_labels

    # Ideal labels: every judgment of each evaluated query.
    q_keep = row_of[qrels_q] >= 0
    i_rows = row_of[qrels_q[q_keep]]
    i_labels = rel[q_keep]
    i_order = np.argsort(i_rows, kind="stable")
    i_rows, i_labels = i_rows[i_order], i_labels[i_order]
    i_counts = np.bincount(i_rows, minlength=n_rows)
    i_width = max(int(i_counts.max()), 1)
    i_starts = np.concatenate(([0], np.cumsum(i_counts)[:-1]))
    ideal = np.full((n_rows, i_width), np.nan)
    ideal[i_rows, np.arange(len(i_rows)) - i_starts[i_rows]] = i_labels

    values = compute_metrics(
        [m.metric for m in measures], scores, labels, ideal_labels=ideal, gain="linear",
        relevant_threshold=float(relevance_level), empty="zero",
    )
    table = np.column_stack([values[m.metric] for m in measures]) if measures else np.zeros((n_rows, 0))
    return EvalResult(list(measures), eval_ids, table)


def _break_ties_by_doc_id(
    order: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    docs: npt.NDArray[np.object_],
) -> npt.NDArray[np.int64]:
    """Within runs of equal (query, score) in ``order``, put document ids in descending byte order.

    Only tied positions are touched, so a run with distinct scores costs one comparison pass.
    """
    if len(order) < 2:
        return order
    r, s = rows[order], scores[order]
    same = (r[1:] == r[:-1]) & (s[1:] == s[:-1])
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    group = np.cumsum(np.concatenate(([True], ~same)))  # equal within a tie run
    positions = np.flatnonzero(tied)
    frame = pd.DataFrame({
        "g": group[positions],
        # Python compares str by code point, which is UTF-8 byte order.
        "doc": docs[order[positions]],
        "i": order[positions],
    })
    frame = frame.sort_values(["g", "doc"], ascending=[True, False], kind="mergesort")
    out = order.copy()
    out[positions] = frame["i"].to_numpy()
    return out


def _no_duplicates(
    keys: npt.NDArray[np.int64], path: str, docs: pd.Series, queries: pd.Series, what: str
) -> None:
    dup = pd.Series(keys).duplicated().to_numpy()
    if dup.any():
        row = int(np.argmax(dup))
        line = _line_of_row(path, row)
        raise InputFileError(
            path, f"document {docs.iloc[row]!s} appears twice for query {queries.iloc[row]!s} in the {what}", line
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
