"""Reading tabular input files (CSV, TSV, JSONL, Parquet) into pandas DataFrames of text columns.

Every value is read as text (``str``), with no value turned into NaN by guessing; the importers
validate and convert. Surrounding spaces are trimmed from the columns an importer names (ids, types,
grades, numbers) and counted; free text (a query's text, a title, a body, a URL, a display name) is
kept verbatim. A UTF-8 byte-order mark, CRLF line ends, quoted
fields with commas or newlines and a trailing delimiter are accepted as spreadsheets write them.

Errors are :class:`~ndcg_labeling.errors.InputFileError` naming the file and the 1-based line (the
header is line 1). Line numbers of rows are only worked out when an error needs one.

Refused as a whole (never read with a value silently changed): anything but a regular file, a NUL
byte, a header naming a column twice, a CSV/TSV row with fewer fields than the header, JSON ``NaN``,
``Infinity`` or a number too large for a float (``1e309``), JSON nested deeper than Python can parse.
Values that are not text in a typed format (JSON ``true``, numbers, objects; Parquet binary, struct or
numeric columns) are read as text but remembered in :attr:`InputTable.non_text`, so that
:meth:`InputTable.check_ids` refuses them as ids (see :mod:`ndcg_labeling.io.ids`).
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io.files import require_input_file, unreadable
from ndcg_labeling.io.ids import MAX_ID_LENGTH, first_bad_id
from ndcg_labeling.scales import Scale, parse_grade

MESSAGE_LIMIT = 300  # characters of file content (a header, a value) quoted in one error message

TABULAR_FORMATS = ("csv", "tsv", "jsonl", "parquet")
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


def detect_format(path: str | Path, fmt: str | None = None, *, otherwise: str | None = None) -> str:
    """The file format, the one rule every importer follows: ``fmt`` if given (lower case), else the
    extension's (``.csv``, ``.tsv``/``.tab``, ``.jsonl``/``.ndjson``, ``.parquet``), else ``otherwise``
    (``import run`` reads any other file as TREC); without it an unknown extension is an error."""
    if fmt:
        return fmt.lower()
    suffix = Path(path).suffix.lower()
    if suffix not in _EXTENSIONS and otherwise is not None:
        return otherwise
    try:
        return _EXTENSIONS[suffix]
    except KeyError:
        known = ", ".join(sorted(_EXTENSIONS))
        raise InputFileError(str(path), f"cannot tell the format from the extension {suffix or '(none)'!r}; "
                             f"use one of {known} or pass --format") from None


@dataclass
class InputTable:
    """A file read as text columns. ``frame`` has one row per data row, in file order."""

    path: str
    fmt: str
    frame: pd.DataFrame
    _row_lines: list[int] | None = field(default=None, repr=False)
    # column -> (first data row, or None for the whole column; what it was) of a value that was not text
    non_text: dict[str, tuple[int | None, str]] = field(default_factory=dict, repr=False)
    trimmed: int = 0  # values whose surrounding spaces were trimmed (in the columns read with trimming)

    def line_of(self, row: int) -> int | None:
        """The 1-based file line where data row ``row`` (0-based) starts; None for Parquet."""
        if self.fmt == "parquet":
            return None
        if self._row_lines is None:
            self._row_lines = _row_start_lines(self.path, self.fmt)
        if 0 <= row < len(self._row_lines):
            return self._row_lines[row]
        return None

    def error(self, row: int, problem: str) -> InputFileError:
        """An error naming the file and the line of data row ``row`` (Parquet: the row number)."""
        line = self.line_of(row)
        if line is None:
            return InputFileError(self.path, f"row {row + 1}: {problem}")
        return InputFileError(self.path, problem, line=line)

    def check_ids(self, column: str, limit: int = MAX_ID_LENGTH) -> pd.Series:
        """The column ``column`` if every value is a valid id (:mod:`ndcg_labeling.io.ids`); else the
        error for the first bad one."""
        self.id_codes(column, limit)
        return self.frame[column]

    def id_codes(self, column: str, limit: int = MAX_ID_LENGTH) -> tuple[NDArray[np.intp], list[str]]:
        """``(codes, ids)``: the distinct values of ``column`` in order of first appearance and, per row,
        the position of its value among them, once every value is checked as an id (else the error
        for the first bad row). The rule is checked once per distinct value: a file naming each query
        a hundred times costs one check per query."""
        if column in self.non_text:
            row, what = self.non_text[column]
            if row is None:
                raise InputFileError(self.path, f"column {column}: ids must be strings, got {what}")
            raise self.error(row, f"{column} must be a string, got {what}")
        codes, uniques = pd.factorize(self.frame[column].astype(str), sort=False)
        distinct = pd.Series(uniques, dtype=object)
        found = first_bad_id(distinct, column, limit)
        if found is not None:
            # factorize lists values in order of first appearance: the first bad value's first row is
            # the first bad row of the file.
            raise self.error(int(np.flatnonzero(codes == found[0])[0]), found[1])
        return codes, distinct.tolist()

    def check_lengths(self, column: str, limit: int, what: str | None = None) -> None:
        """Refuse a value of ``column`` longer than ``limit`` characters (the width of its database column)."""
        if column not in self.frame.columns:
            return
        too_long = self.frame[column].str.len() > limit
        if too_long.any():
            row = int(too_long.to_numpy().nonzero()[0][0])
            length = len(self.frame[column].iloc[row])
            raise self.error(row, f"{what or column} is {length} characters long; the limit is {limit}")

    def parse_grades(self, column: str, scale: Scale) -> NDArray[np.int64]:
        """The grades of ``column`` through :func:`ndcg_labeling.scales.parse_grade` (the one grade
        parser), called once per distinct value. ``factorize`` lists the values in order of first
        appearance, so the first value refused is also the first bad row of the file."""
        codes, uniques = pd.factorize(self.frame[column], sort=False)
        parsed = np.empty(len(uniques), dtype=np.int64)
        for i, value in enumerate(uniques):
            try:
                parsed[i] = parse_grade(value, scale)
            except ValueError as exc:
                raise self.error(int(np.flatnonzero(codes == i)[0]), str(exc)) from None
        out: NDArray[np.int64] = parsed[codes]
        return out

    def parse_ranks(self, column: str, max_rank: int) -> NDArray[np.int64]:
        """``column`` as whole numbers from 1 to ``max_rank`` written with ASCII digits (``2``, ``2.0``,
        ``2e0``); ``inf``, ``1e20``, ``0x1``, ``1.5`` and other digits are refused with their row."""
        raw = self.frame[column]
        ranks = pd.to_numeric(raw, errors="coerce")
        bad = ranks.isna() | (ranks < 1) | (ranks != ranks.round()) | (ranks > max_rank)
        bad = bad | ~raw.str.fullmatch(r"[+]?[0-9]+(?:\.0*)?(?:[eE][+]?[0-9]+)?")
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise self.error(row, f"rank {_capped(raw.iloc[row])!r} is not a whole number from 1 to {max_rank}")
        out: NDArray[np.int64] = ranks.to_numpy().astype(np.int64)
        return out

    def require_columns(self, required: Sequence[str], optional: Sequence[str] = ()) -> None:
        """Check the header: every ``required`` column is present (the error lists the expected ones)."""
        missing = [c for c in required if c not in self.frame.columns]
        if missing:
            expected = ",".join(list(required) + [f"[{c}]" for c in optional])
            found = _capped(",".join(str(c) for c in self.frame.columns), f" ({len(self.frame.columns)} columns)")
            hint = ""
            if len(self.frame.columns) == 1 and any(d in found for d in ";|\t,"):
                hint = " (is the delimiter right?)"
            raise InputFileError(self.path, f"missing column(s) {', '.join(missing)}: expected {expected}, "
                                 f"found {found or '(none)'}{hint}", line=1 if self.fmt in ("csv", "tsv") else None)


def _capped(text: str, note: str = "") -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + "..." + note


def decode_text(path: str, data: bytes) -> str:
    """``data`` as UTF-8 text (a byte-order mark dropped); the error names the line of a NUL byte or of
    the first byte that is not UTF-8."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputFileError(path, "NUL byte (0x00) in the file; is it binary, or UTF-16?",
                             line=data[:nul].count(b"\n") + 1)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x})", line=line) from None


