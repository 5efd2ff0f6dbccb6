"""pandas frames of TREC run and qrels files, for the importers (``eval`` reads with :mod:`.files`;
``import run`` reads a plain run with NumPy, :mod:`.columns`, and any other run here).

Run line:   ``query_id  Q0  doc_id  rank  score  tag``  (trec_eval ignores fields after the sixth -
            its own test run ``results.trunc`` has them - and so do we; fewer fields are an error)
Qrels line: ``query_id  iteration  doc_id  relevance``  (exactly four fields; relevance an integer,
            negative values allowed: trec_eval reads them as "in the pool, not judged")

The fast path is pandas' C parser. When it fails, or a check on the parsed columns fails, the file is
scanned line by line to report the first bad line exactly (1-based, blank lines counted), so a
valid 10-million-line file is read at C speed and a bad one gets a precise message. A file with
comment lines (first non-blank character ``#``, skipped as trec_eval 10 does) is read by the
line reader of :mod:`ndcg_labeling.trec.files`, which shares the rules and the messages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io.files import require_input_file
from ndcg_labeling.trec import files

RUN_COLUMNS = ["query_id", "q0", "doc_id", "rank", "score", "tag"]
QRELS_COLUMNS = ["query_id", "iteration", "doc_id", "relevance"]


def read_trec_run(path: str | Path) -> pd.DataFrame:
    """Read a TREC run file.

    Returns a DataFrame with columns ``query_id`` (str), ``doc_id`` (str), ``rank`` (str: the field as
    written, never checked or used: the rank column is ignored, as trec_eval ignores it; documents are
    ranked by score), ``score`` (float64) and ``tag`` (str), one row per line, in file order (the ``Q0``
    column is dropped). Raises :class:`~ndcg_labeling.errors.InputFileError` naming the file and line
    for an unreadable or non-UTF-8 file, an empty file, a line with fewer than 6 fields, or a score
    that is not a finite number.
    """
    if _has_comments(path):
        run = files.read_run(path, full=True)
        return pd.DataFrame({"query_id": run.query_id, "doc_id": run.doc_id, "rank": run.rank,
                             "score": np.asarray(run.score, np.float64), "tag": run.tag})
    return _read_run(path, RUN_COLUMNS)[["query_id", "doc_id", "rank", "score", "tag"]]


def _has_comments(path: str | Path) -> bool:
    """Whether a line of the file starts (after blanks) with ``#``; unreadable files: False (the
    readers report them)."""
    try:
        data = files.read_bytes(str(path))
    except InputFileError:
        return False
    return re.search(rb"(?m)^[ \t\r\f\v]*#", data) is not None


def read_trec_qrels(path: str | Path, *, relevance_text: bool = False) -> pd.DataFrame:
    """Read a TREC qrels file.

    Returns a DataFrame with columns ``query_id`` (str), ``iteration`` (str), ``doc_id`` (str) and
    ``relevance`` (int64), one row per line, in file order. Raises
    :class:`~ndcg_labeling.errors.InputFileError` naming the file and line for an unreadable or
    non-UTF-8 file, an empty file, a line without exactly 4 fields, or a relevance that is not an
    integer. With ``relevance_text`` the relevance is the file's text, unchecked (``import judgments``
    reads it exactly with the grade parser, which quotes the value as written: never through a float).
    """
    path = str(path)
    if _has_comments(path):
        if relevance_text:
            rows = []
            for number, fields in files.lines(path, files.read_bytes(path)):
                problem = _qrels_text_problem(fields)
                if problem is not None:
                    raise InputFileError(path, problem, number)
                rows.append(fields)
            if not rows:
                raise InputFileError(path, "the file is empty")
            return pd.DataFrame(rows, columns=QRELS_COLUMNS, dtype=object)
        q = files.read_qrels(path)
        return pd.DataFrame({"query_id": q.query_id, "iteration": q.iteration, "doc_id": q.doc_id,
                             "relevance": np.asarray(q.relevance, np.int64)})
    if relevance_text:
        frame = _read_table(path, QRELS_COLUMNS, QRELS_COLUMNS, {}, _qrels_text_problem, 4, False)
        rel = frame["relevance"].astype(str)
        if not rel.str.fullmatch(_EXACT_NUMBER).all():
            _raise_first_bad_line(path, _qrels_text_problem)
        inexact = rel.str.contains(r"[.eE]")  # only these need the exact check
        if inexact.any() and any(_qrels_text_problem(["", "", "", v]) for v in rel[inexact].unique()):
            _raise_first_bad_line(path, _qrels_text_problem)
        return frame
    frame = _read_table(path, QRELS_COLUMNS, QRELS_COLUMNS, {"relevance": "float64"}, _qrels_line_problem, 4, False)
    rel = frame["relevance"].to_numpy()
    bad = ~np.isfinite(rel) | (rel != np.round(rel)) | (np.abs(rel) >= 2.0**63)
    if bad.any():
        _raise_first_bad_line(path, _qrels_line_problem)
    frame["relevance"] = rel.astype(np.int64)
    return frame


def _read_run(path: str | Path, wanted: Sequence[str], categorical: bool = False) -> pd.DataFrame:
    path = str(path)
    frame = _read_table(
        path, RUN_COLUMNS, wanted, {"score": "float64"}, _run_line_problem, 6, categorical
    )
    if "score" in frame:
        if not np.isfinite(frame["score"].to_numpy()).all():
            _raise_first_bad_line(path, _run_line_problem)
    return frame


def _read_table(
    path: str,
    names: list[str],
    wanted: Sequence[str],
    numeric: dict[str, str],
    line_problem: Callable[[list[str]], str | None],
    n_fields: int,
    categorical: bool,
) -> pd.DataFrame:
    require_input_file(path)
    last = names[n_fields - 1]
    # The last field is always read, so a short line shows up as a missing value there.
    usecols = [i for i, c in enumerate(names) if c in wanted or c == last]
    text = "category" if categorical else "str"
    dtype = {i: numeric.get(names[i], "category" if names[i] == last and last not in wanted else text) for i in usecols}
    try:
        frame = pd.read_csv(
            path,
            sep=r"\s+",
            header=None,
            # qrels: exactly 4 fields (a 5th is a parse error); runs: fields after the 6th are ignored
            # (positional usecols; named ones would make pandas reject the longer lines).
            usecols=None if len(names) == 4 else usecols,
            dtype=dtype,
            engine="c",
            encoding="utf-8",
            keep_default_na=False,  # doc ids such as "NA" or "null" stay strings
            na_values=[],
            # Scores as trec_eval's strtod and the NumPy reader parse them (correctly rounded); the
            # default parser can be one unit in the last place off for 16+ digits or an exponent.
            float_precision="round_trip",
        )
    except pd.errors.EmptyDataError:
        raise InputFileError(path, "the file is empty") from None
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError):
        _raise_first_bad_line(path, line_problem)
        raise  # pragma: no cover - the scan above always raises
    if frame.empty:
        raise InputFileError(path, "the file is empty")
    if len(frame.columns) > len(names):  # every line has more fields than a qrels line (a 5th column)
        _raise_first_bad_line(path, line_problem)
    frame.columns = [names[i] for i in frame.columns]
    if last not in frame.columns:  # every line too short (a file separated by ';' or ','): no such column
        _raise_first_bad_line(path, line_problem)
    tail = frame[last]
    if isinstance(tail.dtype, pd.CategoricalDtype):
        short = bool(tail.isna().any()) or "" in tail.cat.categories
    else:
        short = bool(tail.isna().any()) or (tail.dtype != np.float64 and bool((tail == "").any()))
    if short:
        _raise_first_bad_line(path, line_problem)
    return frame[list(wanted)].copy() if list(frame.columns) != list(wanted) else frame


def _is_int(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and value == round(value)


def _run_line_problem(fields: list[str]) -> str | None:
    if len(fields) < 6:
        return (
            f"expected 6 whitespace-separated fields (query_id Q0 doc_id rank score tag), got {len(fields)}"
        )
    try:  # fields[3], the rank, is ignored
        score = float(fields[4])
    except ValueError:
        return f"score must be a number, got {fields[4]!r}"
    if not math.isfinite(score):
        return f"score must be a finite number, got {fields[4]!r}"
    return None


def _qrels_line_problem(fields: list[str]) -> str | None:
    if len(fields) != 4:
        return f"expected 4 whitespace-separated fields (query_id iteration doc_id relevance), got {len(fields)}"
    if not _is_int(fields[3]):
        return f"relevance must be an integer, got {fields[3]!r}"
    if abs(float(fields[3])) >= 2.0**63:
        return f"relevance {fields[3]} is too large"
    return None


_EXACT_NUMBER = r"[+-]?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"


def _qrels_text_problem(fields: list[str]) -> str | None:
    """A qrels line's problem for ``relevance_text``: four fields and a relevance whose exact decimal
    value is an integer (the grade parser then checks the scale, quoting the text)."""
    if len(fields) != 4:
        return f"expected 4 whitespace-separated fields (query_id iteration doc_id relevance), got {len(fields)}"
    from decimal import Decimal

    text = fields[3]
    if re.fullmatch(_EXACT_NUMBER, text, re.ASCII) is None or Decimal(text) != Decimal(text).to_integral_value():
        return f"relevance must be an integer, got {text!r}"
    return None


def _raise_first_bad_line(path: str, line_problem: Callable[[list[str]], str | None]) -> None:
    """Scan the file and raise InputFileError for its first bad line."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputFileError(path, "the file is not UTF-8 text", number) from None
            fields = text.split()
            if not fields:
                continue
            problem = line_problem(fields)
            if problem is not None:
                raise InputFileError(path, problem, number)
    raise InputFileError(path, "the file could not be parsed")
