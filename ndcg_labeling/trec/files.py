"""Reading TREC run and qrels files as trec_eval 10 does, into plain columns (no pandas).

Run line:   ``query_id  Q0  doc_id  rank  score  tag``  (fields after the sixth are ignored, as trec_eval
            does - its own test run ``results.trunc`` has them; fewer fields are an error)
Qrels line: ``query_id  iteration  doc_id  relevance``  (exactly four fields; relevance an integer,
            negative values allowed: trec_eval reads them as "in the pool, not judged")

Fields are separated by any run of blanks. Blank lines and comment lines (first non-blank character
``#``, as trec_eval 10 skips them) are skipped; a ``#`` inside a field is part of it. ``-`` names
standard input. Every problem is one :class:`~ndcg_labeling.errors.InputFileError` naming the file
and its 1-based line. Large files are read by the compiled scanner (:mod:`ndcg_labeling.trec.fast`);
this module's line-by-line reader is the reference and the fallback, and gives the importers their
pandas frames (:func:`read_trec_run`, :func:`read_trec_qrels`; pandas is imported only there).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io.files import (  # the one rule for input files (docs/input-rules.md)
    require_input_file,
    unreadable,
)

if TYPE_CHECKING:
    import pandas as pd

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


BOM = b"\xef\xbb\xbf"


def without_bom(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 byte-order mark (docs/input-rules.md: a BOM is fine), which would
    otherwise be part of the first line's query id."""
    return data[len(BOM):] if data.startswith(BOM) else data


def read_bytes(path: str | Path) -> bytes:
    """The whole file (standard input for ``-``), without a leading byte-order mark; a missing file, a
    folder or a FIFO/device is an :class:`InputFileError`."""
    path = str(path)
    if path == STDIN:
        return without_bom(sys.stdin.buffer.read())
    require_input_file(path)
    try:
        with open(path, "rb") as fh:
            return without_bom(fh.read())
    except OSError as exc:
        raise unreadable(path, exc) from None


def lines(path: str, data: bytes) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of every line that is neither blank nor a comment."""
    try:
        text = without_bom(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(path, "the file is not UTF-8 text", data.count(b"\n", 0, exc.start) + 1) from None
    for number, raw in enumerate(text.split("\n"), start=1):
        # Fields split at ASCII blanks only, as trec_eval does (str.split would also split at U+00A0...).
        fields = raw.split() if raw.isascii() else [f.decode() for f in raw.encode().split()]
        if fields and fields[0][0] != "#":
            yield number, fields


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


def read_qrels(path: str | Path, *, data: bytes | None = None) -> QrelsColumns:
    """A qrels file's columns; :class:`InputFileError` for a line without exactly 4 fields (a file
    separated by ``;`` or ``,`` has 1) or a relevance that is not an integer."""
    path = str(path)
    rows = _qrels_lines(path, read_bytes(path) if data is None else data, is_int)
    return QrelsColumns([f[0] for _, f in rows], [f[1] for _, f in rows], [f[2] for _, f in rows],
                        [int(float(f[3])) for _, f in rows], [number for number, _ in rows])


def _qrels_lines(path: str, data: bytes, integer: Callable[[str], bool]) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of a qrels file, each line of 4 fields with a relevance that ``integer``
    accepts; :class:`InputFileError` for the first line that is not, or for a file without lines."""
    check_nul(path, data)
    rows = []
    for number, fields in lines(path, data):
        if len(fields) != 4:
            raise InputFileError(path, QRELS_FIELDS.format(n=len(fields)), number)
        if not integer(fields[3]):
            raise InputFileError(path, f"relevance must be an integer, got {fields[3]!r}", number)
        rows.append((number, fields))
    if not rows:
        raise InputFileError(path, "the file is empty")
    return rows


def read_trec_run(path: str | Path) -> pd.DataFrame:
    """Read a TREC run file.

    Returns a DataFrame with columns ``query_id`` (str), ``doc_id`` (str), ``rank`` (str: the field as
    written, never checked or used: the rank column is ignored, as trec_eval ignores it; documents are
    ranked by score), ``score`` (float64) and ``tag`` (str), one row per line, in file order (the ``Q0``
    column is dropped). Raises :class:`~ndcg_labeling.errors.InputFileError` naming the file and line
    for an unreadable or non-UTF-8 file, an empty file, a line with fewer than 6 fields, or a score
    that is not a finite number.
    """
    import pandas as pd

    run = read_run(path, full=True)
    return pd.DataFrame({"query_id": run.query_id, "doc_id": run.doc_id, "rank": run.rank,
                         "score": run.score, "tag": run.tag}).astype({"score": "float64"})


def read_trec_qrels(path: str | Path, *, relevance_text: bool = False) -> pd.DataFrame:
    """Read a TREC qrels file.

    Returns a DataFrame with columns ``query_id`` (str), ``iteration`` (str), ``doc_id`` (str) and
    ``relevance`` (int64), one row per line, in file order. Raises
    :class:`~ndcg_labeling.errors.InputFileError` naming the file and line for an unreadable or
    non-UTF-8 file, an empty file, a line without exactly 4 fields, or a relevance that is not an
    integer. With ``relevance_text`` the relevance is the file's text, whose exact decimal value must
    be an integer (``import judgments`` reads it with the grade parser, which quotes the value as
    written: never through a float, so ``1e400`` is the integer 10**400).
    """
    import pandas as pd

    columns = ["query_id", "iteration", "doc_id", "relevance"]
    if not relevance_text:
        q = read_qrels(path)
        large = [i for i, r in enumerate(q.relevance) if abs(r) >= 2**63]
        if large:
            raise InputFileError(str(path), f"relevance {q.relevance[large[0]]} is too large", q.line[large[0]])
        return pd.DataFrame({"query_id": q.query_id, "iteration": q.iteration, "doc_id": q.doc_id,
                             "relevance": pd.array(q.relevance, dtype="int64")}, columns=columns)
    rows = _qrels_lines(str(path), read_bytes(str(path)), _exact_integer)
    return pd.DataFrame([fields for _, fields in rows], columns=columns, dtype=object)


def _exact_integer(text: str) -> bool:
    """Whether ``text`` is a decimal number (``3``, ``-1``, ``2.0``, ``1e400``) whose exact value is an integer."""
    from decimal import Decimal

    if re.fullmatch(r"[+-]?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?", text, re.ASCII) is None:
        return False
    return Decimal(text) == Decimal(text).to_integral_value()
