"""``eval``'s reader for plain files with NumPy alone: bytes in, ranked relevance lists out, no string
object per line.

A plain file has exactly the fields of its kind on every content line (4 for qrels, 6 for a run), no
comment line, no NUL byte, no ASCII control character that Python's ``str.split`` would take for a
blank (0x1C-0x1F), UTF-8 text, integer labels and ranks, finite scores. Both files are tokenised on
the byte array; ids are copied into zero-padded fixed-width byte strings (NumPy ``S`` arrays, whose
order is C's ``strcmp`` order, trec_eval's) and hashed to 64 bits. Query ids are coded in byte order
from the distinct ids of each run of equal lines (a file lists a query's lines together, so only a
few ids are sorted); documents are matched by hash, and every match is confirmed on the bytes, so a
hash collision never merges two ids (one sends the files to the line reader). Only documents tied
in score are ever ordered by their id, 4 bytes at a time and only among the lines still tied. Fields
are found from the positions of the blanks (one blank apart: no other scan), each id is gathered 8
bytes at a time, and short decimal scores are parsed as an integer over a power of ten (exact, as
NumPy's parse). ``import run`` reads plain runs with the same code (:mod:`.columns`). The result
is :func:`ndcg_labeling.trec.join.join`'s over :mod:`ndcg_labeling.trec.files`'s line reader, which
stays the reference, the fallback (None here) and the author of every error message but the
duplicate ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io.byte_ids import hash_rows
from ndcg_labeling.metrics.trec_measures import NONPOOL, UNJUDGED, RankedLists, distinct
from ndcg_labeling.trec.join import (
    Joined,
    Options,
    duplicate_error,
    evaluated_queries,
    fill_lists,
    level_counts,
    positions,
)

IntArray = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]

_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)
_POWERS_OF_TEN = np.array([float(10**k) for k in range(16)])  # each exact in a double
_LOW_BYTES = np.array([(1 << 8 * k) - 1 for k in range(9)], dtype=np.uint64)  # a little-endian word's first k bytes
# An id longer than this sends the file to the line reader (ids are copied at the longest id's width).
MAX_ID_BYTES = 512


@dataclass
class _Ids:
    """Ids of lines as zero-padded byte strings (``text``, an ``S`` array) and their 64-bit hashes."""

    text: npt.NDArray[np.bytes_]
    hash: U64Array


@dataclass
class _Lines:
    """A plain file's lines: the query id of each run of lines with one query id and the run of each
    line, document ids, the number column (label or score), where each document id starts (for the
    line number of an error), the run's last tag."""

    query_heads: npt.NDArray[np.bytes_]
    head_of_line: IntArray
    doc: _Ids
    value: npt.NDArray[np.float64] | IntArray
    doc_start: IntArray
    data: bytes
    tag: str = ""


def _fields(data: bytes, buf: npt.NDArray[np.uint8], n_fields: int) -> tuple[IntArray, IntArray] | None:
    """``(starts, ends)``, ``(lines, n_fields)`` each, of a file whose every content line has exactly
    ``n_fields`` fields, none starting with ``#``, no byte below 0x20 but a blank, and UTF-8 text;
    None for any other file."""
    low = buf <= 32
    gaps = np.flatnonzero(low)
    kind = buf[gaps]
    if ((kind != 32) & ((kind - np.uint8(9)) > 4)).any() or not data.isascii() and _not_utf8(data):
        return None
    if len(gaps) and gaps[0] and buf[-1] == 10 and not len(gaps) % n_fields and not (low[1:] & low[:-1]).any():
        found = _one_blank_apart(gaps, kind, n_fields)  # the common layout: fields one blank apart
    else:
        found = _runs_of_blanks(buf, low, n_fields)
    if found is None or (buf[found[0][:, 0]] == 35).any():
        return None
    return found


def _one_blank_apart(gaps: IntArray, kind: npt.NDArray[np.uint8], n_fields: int) -> tuple[IntArray, IntArray] | None:
    """:func:`_fields` of a file without blank lines or runs of blanks, ending with a newline: a line
    is ``n_fields`` fields, each followed by one blank, the last by the newline."""
    if np.count_nonzero(kind == 10) != len(kind) // n_fields or not (kind[n_fields - 1 :: n_fields] == 10).all():
        return None
    starts = np.empty(len(gaps), dtype=np.int64)
    starts[0] = 0
    np.add(gaps[:-1], 1, out=starts[1:])
    return starts.reshape(-1, n_fields), gaps.reshape(-1, n_fields)