def _row_start_lines(path: str, fmt: str) -> list[int]:
    """Start line of every data row, following quoted newlines as the csv module does."""
    text = decode_text(path, Path(path).read_bytes())
    if fmt == "trec":  # blank lines and comment lines are skipped, as the TREC readers skip them
        return [i + 1 for i, line in enumerate(text.split("\n")) if line.split() and line.split()[0][0] != "#"]
    if fmt == "jsonl":
        return [i + 1 for i, line in enumerate(text.splitlines()) if line.strip()]
    _allow_long_fields()
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t" if fmt == "tsv" else ",")
    starts: list[int] = []
    previous_end = 0
    for index, _row in enumerate(reader):
        if index > 0 and _row:
            starts.append(previous_end + 1)
        previous_end = reader.line_num
    return starts


def read_table(path: str | Path, fmt: str | None = None, *, trim: Collection[str] | None = None) -> InputTable:
    """Read ``path`` as text columns. Raises InputFileError for unreadable, empty or malformed files.

    Spaces and tabs around a value are trimmed in the columns named in ``trim`` (every column when
    None: ids, grades, numbers), and :attr:`InputTable.trimmed` counts the values that changed; the
    other columns keep their text verbatim (free text: a query's text, a title, a body). A CSV/TSV
    cell carrying the spreadsheet mark of :mod:`ndcg_labeling.spreadsheet` (``'=...``) is read as the
    text it marks, before any trimming."""
    path_s = str(path)
    fmt = detect_format(path_s, fmt)
    if fmt not in TABULAR_FORMATS:
        raise InputFileError(path_s, f"unknown format {fmt!r}; expected one of {', '.join(TABULAR_FORMATS)}")
    p = Path(path_s)
    require_input_file(p)
    non_text: dict[str, tuple[int | None, str]] = {}
    row_lines: list[int] | None = None
    data = b""
    if fmt == "parquet":
        frame = _read_parquet(path_s, non_text)
    else:
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise unreadable(path_s, exc) from None
        if not data.strip():
            raise InputFileError(path_s, "the file is empty")
        text = decode_text(path_s, data)
        if fmt == "jsonl":
            frame, row_lines = _read_jsonl(path_s, text, non_text)
        else:
            frame = _read_delimited(path_s, text, fmt)
    frame.columns = [str(c).strip().lstrip("\ufeff") for c in frame.columns]
    # A trailing delimiter gives an unnamed, empty last column: drop it.
    unnamed = [c for c in frame.columns if c == "" or c.startswith("Unnamed: ")]
    for c in unnamed:
        if (frame[c].astype(str).str.strip() == "").all():
            frame = frame.drop(columns=[c])
    if frame.empty:
        raise InputFileError(path_s, "the file has a header but no rows" if fmt in ("csv", "tsv")
                             else "the file has no rows")
    frame = frame.reset_index(drop=True)
    if fmt in ("csv", "tsv"):
        _check_short_rows(path_s, text, "\t" if fmt == "tsv" else ",", frame)
        restored = b"'" in data and _restore_marked(frame)
        if not restored and not _may_have_edge_spaces(data, "\t" if fmt == "tsv" else ","):
            return InputTable(path_s, fmt, frame)  # nothing to trim: skip the pass
    trimmed = 0
    for c in frame.columns:
        if trim is not None and c not in trim:
            continue
        values = frame[c].astype(str)
        frame[c] = values.str.strip()
        trimmed += int((frame[c] != values).sum())
    return InputTable(path_s, fmt, frame, row_lines, non_text, trimmed=trimmed)


