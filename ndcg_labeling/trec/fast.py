"""``eval``'s reader for large files: both files through the compiled scanner and join of
:mod:`ndcg_labeling.trec._scan`, the same result as :func:`ndcg_labeling.trec.join.join` over the
line reader. Returns None (the caller then reads line by line) without numba, or when a file has
anything the scanner leaves to the line reader."""

from __future__ import annotations

import mmap
import os
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io.files import require_input_file, unreadable
from ndcg_labeling.metrics.trec_measures import RankedLists, distinct
from ndcg_labeling.trec.files import STDIN, read_bytes
from ndcg_labeling.trec.join import Joined, Options, duplicate_error, evaluated_queries, level_counts

# With the backend policy ``auto`` (ndcg_labeling.backend), from this many bytes (about 150,000 run
# lines) the compiled reader is faster even counting numba's start (about a second, its cache warm);
# below it the column reader of .files wins. ``numpy`` never takes it, ``numba`` always does.
COMPILED_FROM_BYTES = 8_000_000


def worth_it(*paths: str) -> bool:
    """Whether to read with the compiled reader: the backend policy, and for ``auto`` the file sizes."""
    total = 0
    for path in paths:
        if path == STDIN:
            return False  # its size is unknown before reading: the line reader
        try:
            total += os.path.getsize(path)
        except OSError:
            return False  # the line reader reports it
    if total < COMPILED_FROM_BYTES and "ndcg_labeling.backend" not in sys.modules and not os.environ.get(
            "NDCG_LABELING_BACKEND"):
        return False  # the default policy (auto) without loading the policy module: a small eval's 3 ms
    from ndcg_labeling import backend

    kind = backend.policy().kind
    return kind == "numba" or (kind == "auto" and total >= COMPILED_FROM_BYTES)


def _buffer(path: str) -> npt.NDArray[np.uint8]:
    """The file's bytes, mapped (pages are read as the scanner reaches them)."""
    require_input_file(path)
    if os.path.getsize(path) == 0:
        return np.frombuffer(read_bytes(path), dtype=np.uint8)
    try:
        with open(path, "rb") as fh:
            return np.frombuffer(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8)
    except OSError as exc:
        raise unreadable(path, exc) from None


def read_and_join(qrels_path: str, run_path: str, options: Options) -> Joined | None:
    from ndcg_labeling.trec import _scan

    kernels = _scan.kernels()
    if kernels is None:
        return None
    found = _scan_and_join(kernels, qrels_path, run_path, options)
    if found is None:
        return None
    # The mapped files and the scanner's columns are gone by now (peak memory): only the lists and the
    # qrels' query codes and labels are left.
    rel, num_ret, names, rows, in_run, n_judged, q_qcode, q_value, run_id = found
    return Joined([names[c] for c in rows], RankedLists(rel, num_ret, *_levels(q_qcode, q_value, rows, len(names))),
                  ~in_run[rows], n_judged, int((q_value > 0).sum()), run_id)


def _scan_and_join(kernels: dict[str, Any], qrels_path: str, run_path: str, options: Options) -> tuple[Any, ...] | None:
    from ndcg_labeling.trec import _scan

    qbuf, rbuf = _buffer(qrels_path), _buffer(run_path)
    if max(len(qbuf), len(rbuf)) >= 2**32:
        return None  # the scanner keeps offsets in 32 bits
    q, r, first = kernels["scan"](qbuf, rbuf)
    if q[0] != _scan.OK or r[0] != _scan.OK:
        return None
    _, q_qcode, q_dstart, q_dlen, q_dhash, q_value, _, _, _, nq = q
    _, r_qcode, r_dstart, r_dlen, r_dhash, r_score, slow, tag_s, tag_l, nr = r
    if nq == 0:
        raise InputFileError(qrels_path, "the file is empty")
    if nr == 0:
        raise InputFileError(run_path, "the file is empty")
    if slow.any():  # scores with an exponent or more than 15 digits: NumPy's correctly rounded parse
        idx = np.flatnonzero(slow)
        texts = [bytes(rbuf[_field_start(rbuf, r_dstart[i], 2):_field_end(rbuf, r_dstart[i], 2)]) for i in idx]
        r_score[idx] = np.array(texts).astype(np.float64)
    names = [bytes(((qbuf, rbuf)[w])[s:s + ln]).decode() for w, s, ln in first.tolist()]
    judged_codes = distinct(q_qcode)
    rows, in_run = evaluated_queries(judged_codes, r_qcode, len(names), options, run_path=run_path,
                                     qrels_path=qrels_path)
    rows = rows[np.argsort(np.array([names[c].encode() for c in rows], dtype=object), kind="stable")]
    rel, num_ret, dup_q, dup_r = kernels["join"](
        qbuf, q_qcode, q_dstart, q_dlen, q_dhash, q_value, rbuf, r_qcode, r_dstart, r_dlen, r_dhash, r_score,
        len(names),
        rows.astype(np.int64), -1 if options.max_docs is None else options.max_docs, options.judged_only)
    rel = rel[:, : int(num_ret.max()) if len(num_ret) else 0]  # -J may have shortened every list
    if dup_q >= 0:
        raise _duplicate(qrels_path, qbuf, q_dstart[dup_q], q_dlen[dup_q], names[q_qcode[dup_q]], "qrels")
    if dup_r >= 0:
        raise _duplicate(run_path, rbuf, r_dstart[dup_r], r_dlen[dup_r], names[r_qcode[dup_r]], "run")
    return (rel, num_ret, names, rows, in_run, len(judged_codes), q_qcode, q_value,
            bytes(rbuf[tag_s:tag_s + tag_l]).decode())


def _levels(q_qcode: Any, q_value: Any, rows: Any, n_codes: int) -> tuple[Any, Any]:
    row_of = np.full(n_codes, -1, dtype=np.int64)
    row_of[rows] = np.arange(len(rows))
    return level_counts(row_of[q_qcode], q_value.astype(np.float64), len(rows))


def _field_start(buf: Any, doc_start: int, after: int) -> int:
    """Start of the ``after``-th field after the document id starting at ``doc_start``."""
    i = doc_start
    for _ in range(after):
        while buf[i] not in (32, 9, 11, 12, 13):
            i += 1
        while buf[i] in (32, 9, 11, 12, 13):
            i += 1
    return i


def _field_end(buf: Any, doc_start: int, after: int) -> int:
    i = _field_start(buf, doc_start, after)
    while i < len(buf) and buf[i] not in (32, 9, 10, 11, 12, 13):
        i += 1
    return i


def _duplicate(path: str, buf: Any, start: int, length: int, query: str, what: str) -> InputFileError:
    line = int(np.count_nonzero(buf[:start] == 10)) + 1
    return duplicate_error(path, bytes(buf[start:start + length]).decode(), query, what, line)
