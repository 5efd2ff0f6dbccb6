"""PostgreSQL's binary ``COPY`` format built column by column with NumPy, for :mod:`ndcg_labeling.db.bulk`.

psycopg's ``write_row`` formats one row at a time in Python (about 2 µs a row); here each column is
converted once (``np.array`` of the column, a big-endian view) and scattered into one buffer, so a
million rows cost a few tenths of a second. The layout (PostgreSQL manual, "COPY", binary format):
the signature, two zero words, then per row a 16-bit field count and per field a 32-bit length (-1 for
NULL) and the value, then a 16-bit -1.

Only the column types of the import tables are encoded (integers, floats, text, ``timestamp``);
:func:`encode` returns None for anything else and the caller copies the rows as text, so the stored
values are the same either way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from numpy.typing import NDArray

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
TRAILER = b"\xff\xff"
_FIXED = {"integer": ">i4", "bigint": ">i8", "smallint": ">i2", "double precision": ">f8", "real": ">f4"}
_TEXT = {"text", "character varying"}
_TIMESTAMP = "timestamp without time zone"
_EPOCH = datetime(2000, 1, 1)
_ONE_MICROSECOND = timedelta(microseconds=1)
_INT_RANGE = {">i2": 2**15, ">i4": 2**31, ">i8": 2**63}


class _Field:
    """One column's data: per-row byte length (-1: NULL) and the concatenated bytes of the non-NULL values."""

    def __init__(self, lengths: NDArray[np.int64], data: NDArray[np.uint8]) -> None:
        self.lengths = lengths
        self.data = data


def _fixed(values: tuple[Any, ...], dtype: str) -> _Field | None:
    n = len(values)
    nulls = values.count(None)
    present = [v for v in values if v is not None] if nulls else values
    if dtype.startswith(">f"):
        array = np.array(present, dtype=np.float64)
    else:
        array = np.array(present)
        if len(array) and array.dtype.kind != "i":  # floats, text, huge ints: the text path decides
            return None
        limit = _INT_RANGE[dtype]
        if len(array) and (array.min() < -limit or array.max() >= limit):
            return None  # out of range: PostgreSQL's own error through the text path
    width = np.dtype(dtype).itemsize
    lengths = np.full(n, width, dtype=np.int64)
    if nulls:
        lengths[np.fromiter((v is None for v in values), dtype=bool, count=n)] = -1
    return _Field(lengths, np.frombuffer(array.astype(dtype).tobytes(), dtype=np.uint8))


def _text(values: tuple[Any, ...]) -> _Field | None:
    n = len(values)
    if n and values.count(values[0]) == n:  # one value for every row (a file name, a scale): encode once
        if values[0] is None:
            return _Field(np.full(n, -1, dtype=np.int64), np.zeros(0, dtype=np.uint8))
        if not isinstance(values[0], str):
            return None
        one = values[0].encode()
        return _Field(np.full(n, len(one), dtype=np.int64), np.frombuffer(one * n, dtype=np.uint8))
    if not all(isinstance(v, str) or v is None for v in values):
        return None
    encoded = [b"" if v is None else v.encode() for v in values]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    if values.count(None):
        lengths[np.fromiter((v is None for v in values), dtype=bool, count=n)] = -1
    return _Field(lengths, np.frombuffer(b"".join(encoded), dtype=np.uint8))