def _restore_marked(frame: pd.DataFrame) -> bool:
    """Undo :func:`ndcg_labeling.spreadsheet.neutralise` in every cell that starts with its mark;
    whether any cell changed."""
    from ndcg_labeling.spreadsheet import restore

    changed = False
    for c in frame.columns:
        col = frame[c].astype(str)
        marked = col.str.startswith("'")
        if marked.any():
            fixed = col[marked].map(restore)
            changed = changed or bool((fixed != col[marked]).any())
            frame.loc[marked, c] = fixed
    return changed


def _allow_long_fields() -> None:
    # The csv module refuses fields over 128 KiB by default; a document body may be longer.
    csv.field_size_limit(2**31 - 1)


def _header_fields(text: str, sep: str) -> list[str]:
    _allow_long_fields()
    first = next(csv.reader(io.StringIO(text, newline=""), delimiter=sep), [])
    return [f.strip().lstrip("\ufeff").strip() for f in first]


def _check_header(path: str, text: str, sep: str) -> None:
    """Refuse a header that names a column twice (pandas would rename the second to ``name.1``)."""
    seen: set[str] = set()
    for name in _header_fields(text, sep):
        if name and name in seen:
            raise InputFileError(path, f"the header names the column {_capped(name)!r} twice", line=1)
        seen.add(name)


def _check_short_rows(path: str, text: str, sep: str, frame: pd.DataFrame) -> None:
    """Refuse a row with fewer fields than the header (pandas pads it with empty values).

    A short row always leaves the last column empty, so the file is only re-read with the csv module
    when some value of the last column is empty."""
    if (frame[frame.columns[-1]] == "").any():
        _check_row_lengths(path, text, sep, short=True)


