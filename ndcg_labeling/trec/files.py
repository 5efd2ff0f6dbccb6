"""Reading TREC run and qrels files as trec_eval 10 does, into plain columns (no pandas).

Run line:   ``query_id  Q0  doc_id  rank  score  tag``  (fields after the sixth are ignored, as trec_eval
            does - its own test run ``results.trunc`` has them; fewer fields are an error)
Qrels line: ``query_id  iteration  doc_id  relevance``  (exactly four fields; relevance an integer,
            negative values allowed: trec_eval reads them as "in the pool, not judged")

Fields are separated by any run of blanks. Blank lines and comment lines (first non-blank character
``#``, as trec_eval 10 skips them) are skipped; a ``#`` inside a field is part of it. ``-`` names
standard input. Every problem is one :class:`~ndcg_labeling.errors.InputFileError` naming the file
and its 1-based line. Large files are read by a compiled scanner (:mod:`ndcg_labeling.trec._scan`)
where numba is available; this module's line-by-line reader is the reference and the fallback.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io.files import (  # the one rule for input files (docs/input-rules.md)
    require_input_file,
    unreadable,
)

STDIN = "-"
RUN_FIELDS = "expected 6 whitespace-separated fields (query_id Q0 doc_id rank score tag), got {n}"
QRELS_FIELDS = "expected 4 whitespace-separated fields (query_id iteration doc_id relevance), got {n}"


@dataclass
class RunColumns:
    """A run's lines in file order: ``query_id``, ``doc_id``, ``score`` (and ``rank``, ``tag`` when
    asked), the 1-based file line of each, and the tag of the last line (trec_eval's ``runid``)."""

    query_id: list[str]
    doc_id: list[str]
    score: list[float]
    line: list[int]
    run_id: str
    rank: list[str] | None = None  # as written: the rank is ignored
    tag: list[str] | None = None


@dataclass
class QrelsColumns:
    """A qrels file's lines in file order: ``query_id``, ``iteration``, ``doc_id``, ``relevance``."""

    query_id: list[str]
    iteration: list[str]
    doc_id: list[str]
    relevance: list[int]
    line: list[int]


def read_bytes(path: str | Path) -> bytes:
    """The whole file (standard input for ``-``); a missing file, a folder or a FIFO/device is an
    :class:`InputFileError`."""
    path = str(path)
    if path == STDIN:
        return sys.stdin.buffer.read()
    require_input_file(path)
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise unreadable(path, exc) from None


def lines(path: str, data: bytes) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of every line that is neither blank nor a comment."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(path, "the file is not UTF-8 text", data.count(b"\n", 0, exc.start) + 1) from None
    for number, raw in enumerate(text.split("\n"), start=1):
        # Fields split at ASCII blanks only, as trec_eval does (str.split would also split at U+00A0...).
        fields = raw.split() if raw.isascii() else [f.decode() for f in raw.encode().split()]
        if fields and fields[0][0] != "#":
            yield number, fields


def _columns(data: bytes, n_fields: int) -> tuple[list[list[bytes]], list[int]] | None:
    """The fields of a file whose every content line has exactly ``n_fields`` fields and no comment,
    as one list per field (``bytes.split`` at C speed; NumPy checks the line structure). None for
    anything else - then the line reader decides."""
    import numpy as np

    tokens = data.split()
    if not tokens or len(tokens) % n_fields:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    blank = (buf == 32) | (buf == 9) | (buf == 13) | (buf == 11) | (buf == 12)
    newline = buf == 10
    inside = ~(blank | newline)
    starts = np.flatnonzero(inside & ~np.concatenate(([False], inside[:-1])))
    line_of_start = np.searchsorted(np.flatnonzero(newline), starts)  # newlines before each field
    per_line = np.bincount(line_of_start)
    if per_line[per_line > 0].min() != n_fields or per_line.max() != n_fields or b"#" in data and any(
            t.startswith(b"#") for t in tokens[::n_fields]):
        return None
    return [tokens[i::n_fields] for i in range(n_fields)], (line_of_start[::n_fields] + 1).tolist()


def is_int(text: str) -> bool:
    """An integer as trec files write it (``3``, ``-1``, ``1e2``, ``2.0``)."""
    if text.isascii() and text.isdigit():
        return True
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and value == round(value)


def parse_score(path: str, number: int, text: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise InputFileError(path, f"score must be a number, got {text!r}", number) from None
    if not math.isfinite(score):
        raise InputFileError(path, f"score must be a finite number, got {text!r}", number)
    return score


def check_nul(path: str, data: bytes) -> None:
    """A NUL byte ends a C string: trec_eval would cut the id there. We refuse the file instead."""
    at = data.find(b"\x00")
    if at >= 0:
        raise InputFileError(path, "the file has a NUL byte", data.count(b"\n", 0, at) + 1)


def read_run(path: str | Path, *, data: bytes | None = None, full: bool = False) -> RunColumns:
    """A run file's columns (``full``: also rank and tag); :class:`InputFileError` for a line with
    fewer than 6 fields or a score that is not a finite number (the rank is never checked: ignored)."""
    path = str(path)
    data = read_bytes(path) if data is None else data
    check_nul(path, data)
    plain = None if full else _run_columns(data)
    if plain is not None:
        return plain
    out = RunColumns([], [], [], [], "", [] if full else None, [] if full else None)
    q_append, d_append, s_append, l_append = out.query_id.append, out.doc_id.append, out.score.append, out.line.append
    tag = ""
    for number, fields in lines(path, data):
        if len(fields) < 6:
            raise InputFileError(path, RUN_FIELDS.format(n=len(fields)), number)
        q_append(fields[0])  # the rank (fields[3]) is ignored, whatever it holds, as trec_eval ignores it
        d_append(fields[2])
        try:
            score = float(fields[4])
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            score = parse_score(path, number, fields[4])  # raises with the message
        s_append(score)
        l_append(number)
        tag = fields[5]
        if out.rank is not None and out.tag is not None:
            out.rank.append(fields[3])
            out.tag.append(tag)
    if not out.line:
        raise InputFileError(path, "the file is empty")
    out.run_id = tag
    return out


def _run_columns(data: bytes) -> RunColumns | None:
    """A plain run (6 fields on every line, plain numbers, UTF-8) read column-wise; None otherwise."""
    import numpy as np

    found = _columns(data, 6)
    if found is None:
        return None
    cols, line_numbers = found
    try:
        data.decode("utf-8")
        scores = np.array(cols[4]).astype(np.float64)
    except (UnicodeDecodeError, ValueError):
        return None
    if not np.isfinite(scores).all():
        return None
    return RunColumns(list(map(bytes.decode, cols[0])), list(map(bytes.decode, cols[2])), scores.tolist(),
                      line_numbers, cols[5][-1].decode())


def read_qrels(path: str | Path, *, data: bytes | None = None) -> QrelsColumns:
    """A qrels file's columns; :class:`InputFileError` for a line without exactly 4 fields (a file
    separated by ``;`` or ``,`` has 1) or a relevance that is not an integer."""
    path = str(path)
    data = read_bytes(path) if data is None else data
    check_nul(path, data)
    plain = _qrels_columns(data)
    if plain is not None:
        return plain
    out = QrelsColumns([], [], [], [], [])
    for number, fields in lines(path, data):
        if len(fields) != 4:
            raise InputFileError(path, QRELS_FIELDS.format(n=len(fields)), number)
        if not is_int(fields[3]):
            raise InputFileError(path, f"relevance must be an integer, got {fields[3]!r}", number)
        out.query_id.append(fields[0])
        out.iteration.append(fields[1])
        out.doc_id.append(fields[2])
        out.relevance.append(int(float(fields[3])))
        out.line.append(number)
    if not out.line:
        raise InputFileError(path, "the file is empty")
    return out


def _qrels_columns(data: bytes) -> QrelsColumns | None:
    """Plain qrels (4 fields on every line, integer labels written as digits, UTF-8) read column-wise."""
    import numpy as np

    found = _columns(data, 4)
    if found is None:
        return None
    cols, line_numbers = found
    try:
        data.decode("utf-8")
        labels = np.array(cols[3]).astype(np.int64)  # plain integers only: "1.0" or "1e2" go line by line
    except (UnicodeDecodeError, ValueError, OverflowError):
        return None
    return QrelsColumns(list(map(bytes.decode, cols[0])), list(map(bytes.decode, cols[1])),
                        list(map(bytes.decode, cols[2])), labels.tolist(), line_numbers)
