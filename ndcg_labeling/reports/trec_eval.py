"""The renderers of ``eval``'s result (:class:`~ndcg_labeling.results.EvalResult`): trec_eval's layout
(4 decimals), CSV and JSON.

trec_eval's layout: ``measure<TAB>query<TAB>value`` with the measure left-justified in 22 characters;
per-query rows (``-q``) query by query in the evaluated order, then the summary rows (query ``all``;
none with ``-n``). Counts print as integers, ``relstring`` quoted, everything else ``%6.4f``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from ndcg_labeling.metrics.trec_measures import FAMILIES
from ndcg_labeling.results import EvalResult


def _trec_value(family: str, value: Any) -> str:
    form = FAMILIES[family].form
    if family == "relstring":
        return f"'{value}'"
    if form == "string":
        return str(value)
    if form == "long":
        return str(int(value))
    # C's printf("%6.4f") of the NaN a 0/0 gives (trec_eval prints it where a measure divides by zero).
    return "  -nan" if isinstance(value, float) and math.isnan(value) else f"{value:6.4f}"


def render(result: EvalResult, fmt: str, *, per_query: bool, summary: bool = True) -> str:
    """``trec`` (trec_eval's layout), ``csv`` or ``json`` (full precision, one row per value)."""
    rows = result.rows(per_query, summary)
    if fmt == "trec":
        family = {c.name: c.family for c in result.columns}
        return "".join([f"{m:<22}\t{q}\t{_trec_value(family[m], v)}\n" for m, q, v in rows])
    if fmt == "csv":  # the csv module quotes a field with a comma: utility_1,-1,0,0 is one measure name
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(("measure", "query_id", "value"))
        writer.writerows((m, q, _csv_value(v)) for m, q, v in rows)
        return buffer.getvalue()
    if fmt == "json":
        return json.dumps([{"measure": m, "query_id": q, "value": _json_value(v)} for m, q, v in rows], indent=1) + "\n"
    raise ValueError(f"unknown format {fmt!r}; known formats: trec, csv, json")


def _csv_value(value: Any) -> str:
    return value if isinstance(value, str) else repr(float(value))


def _json_value(value: Any) -> Any:
    if isinstance(value, str):
        return value
    value = float(value)
    return None if math.isnan(value) else value