def _check_row_lengths(path: str, text: str, sep: str, *, short: bool) -> None:
    """Refuse the first row with fewer fields than the header (``short``) or with more non-empty ones."""
    header = _header_fields(text, sep)
    while header and header[-1] == "":
        header.pop()  # a trailing delimiter on the header line only
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    previous_end = 0
    for index, row in enumerate(reader):
        if index > 0 and row:
            if short and len(row) < len(header):
                raise InputFileError(path, f"{len(row)} field(s) where the header has {len(header)}: a value is "
                                     f"missing (quote values that hold the delimiter)", line=previous_end + 1)
            if not short and len(row) > len(header) and any(v.strip() for v in row[len(header):]):
                hint = "is the delimiter right?" if len(header) == 1 else "quote values that hold the delimiter"
                raise InputFileError(path, f"{len(row)} fields where the header has {len(header)} ({hint})",
                                     line=previous_end + 1)
        previous_end = reader.line_num


def _may_have_edge_spaces(data: bytes, delimiter: str) -> bool:
    """Whether some field may start or end with white space: a space or tab next to a delimiter, a
    quote, a line end or the start or end of the file. One NumPy pass over the bytes instead of a
    strip of every value (both white space bytes and the neighbours looked at are ASCII, so the UTF-8
    bytes answer as the text would; a byte-order mark counts as a start)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    blank = buf == 32
    if delimiter != "\t":
        blank |= buf == 9
    at = np.flatnonzero(blank)
    if not len(at):
        return False
    if at[0] == 0 or at[-1] == len(buf) - 1:
        return True
    d = ord(delimiter)
    before, after = buf[at - 1], buf[at + 1]
    starts = (before == d) | (before == 10) | (before == 34) | (before == 0xBF)  # 0xBF: the end of a BOM
    ends = (after == d) | (after == 10) | (after == 13) | (after == 34)
    return bool((starts | ends).any())


#: header fields beyond which a CSV/TSV is read with the csv module into one block of text cells:
#: pandas' parser builds one Series per column (a million-column header took minutes to refuse)
WIDE_HEADER = 2_000


def _read_wide(path: str, text: str, sep: str, header: list[str]) -> pd.DataFrame:
    """What :func:`_read_delimited`'s ``pd.read_csv`` gives for a wide file, read with the csv module:
    blank lines skipped, unnamed columns named ``Unnamed: i``, short rows padded with "" (refused
    later, as pandas' padding is), a row longer than the header refused unless its extra values are
    empty (then cut, as pandas cuts it)."""
    rows = [row for row in csv.reader(io.StringIO(text, newline=""), delimiter=sep)][1:]
    rows = [row for row in rows if row]
    width = len(header)
    if any(len(row) > width for row in rows):
        _check_row_lengths(path, text, sep, short=False)
    cells = np.full((len(rows), width), "", dtype=object)
    for i, row in enumerate(rows):
        cells[i, : min(len(row), width)] = row[:width]
    names = [name if name else f"Unnamed: {i}" for i, name in enumerate(header)]
    return pd.DataFrame(cells, columns=names, dtype=object)  # dtype: no per-column type inference


def _read_delimited(path: str, text: str, fmt: str) -> pd.DataFrame:
    sep = "\t" if fmt == "tsv" else ","
    _check_header(path, text, sep)
    fields = next(csv.reader(io.StringIO(text, newline=""), delimiter=sep), [])
    if len(fields) > WIDE_HEADER:
        return _read_wide(path, text, sep, fields)
    try:
        # With index_col=False pandas drops the extra values of a row longer than the header, with only a
        # warning: such a row is refused below unless its extra values are empty (a trailing delimiter).
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            frame = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False,
                                skipinitialspace=False, engine="c", index_col=False)
        if any(issubclass(w.category, pd.errors.ParserWarning) for w in caught):
            _check_row_lengths(path, text, sep, short=False)
        return frame
    except pd.errors.ParserError as exc:
        msg = str(exc).strip().splitlines()[-1]
        found = re.search(r"line (\d+)", msg)
        line = int(found.group(1)) if found else None
        header = text.split("\n", 1)[0]
        hint = " (is the delimiter right?)" if sep not in header and any(d in header for d in ";|\t,") else ""
        raise InputFileError(path, f"malformed {fmt.upper()}: {_capped(msg)}{hint}", line=line) from None
    except pd.errors.EmptyDataError:
        raise InputFileError(path, "the file is empty") from None


def _json_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON value")


class _JsonNumber(str):
    """A JSON number with a fraction or an exponent, kept as the text the file wrote: a grade column
    is read exactly (``1.9999999999999999`` is not 2), and an id column still refuses it as a number."""


def _json_float(text: str) -> _JsonNumber:
    if float(text) in (float("inf"), float("-inf")):
        raise ValueError(f"the number {_capped(text, '')} is too large")
    return _JsonNumber(text)


def _json_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(f"the key {_capped(twice)!r} appears twice")
    return out


_JSON_KINDS = {bool: "JSON boolean", int: "JSON number", float: "JSON number", _JsonNumber: "JSON number",
               dict: "JSON object", list: "JSON array"}


def _read_jsonl(path: str, text: str, non_text: dict[str, tuple[int | None, str]]) -> tuple[pd.DataFrame, list[int]]:
    """The records of a JSON Lines text as text columns, and the line of each record."""
    import json

    records: list[dict[str, str]] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, parse_constant=_json_constant, parse_float=_json_float,
                                object_pairs_hook=_json_object)
        except json.JSONDecodeError as exc:
            raise InputFileError(path, f"not a JSON object: {exc.msg}", line=number) from None
        except ValueError as exc:
            raise InputFileError(path, f"not valid JSON: {exc}", line=number) from None
        except RecursionError:
            raise InputFileError(path, "not a JSON object: nested too deeply", line=number) from None
        if not isinstance(record, dict):
            raise InputFileError(path, f"not a JSON object: got {type(record).__name__}", line=number)
        row: dict[str, str] = {}
        for k, v in record.items():
            if isinstance(v, str) and not isinstance(v, _JsonNumber):
                if "\x00" in v:
                    raise InputFileError(path, f"NUL character (\\u0000) in the value of {_capped(k)!r}", line=number)
                row[k] = v
                continue
            if v is not None and k not in non_text:
                shown = str.__str__(v) if isinstance(v, _JsonNumber) else json.dumps(v)
                non_text[k] = (len(records), f"{_JSON_KINDS.get(type(v), 'JSON value')} {_capped(shown, '')}")
            row[k] = ("" if v is None else json.dumps(v) if isinstance(v, (dict, list))
                      else str.__str__(v) if isinstance(v, _JsonNumber) else str(v))
        records.append(row)
        lines.append(number)
    if not records:
        raise InputFileError(path, "the file has no rows")
    return pd.DataFrame.from_records(records).fillna(""), lines


def _read_parquet(path: str, non_text: dict[str, tuple[int | None, str]]) -> pd.DataFrame:
    with open(path, "rb") as fh:
        head = fh.read(4)
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 4))
        tail = fh.read(4)
    if size < 12 or head != b"PAR1" or tail != b"PAR1":
        raise InputFileError(path, "not a readable Parquet file: truncated, or not Parquet (no PAR1 marks at start and end)")
    try:
        import pyarrow.parquet as pq

        schema = pq.read_schema(path)
        names = [str(n).strip() for n in schema.names]
        twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if twice is not None:
            raise InputFileError(path, f"the file names the column {_capped(twice)!r} twice")
        frame = pd.read_parquet(path)
    except InputFileError:
        raise
    except Exception as exc:  # pyarrow raises many types for a broken file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputFileError(path, f"not a readable Parquet file: {_capped(first)}") from None
    for f in schema:
        kind = str(f.type)
        if kind not in ("string", "large_string", "string_view", "null") and kind != "dictionary<values=string, indices=int32, ordered=0>":
            non_text[str(f.name).strip()] = (None, f"a Parquet {_capped(kind, '')} column")
    out = pd.DataFrame(index=frame.index)
    for c in frame.columns:
        col = frame[c]
        nul = (col.fillna("").astype(str).str.contains("\x00", regex=False) if str(c) not in non_text
               else pd.Series(False, index=col.index))
        if nul.any():
            row = int(nul.to_numpy().nonzero()[0][0])
            raise InputFileError(path, f"row {row + 1}: NUL byte (0x00) in column {_capped(str(c))!r}")
        if pd.api.types.is_float_dtype(col):
            # 2.0 -> "2", NaN -> "" so text rules apply the same way as for CSV
            out[c] = [("" if pd.isna(v) else (str(int(v)) if float(v).is_integer() else repr(float(v)))) for v in col]
        else:
            out[c] = col.map(lambda v: "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v))
    return out
