"""The result of ``eval`` and its renderers: trec_eval's layout (4 decimals), CSV and JSON.

trec_eval's layout: ``measure<TAB>query<TAB>value`` with the measure left-justified in 22 characters;
per-query rows (``-q``) query by query in the evaluated order, then the summary rows (query ``all``;
none with ``-n``). Counts print as integers, ``relstring`` quoted, everything else ``%6.4f``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling.metrics.trec_measures import FAMILIES, Column


@dataclass
class EvalResult:
    """Per-query values of each column (``values[name]``: float array over ``query_ids``, or a list
    of strings for relstring) and the summary row of each (None: the measure has none)."""

    columns: list[Column]
    query_ids: list[str]
    values: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)

    def table(self) -> npt.NDArray[np.float64]:
        """``(queries, numeric columns)`` per-query values (relstring and runid left out)."""
        cols = [c for c in self.columns if FAMILIES[c.family].form != "string"]
        if not cols:
            return np.zeros((len(self.query_ids), 0))
        return np.column_stack([np.asarray(self.values[c.name], dtype=np.float64) for c in cols])

    def rows(self, per_query: bool, summary: bool = True) -> list[tuple[str, str, Any]]:
        """``(measure, query_id, value)`` rows in trec_eval's order."""
        out: list[tuple[str, str, Any]] = []
        if per_query:
            shown = [c for c in self.columns if FAMILIES[c.family].per_query]
            series = [(c, self.values[c.name]) for c in shown]
            per = [v.tolist() if isinstance(v, np.ndarray) else v for _, v in series]
            for i, q in enumerate(self.query_ids):
                out.extend((c.name, q, vals[i]) for (c, _), vals in zip(series, per, strict=True))
        if summary:
            out.extend((c.name, "all", self.summary[c.name]) for c in self.columns if self.summary.get(c.name) is not None)
        return out


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
