"""Rows and summaries as text, the one renderer of every command's rows: csv, json, a table (plain or Rich).

Every cell and line that comes from the data is :func:`inert` (no control character reaches the terminal);
every CSV cell a spreadsheet would run as a formula gets a leading ' (:mod:`ndcg_labeling.spreadsheet`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from ndcg_labeling.choices import OutputFormat


def summary_text(summary: Any) -> str:
    """``str(summary)`` as inert text: a control character in a text field of a dataclass summary (a file
    name, a batch name, a warning) shown escaped, a newline too, and then every control character of the
    whole text but the newlines that separate its lines (:func:`inert`)."""
    import dataclasses

    if dataclasses.is_dataclass(summary) and not isinstance(summary, type):
        changed: dict[str, Any] = {}
        for f in dataclasses.fields(summary):
            value = getattr(summary, f.name)
            if f.init and isinstance(value, str):
                changed[f.name] = inert(value)
            elif f.init and isinstance(value, list) and all(isinstance(v, str) for v in value):
                changed[f.name] = [inert(v) for v in value]
        summary = dataclasses.replace(summary, **changed)
    return inert(str(summary), newlines=True)


def summary_csv(summary: dict[str, Any] | Sequence[dict[str, Any]]) -> str:
    """A summary (one dict, or a list of them) as CSV: a header line of its keys and a row of values per
    dict, written with the csv module (a comma, quote or newline in a value is quoted) and, as every CSV
    the tool writes, a text cell a spreadsheet would run as a formula with a leading ' (see
    :mod:`ndcg_labeling.spreadsheet`). A list or dict value is one cell of compact JSON; None is empty;
    other values are written as ``str()`` writes them (``True``, ``0.25``)."""
    rows = [summary] if isinstance(summary, dict) else list(summary)
    flat = [{k: json.dumps(v, separators=(",", ":"), ensure_ascii=False, default=str)
             if isinstance(v, (list, tuple, dict)) else v for k, v in row.items()} for row in rows]
    return render_rows(flat, OutputFormat.csv) or ""


def inert(text: object, *, newlines: bool = False) -> str:
    """Text from the data as it may be shown on a terminal: every control or non-printable character
    (the ESC of an ANSI sequence, a carriage return, a bidi override...) shown as a visible escape
    (``\\x1b``), so nothing in the data can move the cursor, clear the screen or restyle the output.
    Newlines are kept when ``newlines`` (tabs become spaces). Print the result as a Rich ``Text`` or
    with ``markup=False``: Rich markup in the data (``wk[/bold]``) then stays literal too."""
    out = []
    for c in str(text):
        if c.isprintable() or (newlines and c == "\n"):
            out.append(c)
        elif newlines and c == "\t":
            out.append("    ")
        else:
            out.append(repr(c)[1:-1])
    return "".join(out)


def render_rows(rows: Sequence[dict[str, Any]], fmt: OutputFormat | str, *, title: str | None = None,
                columns: Sequence[str] | None = None) -> str | None:
    """Render a list of flat dicts as csv / json text; for ``table`` print it and return None: a Rich table
    on a terminal, :func:`plain_table` elsewhere (a pipe, a file)."""
    fmt = OutputFormat(fmt)
    cols = list(columns) if columns is not None else (list(rows[0].keys()) if rows else [])
    if fmt is OutputFormat.json:
        return json.dumps([{c: r.get(c) for c in cols} for r in rows], indent=2, default=str)
    if fmt is OutputFormat.csv:
        import csv
        import io

        from ndcg_labeling.spreadsheet import cell

        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=[cell(c) for c in cols], extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for r in rows:  # text cells that a spreadsheet would run as a formula get a leading ' (OWASP)
            writer.writerow({cell(c): ("" if r.get(c) is None else cell(r.get(c))) for c in cols})
        return buf.getvalue()
    if not sys.stdout.isatty():
        sys.stdout.write(plain_table(rows, cols, title))
        return None
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title)
    for c in cols:
        table.add_column(Text(inert(c)))
    for r in rows:  # cells as Text: data such as a name "[bold]x" or an ESC sequence stays literal
        table.add_row(*(Text("" if r.get(c) is None else inert(_fmt_cell(r.get(c)))) for c in cols))
    Console().print(table)
    return None


def plain_table(rows: Sequence[dict[str, Any]], cols: Sequence[str], title: str | None = None) -> str:
    """Rows as aligned plain text, one line each, nothing cut: what ``--format table`` writes when the
    output is not a terminal. Rich would fit the table to 80 columns there (eleven columns of cells cut
    to four characters, one row over many lines) and took about 80 ms to draw 98 rows (issue 17).
    Numbers are aligned right; every cell is :func:`inert`."""
    cells = [[inert(c) for c in cols]]
    cells += [["" if r.get(c) is None else inert(_fmt_cell(r.get(c))) for c in cols] for r in rows]
    numeric = [all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows
                   if r.get(c) is not None) for c in cols]
    widths = [max(_width(line[i]) for line in cells) for i in range(len(cols))]

    def line(values: Sequence[str]) -> str:
        padded = [" " * (w - _width(v)) + v if right else v + " " * (w - _width(v))
                  for v, w, right in zip(values, widths, numeric, strict=True)]
        return "  ".join(padded).rstrip()

    out = [inert(title)] if title else []
    out += [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(values) for values in cells[1:]]
    return "\n".join(out) + "\n"


def _width(text: str) -> int:
    """Columns ``text`` takes on a terminal: two for a wide (East Asian) character, none for a combining one."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _fmt_cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)
