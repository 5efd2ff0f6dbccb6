"""The join behind ``eval``: run lines and qrels lines into the matrices the metric kernels take.

One compiled pass (numba; see :mod:`ndcg_labeling._jit`) over integer codes, instead of hashing
every (query, document) pair: lines are grouped per query by a counting sort (file order kept),
and per query a stamp array over document codes finds the duplicates and looks up each run
document's label. Returns None where numba is missing; the caller then joins with pandas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling import _jit

IntArray = npt.NDArray[np.int64]
CodeArray = npt.NDArray[np.int32]  # category codes of the ids
FloatArray = npt.NDArray[np.float64]

_compiled: Callable[..., Any] | None = None


@dataclass
class Joined:
    """``(rows, width)`` matrices in run-file order per row (NaN / -1 past a row's end), the
    ``(rows, judged)`` ideal labels, and the index of the first duplicate line of each file (-1: none)."""

    scores: FloatArray
    labels: FloatArray
    docs: IntArray
    ideal: FloatArray
    duplicate_run_line: int
    duplicate_qrels_line: int


def _group_py(keys: CodeArray, n_keys: int) -> tuple[IntArray, IntArray]:  # pragma: no cover - compiled
    """Counting sort: ``perm[start[k]:start[k + 1]]`` are the positions holding key ``k``, in order."""
    start = np.zeros(n_keys + 1, np.int64)
    for t in range(keys.shape[0]):
        start[keys[t] + 1] += 1
    for k in range(n_keys):
        start[k + 1] += start[k]
    fill = start[:-1].copy()
    perm = np.empty(keys.shape[0], np.int64)
    for t in range(keys.shape[0]):
        k = keys[t]
        perm[fill[k]] = t
        fill[k] += 1
    return perm, start


def _first_duplicate_py(perm: IntArray, start: IntArray, docs: CodeArray, n_docs: int) -> int:  # pragma: no cover
    """The first line (in file order) naming a document already named for its query; -1 if none.

    Lines grouped per query (``perm``, ``start`` from :func:`_group_py`); a stamp array over the
    document codes remembers the last query that named each document.
    """
    first = -1
    stamp = np.full(n_docs, -1, np.int64)
    for q in range(start.shape[0] - 1):
        for idx in range(start[q], start[q + 1]):
            line = perm[idx]
            d = docs[line]
            if stamp[d] == q and (first < 0 or line < first):
                first = line
            stamp[d] = q
    return first


def _join_py(
    r_query: CodeArray, r_doc: CodeArray, r_score: FloatArray, n_run_queries: int, n_run_docs: int,
    q_query: CodeArray, q_doc: CodeArray, q_rel: FloatArray, n_qrels_queries: int, n_qrels_docs: int,
    run_row: IntArray, run_to_qrels: IntArray, run_doc_to_qrels_doc: IntArray, evaluated: IntArray,
) -> tuple[FloatArray, FloatArray, IntArray, FloatArray, int, int]:  # pragma: no cover - compiled
    n_rows = evaluated.shape[0]
    q_perm, q_start = _group(q_query, n_qrels_queries)
    dup_q = _first_duplicate(q_perm, q_start, q_doc, n_qrels_docs)
    # Ideal labels: every judgment of each evaluated query, in file order.
    iw = 1
    for row in range(n_rows):
        q = evaluated[row]
        iw = max(iw, q_start[q + 1] - q_start[q])
    ideal = np.full((n_rows, iw), np.nan)
    for row in range(n_rows):
        q = evaluated[row]
        for idx in range(q_start[q], q_start[q + 1]):
            ideal[row, idx - q_start[q]] = q_rel[q_perm[idx]]
    # Run lines per query, in file order.
    r_perm, r_start = _group(r_query, n_run_queries)
    dup_r = _first_duplicate(r_perm, r_start, r_doc, n_run_docs)
    width = 1
    for q in range(n_run_queries):
        if run_row[q] >= 0:
            width = max(width, r_start[q + 1] - r_start[q])
    scores = np.full((n_rows, width), np.nan)
    labels = np.full((n_rows, width), np.nan)
    docs = np.full((n_rows, width), -1, np.int64)
    stamp_label = np.full(n_qrels_docs, -1, np.int64)
    label_of = np.zeros(n_qrels_docs, np.float64)
    for q in range(n_run_queries):
        row = run_row[q]
        qq = run_to_qrels[q]
        if row >= 0:
            for idx in range(q_start[qq], q_start[qq + 1]):
                t = q_perm[idx]
                label_of[q_doc[t]] = q_rel[t]
                stamp_label[q_doc[t]] = qq
        if row < 0:
            continue
        for idx in range(r_start[q], r_start[q + 1]):
            line = r_perm[idx]
            d = r_doc[line]
            c = idx - r_start[q]
            scores[row, c] = r_score[line]
            docs[row, c] = d
            qd = run_doc_to_qrels_doc[d]
            labels[row, c] = label_of[qd] if qd >= 0 and stamp_label[qd] == qq else np.nan
    return scores, labels, docs, ideal, dup_r, dup_q


_group = _group_py
_first_duplicate = _first_duplicate_py


def _kernel(lines: int) -> Callable[..., Any] | None:
    """The compiled join, when numba is loaded or ``lines`` make loading it worth it (else None)."""
    global _compiled
    if _compiled is None and _jit.engage(lines):
        helpers = {"_group": _jit.compile_kernel(_group_py, {}, "_group_py", inline="always"),
                   "_first_duplicate": _jit.compile_kernel(_first_duplicate_py, {}, "_first_duplicate_py", inline="always")}
        _compiled = _jit.compile_kernel(_join_py, helpers, "_join_py")
    return _compiled


def warm_up() -> None:
    """Load the compiled join now (see :func:`ndcg_labeling.metrics._kernels.warm_up`)."""
    _jit.load_numba()
    kernel = _kernel(0)
    if kernel is not None:
        one = np.zeros(1, dtype=np.int64)
        code = np.zeros(1, dtype=np.int32)
        kernel(code, code, np.zeros(1), 1, 1, code, code, np.zeros(1), 1, 1, one, one, one, one)


def join(
    r_query: CodeArray, r_doc: CodeArray, r_score: FloatArray, n_run_queries: int, n_run_docs: int,
    q_query: CodeArray, q_doc: CodeArray, q_rel: FloatArray, n_qrels_queries: int, n_qrels_docs: int,
    run_row: IntArray, run_to_qrels: IntArray, run_doc_to_qrels_doc: IntArray, evaluated: IntArray,
) -> Joined | None:
    """Run and qrels lines (integer codes) as matrices; None without numba, or when the run is too
    small for loading numba to pay (see :func:`ndcg_labeling._jit.worth_compiling`).

    ``run_row[q]``: output row of run query ``q`` (-1: not evaluated); ``run_to_qrels[q]``: its qrels
    query code; ``run_doc_to_qrels_doc[d]``: the qrels document code of run document ``d`` (-1: not
    in the qrels); ``evaluated[row]``: the qrels query code of each output row.
    """
    kernel = _kernel(len(r_query) + len(q_query))
    if kernel is None:
        return None
    scores, labels, docs, ideal, dup_r, dup_q = kernel(
        r_query, r_doc, r_score, n_run_queries, n_run_docs, q_query, q_doc, q_rel, n_qrels_queries,
        n_qrels_docs, run_row, run_to_qrels, run_doc_to_qrels_doc, evaluated)
    return Joined(scores, labels, docs, ideal, int(dup_r), int(dup_q))
