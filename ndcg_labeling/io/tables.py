"""Reading tabular input files (CSV, TSV, JSONL, Parquet) into pandas DataFrames of text columns.

Every value is read as text (``str``), stripped of surrounding spaces, with no value turned into NaN
by guessing; the importers validate and convert. A UTF-8 byte-order mark, CRLF line ends, quoted
fields with commas or newlines and a trailing delimiter are accepted as spreadsheets write them.

Errors are :class:`~ndcg_labeling.errors.InputFileError` naming the file and the 1-based line (the
header is line 1). Line numbers of rows are only worked out when an error needs one.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ndcg_labeling.errors import InputFileError

TABULAR_FORMATS = ("csv", "tsv", "jsonl", "parquet")
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


def detect_format(path: str | Path, fmt: str | None = None) -> str:
    """The file format: ``fmt`` if given, else from the extension."""
    if fmt:
        return fmt.lower()
    suffix = Path(path).suffix.lower()
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

    def require_columns(self, required: Sequence[str], optional: Sequence[str] = ()) -> None:
        """Check the header: every ``required`` column is present (the error lists the expected ones)."""
        missing = [c for c in required if c not in self.frame.columns]
        if missing:
            expected = ",".join(list(required) + [f"[{c}]" for c in optional])
            found = ",".join(str(c) for c in self.frame.columns)
            hint = ""
            if len(self.frame.columns) == 1 and any(d in found for d in ";|\t,"):
                hint = " (is the delimiter right?)"
            raise InputFileError(self.path, f"missing column(s) {', '.join(missing)}: expected {expected}, "
                                 f"found {found or '(none)'}{hint}", line=1 if self.fmt in ("csv", "tsv") else None)


def _decode_check(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x})", line=line) from None


def _row_start_lines(path: str, fmt: str) -> list[int]:
    """Start line of every data row, following quoted newlines as the csv module does."""
    text = _decode_check(path, Path(path).read_bytes())
    if fmt in ("jsonl", "trec"):
        return [i + 1 for i, line in enumerate(text.splitlines()) if line.strip()]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t" if fmt == "tsv" else ",")
    starts: list[int] = []
    previous_end = 0
    for index, _row in enumerate(reader):
        if index > 0 and _row:
            starts.append(previous_end + 1)
        previous_end = reader.line_num
    return starts


def read_table(path: str | Path, fmt: str | None = None) -> InputTable:
    """Read ``path`` as text columns. Raises InputFileError for unreadable, empty or malformed files."""
    path_s = str(path)
    fmt = detect_format(path_s, fmt)
    if fmt not in TABULAR_FORMATS:
        raise InputFileError(path_s, f"unknown format {fmt!r}; expected one of {', '.join(TABULAR_FORMATS)}")
    p = Path(path_s)
    if not p.is_file():
        raise InputFileError(path_s, "no such file")
    if fmt == "parquet":
        frame = _read_parquet(path_s)
    else:
        data = p.read_bytes()
        if not data.strip():
            raise InputFileError(path_s, "the file is empty")
        text = _decode_check(path_s, data)
        frame = _read_jsonl(path_s, text) if fmt == "jsonl" else _read_delimited(path_s, text, fmt)
    frame.columns = [str(c).strip().lstrip("\ufeff") for c in frame.columns]
    # A trailing delimiter gives an unnamed, empty last column: drop it.
    unnamed = [c for c in frame.columns if c == "" or c.startswith("Unnamed: ")]
    for c in unnamed:
        if (frame[c].astype(str).str.strip() == "").all():
            frame = frame.drop(columns=[c])
    if frame.empty and fmt in ("csv", "tsv"):
        raise InputFileError(path_s, "the file has a header but no rows")
    if frame.empty:
        raise InputFileError(path_s, "the file has no rows")
    if fmt in ("csv", "tsv") and not _may_have_edge_spaces(text, "\t" if fmt == "tsv" else ","):
        return InputTable(path_s, fmt, frame.reset_index(drop=True))  # nothing to strip: skip the pass
    for c in frame.columns:
        frame[c] = frame[c].astype(str).str.strip()
    return InputTable(path_s, fmt, frame.reset_index(drop=True))


def _may_have_edge_spaces(text: str, delimiter: str) -> bool:
    """Whether some field may start or end with white space: a space or tab next to a delimiter, a
    quote or a line end. One regex scan of the text instead of a strip of every value."""
    d = re.escape(delimiter)
    edge = "[ \t]" if delimiter != "\t" else " "
    return re.search(rf'(?:^|[{d}\n"]){edge}|{edge}(?:$|[{d}\r\n"])', text, re.MULTILINE) is not None


def _read_delimited(path: str, text: str, fmt: str) -> pd.DataFrame:
    sep = "\t" if fmt == "tsv" else ","
    try:
        return pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False,
                           skipinitialspace=False, engine="c", index_col=False)
    except pd.errors.ParserError as exc:
        msg = str(exc).strip().splitlines()[-1]
        line = None
        found = re.search(r"line (\d+)", msg)
        if found:
            line = int(found.group(1))
        raise InputFileError(path, f"malformed {fmt.upper()}: {msg}", line=line) from None
    except pd.errors.EmptyDataError:
        raise InputFileError(path, "the file is empty") from None


def _read_jsonl(path: str, text: str) -> pd.DataFrame:
    import json

    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(path, f"not a JSON object: {exc.msg}", line=number) from None
        if not isinstance(record, dict):
            raise InputFileError(path, f"not a JSON object: got {type(record).__name__}", line=number)
        records.append({k: ("" if v is None else (v if isinstance(v, str) else json.dumps(v) if isinstance(v, (dict, list)) else str(v)))
                        for k, v in record.items()})
    if not records:
        raise InputFileError(path, "the file has no rows")
    return pd.DataFrame.from_records(records).fillna("")


def _read_parquet(path: str) -> pd.DataFrame:
    with open(path, "rb") as fh:
        head = fh.read(4)
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 4))
        tail = fh.read(4)
    if size < 12 or head != b"PAR1" or tail != b"PAR1":
        raise InputFileError(path, "not a readable Parquet file: truncated, or not Parquet (no PAR1 marks at start and end)")
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a broken file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputFileError(path, f"not a readable Parquet file: {first}") from None
    out = pd.DataFrame(index=frame.index)
    for c in frame.columns:
        col = frame[c]
        if pd.api.types.is_float_dtype(col):
            # 2.0 -> "2", NaN -> "" so text rules apply the same way as for CSV
            out[c] = [("" if pd.isna(v) else (str(int(v)) if float(v).is_integer() else repr(float(v)))) for v in col]
        else:
            out[c] = col.map(lambda v: "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v))
    return out
