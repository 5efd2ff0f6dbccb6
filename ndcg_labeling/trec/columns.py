"""A plain TREC run's columns for ``import run``, with NumPy alone: :mod:`.plain`'s reader, held to
the files pandas' C parser reads the same way.

:mod:`.frames` reads runs for the importers with pandas, whose tokeniser differs from trec_eval's
(and :mod:`.plain`'s) on a few bytes: a ``"`` opens a quoted field, vertical tab and form feed are
not blanks, a lone carriage return ends a line, a byte-order mark is dropped, and ``1_0`` is no
number. A file holding any of them is not plain here (None), and goes to :mod:`.frames` as before;
on every other plain file both readers give the same lines. Ids stay bytes: each line's document id
and each run of lines' query id as zero-padded ``S`` strings (byte order) with their 64-bit hashes
(:func:`.plain._ids`); the importer codes them and decodes each distinct id once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ndcg_labeling.trec import plain

IntArray = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]
BytesArray = npt.NDArray[np.bytes_]


@dataclass
class PlainRun:
    """A plain run's lines in file order. ``query_text``/``query_hash``: the query id of each run of
    lines with one query id (``head_of_line``: per line, its run); ``doc_text``/``doc_hash``: per
    line, the document id; ``score``: per line, as ``float`` parses it."""

    query_text: BytesArray
    query_hash: U64Array
    head_of_line: IntArray
    doc_text: BytesArray
    doc_hash: U64Array
    score: npt.NDArray[np.float64]


def read_plain_run(data: bytes) -> PlainRun | None:
    """The run file ``data`` as :class:`PlainRun`; None unless it is plain (:mod:`.plain`: 6 fields
    on every content line, no comment line, UTF-8, no control byte, integer ranks, finite scores,
    ids of at most :data:`.plain.MAX_ID_BYTES` bytes) and pandas would read it alike (see above)."""
    if not _pandas_reads_alike(data):
        return None
    lines = plain._read(data, run=True, pandas_numbers=True)
    if lines is None:
        return None
    heads = lines.query_heads
    width = heads.dtype.itemsize
    query = plain._ids(heads.view(np.uint8).reshape(len(heads), width))
    return PlainRun(heads, query.hash, lines.head_of_line, lines.doc.text, lines.doc.hash,
                    np.asarray(lines.value, dtype=np.float64))


def _pandas_reads_alike(data: bytes) -> bool:
    """No ``"``, vertical tab or form feed, no carriage return but before a newline, no byte-order
    mark: the bytes where pandas' tokeniser parts from trec_eval's."""
    if b'"' in data or b"\v" in data or b"\f" in data or data.startswith(b"\xef\xbb\xbf"):
        return False
    return b"\r" not in data or data.count(b"\r") == data.count(b"\r\n")


def ranked(query_codes: IntArray, score: npt.NDArray[np.float64], doc_text: BytesArray) -> IntArray:
    """Every line in trec_eval's order (:func:`~ndcg_labeling.trec.join.trec_order`): ``query_codes``
    follow the query ids' byte order; documents tied in score are ordered by ``doc_text``, descending.
    :func:`.plain._ranked`, the rule ``eval`` applies, over every query."""
    n_queries = int(query_codes.max()) + 1 if len(query_codes) else 0
    return plain._ranked(query_codes, score, doc_text, np.arange(n_queries, dtype=np.int64))


def id_hashes(ids: BytesArray) -> U64Array:
    """The 64-bit hash :class:`PlainRun` gives each id, for ids from elsewhere (``ids``: UTF-8 bytes
    without a NUL byte, an ``S`` array of any width; ``np.array([s.encode() for s in strs])``): a
    function of an id's bytes alone."""
    width = max(8, -(-ids.dtype.itemsize // 8) * 8)
    padded = np.ascontiguousarray(ids, dtype=f"S{width}")
    return plain._ids(padded.view(np.uint8).reshape(len(ids), width)).hash
