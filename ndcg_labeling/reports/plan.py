"""Terminal rendering of ``plan`` rows (csv and json go through the shared row renderer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def render_plan_table(rows: Sequence[dict[str, Any]], console: Console) -> None:
    """One line per comparison and query type: queries at hand, sd of the per-query differences,
    queries needed for ``mde`` and the MDE reached with the queries at hand; then the overall rows
    in words."""
    from rich import box
    from rich.table import Table

    if not rows:
        return
    r0 = rows[0]
    table = Table(title=f"queries needed to detect ±{r0['mde']:g} {r0['metric']} "
                        f"({r0['power']:.0%} power, two-sided alpha {r0['alpha']:g}, paired t-test)",
                  box=box.SIMPLE_HEAD)
    for col in ("query type", "comparison", "queries", "sd of diff", "needed", "MDE at hand"):
        table.add_column(col, justify="left" if col in ("query type", "comparison") else "right", no_wrap=True)
    for r in rows:
        who = "-" if r["system"] is None else f"{r['system']} vs {r['baseline']}"
        table.add_row(str(r["query_type"]), who, _num(r["n_queries"], "d"), _num(r["sd"], ".3f"),
                      _num(r["queries_needed"], ",d"), "-" if r["mde_at_hand"] is None else f"±{r['mde_at_hand']:.3f}")
    console.print(table)