def _runs_of_blanks(buf: npt.NDArray[np.uint8], low: npt.NDArray[np.bool_], n_fields: int,
                    ) -> tuple[IntArray, IntArray] | None:
    """:func:`_fields` of any other layout: fields are the runs of bytes above 0x20."""
    inside = np.zeros(len(buf) + 2, dtype=bool)
    np.logical_not(low, out=inside[1:-1])
    edges = np.flatnonzero(inside[1:] != inside[:-1])
    if not len(edges) or len(edges) % (2 * n_fields):
        return None
    starts = edges[0::2]
    # The first field after each newline must be a multiple of n_fields (blank lines repeat one).
    after = np.searchsorted(starts, np.flatnonzero(buf == 10))
    after = after[(after > 0) & (after < len(starts))]
    firsts = after[np.concatenate(([True], after[1:] != after[:-1]))] if len(after) else after
    if not np.array_equal(firsts, np.arange(n_fields, len(starts), n_fields)):
        return None
    return starts.reshape(-1, n_fields), edges[1::2].reshape(-1, n_fields)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _text(words: U64Array, starts: IntArray, ends: IntArray) -> npt.NDArray[np.uint8] | None:
    """``(n, width)`` bytes of each field, zero-padded to a multiple of 8 (None: an id too long).
    ``words``: :func:`_words` of the file, so each 8 bytes are one gather and one mask."""
    lengths = ends - starts
    n_words = -(-int(lengths.max()) // 8)
    if 8 * n_words > MAX_ID_BYTES:
        return None
    shortest = int(lengths.min())
    out = np.empty((len(starts), n_words), dtype="<u8")
    for j in range(n_words):
        out[:, j] = words[starts + 8 * j] if j else words[starts]
        if shortest < 8 * j + 8:  # some field ends in this word: keep its bytes (fields have 1 or more)
            rest = np.minimum(lengths - 8 * j, 8)
            out[:, j] &= _LOW_BYTES[np.maximum(rest, 0, out=rest) if shortest < 8 * j else rest]
    return out.view(np.uint8)


def _words(buf: npt.NDArray[np.uint8]) -> U64Array:
    """The little-endian 8-byte word starting at every byte of the file (an unaligned view of a copy
    padded with :data:`MAX_ID_BYTES` zeros, so the words of the last field stay inside it)."""
    padded = np.zeros(len(buf) + MAX_ID_BYTES + 8, dtype=np.uint8)
    padded[: len(buf)] = buf
    return np.ndarray((len(buf) + MAX_ID_BYTES,), dtype="<u8", buffer=padded, strides=(1,))


def _line_of(data: bytes, position: int) -> int:
    """The 1-based line number of a byte position."""
    return data.count(b"\n", 0, position) + 1


def _ids(matrix: npt.NDArray[np.uint8]) -> _Ids:
    """The ids of ``matrix`` (:func:`_text`'s rows) and their 64-bit hashes
    (:func:`ndcg_labeling.io.byte_ids.hash_rows`: they do not depend on the array's width)."""
    return _Ids(matrix.view(f"S{matrix.shape[1]}").ravel(), hash_rows(matrix))


def _read(data: bytes, run: bool, pandas_numbers: bool = False) -> _Lines | None:
    """A plain file's :class:`_Lines` (None: not plain). ``pandas_numbers``: a run's ranks and scores
    must also be written in pandas' number syntax (digits, signs, points, exponents: no ``1_0``)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    found = _fields(data, buf, 6 if run else 4)
    if found is None:
        return None
    starts, ends = found
    words = _words(buf)
    parts = [_text(words, starts[:, f], ends[:, f]) for f in ((0, 2, 3, 4) if run else (0, 2, 3))]
    if any(p is None for p in parts):
        return None
    query, doc, number = (_strings(p) for p in parts[:3] if p is not None)
    heads = np.ones(len(query), dtype=bool)
    heads[1:] = query[1:] != query[:-1]
    try:
        if run:
            value: npt.NDArray[np.float64] | IntArray = _decimals(parts[3], pandas_numbers)  # type: ignore[arg-type]
            if not (np.isfinite(value).all() and _integers(number, pandas_numbers)):
                return None
        else:  # plain integers only: "1.0" or "1e2" go line by line
            value = number.astype(np.int64)
    except (ValueError, OverflowError):
        return None
    tag = bytes(buf[starts[-1, 5]:ends[-1, 5]]).decode() if run else ""
    return _Lines(query[heads], np.cumsum(heads) - 1, _ids(parts[1]), value,  # type: ignore[arg-type]
                  starts[:, 2].copy(), data, tag)


def _decimals(matrix: npt.NDArray[np.uint8], pandas_numbers: bool = False) -> npt.NDArray[np.float64]:
    """The numbers of :func:`_text`'s rows, exactly as ``astype(np.float64)`` parses them (correctly
    rounded; ValueError for a row that is no number, or with ``pandas_numbers`` one written with another
    byte than :func:`_number_bytes`'). A plain decimal of at most 15 digits is its
    digits as an integer divided by a power of ten, both exact in a double, so the one division is
    correctly rounded too (Clinger's fast path); NumPy parses the other rows. Works a byte column at
    a time over the whole file (the rows are a few bytes wide)."""
    n = len(matrix)
    mantissa, scaled = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    n_digits, after_point = np.zeros(n, dtype=np.int16), np.zeros(n, dtype=np.int16)
    points, odd = np.zeros(n, dtype=np.int16), np.zeros(n, dtype=bool)
    for j, byte in enumerate(np.ascontiguousarray(matrix[:, :17].T)):
        digit = byte - np.uint8(48)
        is_digit = digit < 10
        np.multiply(mantissa, 10, out=scaled)
        np.add(scaled, digit, out=scaled, casting="unsafe")
        np.copyto(mantissa, scaled, where=is_digit)
        n_digits += is_digit
        after_point += is_digit & (points > 0)
        point = byte == 46
        points += point
        other = ~(is_digit | point | (byte == 0))
        odd |= other & ~((byte == 45) | (byte == 43)) if j == 0 else other
    simple = ~odd & (points <= 1) & (n_digits >= 1) & (n_digits <= 15)
    if matrix.shape[1] > 17:  # a 15-digit decimal with a sign and a point has 17 bytes
        simple &= ~matrix[:, 17:].any(axis=1)
    value: npt.NDArray[np.float64] = mantissa / _POWERS_OF_TEN[np.minimum(after_point, 15)]
    np.negative(value, out=value, where=matrix[:, 0] == 45)
    other_rows = np.flatnonzero(~simple)
    if len(other_rows):
        if pandas_numbers and not _number_bytes(matrix[other_rows]):
            raise ValueError("a number pandas would not read")
        value[other_rows] = _strings(matrix[other_rows]).astype(np.float64)
    return value


def _number_bytes(matrix: npt.NDArray[np.uint8]) -> bool:
    """Whether every row of ``matrix`` is written with digits, ``+ - . e E`` alone (and zero padding)."""
    allowed = np.zeros(256, dtype=bool)
    allowed[list(b"0123456789+-.eE\0")] = True
    return bool(allowed[matrix].all())


def _strings(matrix: npt.NDArray[np.uint8]) -> npt.NDArray[np.bytes_]:
    return matrix.view(f"S{matrix.shape[1]}").ravel()


def _integers(ranks: npt.NDArray[np.bytes_], pandas_numbers: bool = False) -> bool:
    """Whether every rank is an integer (digits only, checked on the bytes; others parsed; with
    ``pandas_numbers`` only those written with :func:`_number_bytes`')."""
    m = ranks.view(np.uint8).reshape(len(ranks), -1)
    if (((m - np.uint8(48)) < 10) | (m == 0)).all() and (m[:, 0] != 0).all():
        return True
    if pandas_numbers and not _number_bytes(m):
        return False
    value = ranks.astype(np.float64)
    return bool(np.isfinite(value).all() and (value == np.round(value)).all())


def _pair_key(query: IntArray, doc_hash: U64Array) -> U64Array:
    x = doc_hash ^ (query.astype(np.uint64) * _MIX2)
    x ^= x >> np.uint64(31)
    x *= _MIX
    x ^= x >> np.uint64(29)
    return x


class _Collision(Exception):
    """Two different (query, document) pairs with one 64-bit key: the line reader takes over."""


def _first_repeat(key: U64Array, query: IntArray, text: npt.NDArray[np.bytes_], by_key: IntArray) -> int:
    """The index of the first element (in the given order) equal to an earlier one, -1 if none;
    ``by_key`` sorts ``key``; :class:`_Collision` for equal keys of different pairs."""
    k = key[by_key]
    at = np.flatnonzero(k[1:] == k[:-1])
    if not len(at):
        return -1
    a, b = by_key[at], by_key[at + 1]
    if ((query[a] != query[b]) | (text[a] != text[b])).any():
        raise _Collision
    involved = distinct(np.concatenate((a, b)))  # ascending: a stable sort of their keys keeps it
    k = key[involved][np.argsort(key[involved], kind="stable")]
    again = involved[np.argsort(key[involved], kind="stable")][1:][k[1:] == k[:-1]]
    return int(again.min())


def read_and_join(qrels_data: bytes, run_data: bytes, options: Options, *, qrels_path: str, run_path: str,
                  ) -> Joined | None:
    """:func:`ndcg_labeling.trec.join.join`'s result for two plain files (None: either is not plain)."""
    qrels = _read(qrels_data, run=False)
    run = _read(run_data, run=True) if qrels is not None else None
    if qrels is None or run is None:
        return None
    names, codes = np.unique(np.concatenate((qrels.query_heads, run.query_heads)), return_inverse=True)
    qq = codes[: len(qrels.query_heads)].astype(np.int64)[qrels.head_of_line]
    rq = codes[len(qrels.query_heads):].astype(np.int64)[run.head_of_line]
    try:
        return _join(names, qq, qrels, rq, run, options, qrels_path, run_path)
    except _Collision:
        return None


def _join(names: npt.NDArray[np.bytes_], qq: IntArray, qrels: _Lines, rq: IntArray, run: _Lines, options: Options,
          qrels_path: str, run_path: str) -> Joined:
    qkey = _pair_key(qq, qrels.doc.hash)
    q_by_key = np.argsort(qkey)
    dup = _first_repeat(qkey, qq, qrels.doc.text, q_by_key)
    if dup >= 0:
        raise _duplicate(qrels_path, qrels, dup, names[qq[dup]], "qrels")
    judged = distinct(qq)
    rows, in_run = evaluated_queries(judged, rq, len(names), options, run_path=run_path, qrels_path=qrels_path)
    row_of = np.full(len(names), -1, dtype=np.int64)
    row_of[rows] = np.arange(len(rows))
    order = _ranked(rq, np.asarray(run.value, dtype=np.float64), run.doc.text, row_of)
    row = row_of[rq[order]]
    pos = positions(row, len(rows))
    if options.max_docs is not None:
        kept = pos < options.max_docs
        order, row, pos = order[kept], row[kept], pos[kept]
    in_file_order = np.sort(order)
    rkey = _pair_key(rq, run.doc.hash)
    kept_keys = rkey[in_file_order]
    dup = _first_repeat(kept_keys, rq[in_file_order], run.doc.text[in_file_order], np.argsort(kept_keys))
    if dup >= 0:
        line = int(in_file_order[dup])
        raise _duplicate(run_path, run, line, names[rq[line]], "run")
    label = _labels(qkey, q_by_key, qq, qrels, rkey[order], rq[order], run.doc.text[order])
    rel, num_ret = fill_lists(row, pos, label, len(rows), options.judged_only)
    q_labels = np.asarray(qrels.value, dtype=np.float64)
    levels, counts = level_counts(row_of[qq], q_labels, len(rows))
    return Joined([bytes(n).decode() for n in names[rows]], RankedLists(rel, num_ret, levels, counts),
                  ~in_run[rows], len(judged), int((q_labels > 0).sum()), run.tag)


def _ranked(query: IntArray, score: npt.NDArray[np.float64], doc: npt.NDArray[np.bytes_], row_of: IntArray,
            ) -> IntArray:
    """Run lines of the evaluated queries in trec_eval's order (:func:`~ndcg_labeling.trec.join.trec_order`):
    by query (codes follow byte order), score descending, and only within a tie by document id
    descending."""
    order = _in_query_order(query, score, row_of)
    if order is None:
        order = np.argsort(-score, kind="stable")
        key = query[order]
        order = order[np.argsort(key.astype(np.uint16) if len(row_of) < 2**16 else key, kind="stable")]
        order = order[row_of[query[order]] >= 0]
    q, s = query[order], score[order]
    tie = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    if tie.any():
        tied = np.zeros(len(order), dtype=bool)
        tied[1:] |= tie
        tied[:-1] |= tie
        at = np.flatnonzero(tied)
        group = np.cumsum(np.concatenate(([True], ~tie)))[at]
        order[at] = order[at][_by_id_descending(group, doc[order[at]])]
    return order


def _by_id_descending(group: IntArray, doc: npt.NDArray[np.bytes_]) -> IntArray:
    """The stable permutation that orders tied lines by document id descending (byte order) within
    each ``group`` (ascending, one group per tie). The ids are compared 4 bytes at a time, as
    big-endian integers, and only among the lines still tied: one sort of ``(group, 4 bytes)`` keys
    for the first 4 bytes that differ, a few more only where whole prefixes match (ids that share a
    prefix across the file, such as ``clueweb09-en``, skip it for free). Equal ids keep their order."""
    if doc.dtype.itemsize % 4:
        doc = doc.astype(f"S{-(-doc.dtype.itemsize // 4) * 4}")  # zero padding keeps the byte order
    quads = doc.view(np.uint8).reshape(len(doc), doc.dtype.itemsize).view(">u4")
    perm = np.arange(len(doc))
    block = group.astype(np.uint64) - np.uint64(group[0]) if len(group) else group.astype(np.uint64)
    todo = np.arange(len(doc))  # positions in perm whose block holds more than one line
    for column in range(quads.shape[1]):
        quad = quads[perm[todo], column]
        if not len(todo) or (quad == quad[0]).all():
            continue
        key = (block << np.uint64(32)) | (np.uint64(0xFFFFFFFF) - quad.astype(np.uint64))
        by_key = np.argsort(key, kind="stable")
        perm[todo] = perm[todo][by_key]
        key = key[by_key]
        same = key[1:] == key[:-1]
        still = np.zeros(len(todo), dtype=bool)
        still[1:] |= same
        still[:-1] |= same
        block = np.cumsum(np.concatenate(([False], ~same)))[still].astype(np.uint64)
        todo = todo[still]
    return perm


def _in_query_order(query: IntArray, score: npt.NDArray[np.float64], row_of: IntArray) -> IntArray | None:
    """The common run file's order without a sort: each query's lines together, scores never
    rising within them; the blocks of the evaluated queries in code order. None for another file."""
    head = np.ones(len(query), dtype=bool)
    head[1:] = query[1:] != query[:-1]
    if (score[1:][~head[1:]] > score[:-1][~head[1:]]).any():
        return None
    starts = np.flatnonzero(head)
    codes = query[starts]
    if len(distinct(codes)) < len(codes):
        return None  # a query in two blocks
    lengths = np.diff(np.append(starts, len(query)))
    blocks = np.argsort(codes)
    blocks = blocks[row_of[codes[blocks]] >= 0]
    first = np.cumsum(lengths[blocks]) - lengths[blocks]
    return np.repeat(starts[blocks] - first, lengths[blocks]) + np.arange(int(lengths[blocks].sum()))


def _labels(qkey: U64Array, by_key: IntArray, qq: IntArray, qrels: _Lines, key: U64Array, query: IntArray,
            doc: npt.NDArray[np.bytes_]) -> npt.NDArray[np.float64]:
    """The code of each ranked document (:data:`NONPOOL` unnamed, :data:`UNJUDGED` negative label)."""
    sorted_keys = qkey[by_key]
    at = by_key[np.clip(np.searchsorted(sorted_keys, key), 0, max(len(qkey) - 1, 0))]
    hit = qkey[at] == key
    same = hit & (qq[at] == query) & (qrels.doc.text[at] == doc)
    if (hit != same).any():
        raise _Collision
    value = np.asarray(qrels.value, dtype=np.float64)[at]
    return np.where(hit, np.where(value < 0, UNJUDGED, value), NONPOOL)


def _duplicate(path: str, lines: _Lines, index: int, query: bytes, what: str) -> InputFileError:
    return duplicate_error(path, lines.doc.text[index].decode(), query.decode(), what,
                           _line_of(lines.data, int(lines.doc_start[index])))
