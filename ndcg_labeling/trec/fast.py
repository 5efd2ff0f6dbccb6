"""``eval``'s reader for large files: both files through the compiled scanner and join of
:mod:`ndcg_labeling.trec._scan`, the same result as :func:`ndcg_labeling.trec.join.join` over the
line reader. Returns None (the caller then reads line by line) without numba, or when a file has
anything the scanner leaves to the line reader. This is the one fast TREC reader: ``eval`` joins with it,
the importers read large runs with it (:func:`read_run`)."""

from __future__ import annotations

import mmap
import os
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling import settings
from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io.files import require_input_file, unreadable
from ndcg_labeling.metrics.trec_measures import RankedLists, distinct, level_counts
from ndcg_labeling.trec.files import BOM, STDIN, read_bytes
from ndcg_labeling.trec.join import Joined, Options, duplicate_error, evaluated_queries

# With the backend policy ``auto`` (ndcg_labeling.backend), from this many bytes of both files (about
# 200,000 run lines) the compiled reader is faster even counting numba's start (1-2 s, its cache warm);
# below it the line reader of .files wins (2026-12-04, under load, whole ``eval`` processes: 200k lines
# 3.5 s either way, 50k lines 1.05 s against 2.8 s, 500k lines 10.2 s against 4.4 s).
# ``numpy`` never takes it, ``numba`` always does.
COMPILED_FROM_BYTES = 12_000_000


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
    if total < COMPILED_FROM_BYTES and "ndcg_labeling.backend" not in sys.modules and not settings.backend_spec():
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
            buf = np.frombuffer(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8)
    except OSError as exc:
        raise unreadable(path, exc) from None
    return buf[len(BOM):] if bytes(buf[:len(BOM)]) == BOM else buf  # a byte-order mark is not part of an id


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


def read_run(path: str, longest: int) -> tuple[list[str], npt.NDArray[np.int32], list[str], npt.NDArray[np.int32],
                                                npt.NDArray[np.float64]] | None:
    """A run for the importers, in file order: the distinct query ids (in order of first appearance) and
    per line the code of its query id among them, the same for the document ids (coded by pyarrow's
    ``dictionary_encode`` over the ids' bytes, never a string per line), and the scores. None where the
    line reader should decide (it words every error): what :func:`read_and_join` leaves, and ids that
    are not printable ASCII of at most ``longest`` bytes (the id rule of :mod:`ndcg_labeling.io.ids`)."""
    import pyarrow as pa

    from ndcg_labeling.trec import _scan

    kernels = _scan.kernels()
    buf = _buffer(path)
    if kernels is None or len(buf) >= 2**32:
        return None
    _, r, first = kernels["scan"](np.frombuffer(b"", dtype=np.uint8), buf)  # read-only, as buf
    status, qcode, dstart, dlen, _, score, slow, _, _, n = r
    if status != _scan.OK or n == 0 or int(dlen.max()) > longest or int(first[:, 2].max()) > longest:
        return None
    data = kernels["joined"](buf, dstart, dlen)
    names = [bytes(buf[s:s + ln]) for _, s, ln in first.tolist()]
    for ids in (data, np.frombuffer(b"".join(names), dtype=np.uint8)):
        if ((ids < 0x21) | (ids > 0x7E)).any():
            return None
    if slow.any() and not _exact_scores(buf, dstart, score, slow):
        return None
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(dlen, out=offsets[1:])
    docs = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data)).dictionary_encode()
    return ([name.decode() for name in names], qcode, docs.dictionary.to_pylist(),
            docs.indices.to_numpy(zero_copy_only=False), score)


def _exact_scores(buf: Any, dstart: Any, score: Any, slow: Any) -> bool:
    """Scores with an exponent or more than 15 digits, parsed by NumPy (correctly rounded), in place;
    False for one that is no finite number (``1e``, ``1e400``: the line reader words the error)."""
    idx = np.flatnonzero(slow)
    texts = [bytes(buf[_field_start(buf, dstart[i], 2):_field_end(buf, dstart[i], 2)]) for i in idx]
    try:
        score[idx] = np.array(texts).astype(np.float64)
    except ValueError:
        return False
    return bool(np.isfinite(score[idx]).all())


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
    if slow.any() and not _exact_scores(rbuf, r_dstart, r_score, slow):
        return None
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
