"""The one rule for external ids (``query_id``, ``doc_id``, grader names), for every input format.

An id is a string of 1 to :data:`MAX_ID_LENGTH` characters, every one of them printable
(``str.isprintable``: no control, format, separator or unassigned code point) and none of them white
space. So an id survives every format the tool reads and writes: a TREC qrels or run line
(whitespace-separated), a CSV/TSV cell, a JSON string and a terminal. Ids that break the rule are
refused, never altered: the tool stores text verbatim or not at all.

Values of another type (JSON ``true``, numbers, objects; Parquet binary, struct or numeric columns)
are not ids: the readers report them before this rule is applied (``InputTable.non_text``).

:func:`id_problem` checks one value (for line-by-line readers such as the TREC files);
:func:`first_bad_id` checks a whole column at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

MAX_ID_LENGTH = 512  # the width of queries.external_id and documents.external_id (db/models.py ID_LENGTH)


def shown(value: str, limit: int = 60) -> str:
    """``value`` as an inert, bounded quoted literal for a message: control characters escaped."""
    text = repr(value[:limit])
    return text + "..." if len(value) > limit else text


def id_problem(value: object, what: str = "id", limit: int = MAX_ID_LENGTH) -> str | None:
    """Why ``value`` is not a valid id (the message names it as ``what``), or None when it is one."""
    if not isinstance(value, str):
        return f"{what} must be a string, got {type(value).__name__} {shown(str(value))}"
    if value == "":
        return f"empty {what}"
    if len(value) > limit:
        return f"{what} is {len(value)} characters long; the limit is {limit}"
    if " " in value or not value.isprintable():
        bad = next(c for c in value if c == " " or not c.isprintable())
        kind = "white space" if bad.isspace() else "a control or non-printable character"
        return f"{what} {shown(value)} contains {kind} (U+{ord(bad):04X}); ids are printable text without white space"
    return None


def first_bad_id(values: pd.Series, what: str = "id", limit: int = MAX_ID_LENGTH) -> tuple[int, str] | None:
    """(position, problem) of the first value of a text column that breaks the id rule, or None.

    Vectorised: when every value is ASCII, the values are joined with newlines and the bytes checked at
    once with NumPy (only the separators may fall outside ``!``..``~``); other values are checked one by
    one. Callers with repeated values pass the distinct ones (see ``InputTable.id_codes``).
    """
    import numpy as np

    text = values.astype(str)
    items = text.tolist()
    n = len(items)
    if n == 0:
        return None
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=n)
    bad = (lengths == 0) | (lengths > limit)
    joined = "\n".join(items)
    raw = np.frombuffer(joined.encode("ascii"), dtype=np.uint8) if joined.isascii() else None
    if raw is None or np.count_nonzero((raw < 0x21) | (raw > 0x7E)) != n - 1:  # more than the n - 1 separators
        # Printable ASCII without the space passes at once; only other values are checked one by one.
        positions = np.flatnonzero(text.str.contains(r"[^\x21-\x7e]", regex=True).to_numpy())
        bad[positions] |= np.array([" " in items[i] or not items[i].isprintable() for i in positions], dtype=bool)
    if not bad.any():
        return None
    row = int(np.flatnonzero(bad)[0])
    return row, id_problem(items[row], what, limit) or f"invalid {what}"  # both state the same rule