def _timestamp(values: tuple[Any, ...]) -> _Field | None:
    if not all(isinstance(v, datetime) for v in values):
        return None
    # The wall time as written; an offset is dropped, as PostgreSQL does for text into ``timestamp``.
    micros = [(v.replace(tzinfo=None) - _EPOCH) // _ONE_MICROSECOND for v in values]
    return _fixed(tuple(micros), ">i8")


def _field(values: tuple[Any, ...], pg_type: str) -> _Field | None:
    try:
        return _field_of_type(values, pg_type)
    except (TypeError, ValueError, OverflowError):
        return None  # a value of another type: the text path gives PostgreSQL's own error


def _field_of_type(values: tuple[Any, ...], pg_type: str) -> _Field | None:
    if pg_type in _FIXED:
        return _fixed(values, _FIXED[pg_type])
    if pg_type in _TEXT:
        return _text(values)
    if pg_type == _TIMESTAMP:
        return _timestamp(values)
    return None


def encode(rows: Sequence[Sequence[Any]], pg_types: Sequence[str]) -> bytes | None:
    """The binary COPY stream of ``rows`` for columns of ``pg_types`` (``format_type`` names), or None
    when a column's type or a value is not one this module encodes."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in pg_types]
    return encode_columns(columns, len(rows), pg_types)


def _numeric_kind(values: NDArray[Any], pg_type: str) -> str | None:
    """``"float"`` or ``"int"`` where a NumPy column of numbers is encoded straight from the array for a
    column of ``pg_type`` (floats for a float type, integers for an integer type); else None."""
    if values.dtype.kind == "f" and pg_type in ("double precision", "real"):
        return "float"
    if values.dtype.kind in "iu" and pg_type in _FIXED and not _FIXED[pg_type].startswith(">f"):
        return "int"
    return None


def _in_range(values: NDArray[Any], pg_type: str) -> bool:
    """Whether the integers of ``values`` fit the integer type ``pg_type``."""
    limit = _INT_RANGE[_FIXED[pg_type]]
    return not len(values) or bool(values.min() >= -limit and values.max() < limit)


def _column_field(values: Any, n: int, pg_type: str) -> _Field | None:
    """A column given as a NumPy array (NaN in a float array: NULL), a sequence, or one value for all rows."""
    if isinstance(values, np.ndarray):
        kind = _numeric_kind(values, pg_type)
        if kind == "float":
            nulls = np.isnan(values)
            lengths = np.full(n, np.dtype(_FIXED[pg_type]).itemsize, dtype=np.int64)
            lengths[nulls] = -1
            data = values[~nulls].astype(_FIXED[pg_type]).tobytes()
            return _Field(lengths, np.frombuffer(data, dtype=np.uint8))
        if kind == "int":
            dtype = _FIXED[pg_type]
            if not _in_range(values, pg_type):
                return None
            return _Field(np.full(n, np.dtype(dtype).itemsize, dtype=np.int64),
                          np.frombuffer(values.astype(dtype).tobytes(), dtype=np.uint8))
        return _field(tuple(values.tolist()), pg_type)
    if isinstance(values, (list, tuple)):
        return _field(tuple(values), pg_type)
    one = _field((values,), pg_type)
    if one is None:
        return None
    return _Field(np.full(n, one.lengths[0], dtype=np.int64), np.tile(one.data, n))


def encode_columns(columns: Sequence[Any], n: int, pg_types: Sequence[str]) -> bytes | None:
    """:func:`encode` of ``n`` rows given column by column (see :func:`_column_field`)."""
    body = _body(columns, n, pg_types)
    return None if body is None else SIGNATURE + body + TRAILER


def encode_parts(columns: Sequence[Any], n: int, pg_types: Sequence[str], part_rows: int) -> Iterator[bytes] | None:
    """:func:`encode_columns` a part of ``part_rows`` rows at a time, made as the caller asks for it (the
    signature before the first part's rows, the trailer after the last's). A caller that sends each part before asking for the next
    one encodes while the server stores what it was sent. None unless every part is sure to encode:
    each column a NumPy array of numbers of its column's type (integers within its range), or one
    value for every row that encodes."""
    for values, pg_type in zip(columns, pg_types, strict=True):
        if isinstance(values, np.ndarray):
            kind = _numeric_kind(values, pg_type)
            if kind == "float" or (kind == "int" and _in_range(values, pg_type)):
                continue
            return None
        if isinstance(values, (list, tuple)) or _field((values,), pg_type) is None:
            return None

    def parts() -> Iterator[bytes]:
        for start in range(0, n, part_rows):
            stop = min(n, start + part_rows)
            body = _body([c[start:stop] if isinstance(c, np.ndarray) else c for c in columns], stop - start, pg_types)
            assert body is not None  # checked above
            yield (SIGNATURE if start == 0 else b"") + body + (TRAILER if stop == n else b"")

    return parts()


def _body(columns: Sequence[Any], n: int, pg_types: Sequence[str]) -> bytes | None:
    """The rows of :func:`encode_columns`, without the signature and the trailer."""
    fields = [_column_field(col, n, t) for col, t in zip(columns, pg_types, strict=True)]
    if any(f is None for f in fields):
        return None
    known = [f for f in fields if f is not None]
    if n and all(f.lengths.min() == f.lengths.max() for f in known):
        return _encode_fixed(known, n)
    sizes = np.full(n, 2, dtype=np.int64)
    for f in fields:
        assert f is not None
        sizes += 4 + np.maximum(f.lengths, 0)
    ends = np.cumsum(sizes)
    out = np.empty(int(ends[-1]) if n else 0, dtype=np.uint8)
    position = ends - sizes
    _put(out, position, np.full(n, len(fields), dtype=">i2"))
    position = position + 2
    for f in fields:
        assert f is not None
        _put(out, position, f.lengths.astype(">i4"))
        position = position + 4
        present = f.lengths >= 0
        starts = position[present]
        lengths = f.lengths[present]
        if len(f.data):
            # byte k of the data goes to the start of its row's value plus its offset within the value
            offsets = np.cumsum(lengths) - lengths
            out[np.repeat(starts - offsets, lengths) + np.arange(len(f.data))] = f.data
        position = position + np.maximum(f.lengths, 0)
    return out.tobytes()


def _encode_fixed(fields: list[_Field], n: int) -> bytes:
    """:func:`encode_columns` when every row has the same layout (no column mixes NULL and values, text of
    one length): one ``(n, row size)`` byte matrix filled a column slice at a time."""
    widths = [max(int(f.lengths[0]), 0) for f in fields]
    out = np.empty((n, 2 + sum(4 + w for w in widths)), dtype=np.uint8)
    out[:, 0:2] = np.frombuffer(len(fields).to_bytes(2, "big"), dtype=np.uint8)
    at = 2
    for f, width in zip(fields, widths, strict=True):
        out[:, at : at + 4] = np.frombuffer(int(f.lengths[0]).to_bytes(4, "big", signed=True), dtype=np.uint8)
        if width:
            out[:, at + 4 : at + 4 + width] = f.data.reshape(n, width)
        at += 4 + width
    return out.tobytes()


def _put(out: NDArray[np.uint8], at: NDArray[np.int64], values: NDArray[Any]) -> None:
    """Write the fixed-width big-endian ``values`` at byte offsets ``at``."""
    width = values.dtype.itemsize
    out[at[:, None] + np.arange(width)] = np.frombuffer(values.tobytes(), dtype=np.uint8).reshape(-1, width)

