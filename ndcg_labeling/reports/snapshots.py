"""``snapshot diff`` as text: a summary line per pair of snapshots, then a row per changed query (table),
or the rows as csv / json (json: ``{"k", "pairs", "queries", "notes"}``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.reports.rows import inert, render_rows


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def render_diff(k: int, rows: Sequence[dict[str, Any]], pairs: Sequence[dict[str, Any]], notes: Sequence[str],
                fmt: OutputFormat | str) -> str | None:
    """The diff in ``fmt``; for ``table`` it prints and returns the closing lines."""
    fmt = OutputFormat(fmt)
    if fmt is OutputFormat.json:
        return json.dumps({"k": k, "pairs": list(pairs), "queries": list(rows), "notes": list(notes)}, indent=2)
    if fmt is OutputFormat.csv:
        return render_rows(rows, fmt, columns=["from", "to", "query_id", "entered", "left", "moved", "unjudged",
                                               f"ndcg@{k}_from", f"ndcg@{k}_to", "ndcg_change", "n_unjudged"])
    shown = [{"query": r["query_id"], "entered": r["entered"], "left": r["left"], "moved": r["moved"],
              f"ndcg@{k}": _signed(r["ndcg_change"]), "unjudged": r["n_unjudged"]} for r in rows]
    lines = []
    for p in pairs:
        mine = [s for s, r in zip(shown, rows, strict=True) if r["from"] == p["from"] and r["to"] == p["to"]]
        if mine:
            render_rows(mine, fmt, title=f"{p['from']} -> {p['to']} (top {k})")
        lines.append(inert(f"{p['from']} -> {p['to']}: {p['queries_changed']} queries changed in the top {k}; "
                           f"mean NDCG@{k} change over them {_signed(p['mean_ndcg_change'])}; "
                           f"{p['unjudged_brought']} unjudged documents in the newer top {k} "
                           f"(pool them: tasks create --from-snapshot {p['to']})"))
    lines += [inert(f"note: {n}") for n in notes]
    return "\n".join(lines)
