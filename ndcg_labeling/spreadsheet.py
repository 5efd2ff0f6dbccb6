"""CSV cells that a spreadsheet will not run: the OWASP rule for CSV injection, and its exact inverse.

A cell whose text starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula (or
becomes one) in Excel, LibreOffice and Google Sheets: ``=HYPERLINK(...)``, ``+cmd|' /C calc'!A0``,
``@SUM(...)``. Every CSV the tool writes for people (task files, ``--format csv`` tables, report CSV)
writes such a cell with a leading apostrophe, which spreadsheets show as text and do not evaluate
(https://owasp.org/www-community/attacks/CSV_Injection). A cell that itself starts with an apostrophe
gets one more, so that reading undoes exactly what writing did: :func:`restore` drops one leading
apostrophe when the next character is one of those (or an apostrophe), and nothing else. The round
trip ``restore(neutralise(text)) == text`` holds for every text; the CSV readers
(:func:`ndcg_labeling.io.tables.read_table`) apply :func:`restore` to every CSV/TSV cell.

Only text cells are neutralised: numbers the tool computes (``-0.05``) are written as numbers.
"""

from __future__ import annotations

from typing import Any

#: the first characters that make a cell a formula, and the mark itself (so the rule is invertible)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
MARK = "'"
_MARKED = (*FORMULA_STARTS, MARK)


def neutralise(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet will not evaluate (a leading ``'`` when needed)."""
    return MARK + text if text.startswith(_MARKED) else text


def restore(cell: str) -> str:
    """The text :func:`neutralise` was given, from the cell it wrote (any other cell unchanged)."""
    return cell[1:] if cell.startswith(MARK) and cell[1:2] != "" and cell[1] in _MARKED else cell


def cell(value: Any) -> Any:
    """A value for a CSV writer: text neutralised, anything else (numbers, None) unchanged."""
    return neutralise(value) if isinstance(value, str) else value
