"""Text renderers: Rich tables for the terminal, CSV (long format), JSON and Markdown."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import TYPE_CHECKING, Any

from ndcg_labeling.reports.model import gain_phrase, grouping_phrase
from ndcg_labeling.results import headline_metric
from ndcg_labeling.spreadsheet import cell

if TYPE_CHECKING:
    from rich.console import Console

    from ndcg_labeling.results import ReportResult

SUMMARY_COLUMNS = ["system", "query_type", "metric", "value", "n_queries", "ci_low", "ci_high"]
PER_QUERY_COLUMNS = ["system", "query_id", "query_type", "metric", "value"]
P_LEGEND_SHORT = ("diff = system - baseline; interval: simultaneous 95% (Bonferroni over the systems compared "
                  "with the baseline); * = p < 0.05 in the paired t-test, Bonferroni-corrected the same way (it "
                  "agrees with the interval); W/T/L = queries won, tied, lost")
P_LEGEND = ("diff = system - baseline (mean over the queries both scored) [simultaneous 95% interval]; p = paired "
            "t-test, Bonferroni-corrected over the systems compared with the baseline in each query group (the "
            "test of the headline; * when p < 0.05, exactly when the interval excludes 0; not tested below 6 "
            "queries); W/T/L = queries won, tied, lost")


def tested(r: Any) -> bool:
    """Whether a comparison row was tested (enough queries and a corrected p)."""
    p = r["t_p_bonf"]
    return p is not None and not math.isnan(p) and int(r["n_queries"]) >= 6


def star(r: Any) -> str:
    """``*`` when the row's corrected p is below 0.05 (its simultaneous interval then excludes 0)."""
    return "*" if tested(r) and r["t_p_bonf"] < 0.05 else ""


def adj_interval(r: Any) -> str:
    """The row's simultaneous interval (``-`` when the row is not tested)."""
    lo, hi = r["t_ci_adj_low"], r["t_ci_adj_high"]
    if not tested(r) or math.isnan(lo) or math.isnan(hi):
        return "-"
    from ndcg_labeling.reports.headline import signed_bound

    return f"[{signed_bound(lo)}, {signed_bound(hi)}]"

def _full(value: Any) -> str:
    """A number at full precision (``repr`` of the float), empty for NaN/None."""
    if value is None:
        return ""
    if isinstance(value, float) or hasattr(value, "dtype") and value.dtype.kind == "f":
        f = float(value)
        return "" if math.isnan(f) else repr(f)
    if hasattr(value, "item"):
        return str(value.item())
    return str(value)


def _per_query_wanted(result: ReportResult) -> bool:
    return result.options.per_query or result.options.by == "query"


def _per_query_rows(result: ReportResult) -> list[list[str]]:
    """Per (query, query type, system): its ids and each metric at 4 decimals (the per-query tables)."""
    pq = result.per_query.pivot_table(index=["query_id", "query_type", "system"], columns="metric",
                                      values="value", sort=True)
    return [[str(q), str(t), str(s)] + [_fmt(r.get(mt, float("nan")), 4) for mt in result.metrics]
            for (q, t, s), r in pq.iterrows()]


def render_csv(result: ReportResult) -> str:
    """Long format: ``system,query_type,metric,value,n_queries,ci_low,ci_high`` (``all`` = overall), or with
    per-query output ``system,query_id,query_type,metric,value``. Floats at full precision; a text cell
    that a spreadsheet would run as a formula gets a leading ``'`` (:mod:`ndcg_labeling.spreadsheet`)."""
    per_query = _per_query_wanted(result)
    frame = result.per_query if per_query else result.summary
    columns = PER_QUERY_COLUMNS if per_query else SUMMARY_COLUMNS
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in frame[columns].itertuples(index=False, name=None):  # text that looks like a formula: a ' first
        writer.writerow([cell(v) if isinstance(v, str) else _full(v) for v in row])
    return buf.getvalue()


def render_json(result: ReportResult) -> str:
    """The summary, comparisons, coverage, notes and warnings (and per-query rows when asked) as JSON."""
    from ndcg_labeling.reports.model import report_as_dict

    return json.dumps(report_as_dict(result), indent=2, allow_nan=False, default=str)


def _fmt(v: float, digits: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _p(v: float) -> str:
    if v is None or math.isnan(v):
        return "-"
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def summary_cells(result: ReportResult, ci_digits: int = 3) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the summary table: query type, system, n, then ``mean [ci_low, ci_high]`` per metric."""
    s = result.summary
    header = ["query type", "system", "n"] + result.metrics
    rows = []
    order = result.query_types + ["all"]
    indexed = s.set_index(["query_type", "system", "metric"]).sort_index()
    for qt in order:
        for system in result.systems:
            cells = [qt, system]
            ns = []
            for metric in result.metrics:
                r = indexed.loc[(qt, system, metric)]
                ns.append(int(r["n_queries"]))
                cells.append(f"{_fmt(r['value'])} [{_fmt(r['ci_low'], ci_digits)}, {_fmt(r['ci_high'], ci_digits)}]")
            cells.insert(2, str(max(ns)) if ns else "0")
            rows.append(cells)
    return header, rows


def comparison_cells(result: ReportResult, with_p: bool = True) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the comparison table (empty with fewer than two systems): per metric the
    difference to the baseline, ``*`` when the Bonferroni-corrected t-test p is below 0.05, and, when
    ``with_p``, the simultaneous interval and that p (the star agrees with the interval)."""
    c = result.comparisons
    if c.empty:
        return [], []
    first = headline_metric(result.metrics, result.options)  # the same metric in the terminal, md and html
    header = ["query type", "system vs " + str(result.baseline)] + result.metrics + [f"W/T/L {first}"]
    rows = []
    indexed = c.set_index(["query_type", "system", "metric"]).sort_index()
    for qt in result.query_types + ["all"]:
        for system in result.systems:
            if system == result.baseline:
                continue
            cells = [qt, system]
            for metric in result.metrics:
                r = indexed.loc[(qt, system, metric)]
                diff = r["diff"]
                if math.isnan(diff):
                    cells.append("-")
                elif with_p and tested(r):
                    cells.append(f"{diff:+.3f}{star(r)} {adj_interval(r)} (p {_p(r['t_p_bonf'])})")
                else:
                    cells.append(f"{diff:+.3f}{star(r)}")
            r0 = indexed.loc[(qt, system, first)]
            cells.append(f"{int(r0['wins'])}/{int(r0['ties'])}/{int(r0['losses'])}")
            rows.append(cells)
    return header, rows


def coverage_cells(result: ReportResult) -> tuple[list[str], list[list[str]]]:
    cov = result.coverage.set_index(["query_type", "system"]).sort_index()
    header = ["query type"] + result.systems
    rows = []
    for qt in result.query_types + ["all"]:
        rows.append([qt] + [_fmt(float(cov.loc[(qt, s), "judged"]), 2) for s in result.systems])
    return header, rows


def render_table(result: ReportResult, console: Console | None = None) -> None:
    """Print the report as Rich tables (notes and warnings included) on ``console``."""
    from rich.console import Console
    from rich.table import Table

    from ndcg_labeling.reports.headline import render_caveats_table, render_headline_table
    from ndcg_labeling.reports.moved import render_moved_table

    con = console or Console()
    ci = f"{result.options.confidence:.0%}"
    render_headline_table(result, con)
    if _per_query_wanted(result):
        table = Table(title="per query")
        for col in ["query", "query type", "system"] + result.metrics:
            table.add_column(col, justify="right" if col in result.metrics else "left")
        for row in _per_query_rows(result):
            table.add_row(*row)
        con.print(table)
    header, rows = summary_cells(result, ci_digits=2)
    table = Table(title=f"mean {grouping_phrase(result.options.by)} with {ci} bootstrap interval "
                        f"({gain_phrase(result.options)})")
    for i, col in enumerate(header):
        table.add_column(col, justify="right" if i >= 2 else "left")
    previous = None
    for r in rows:
        if previous is not None and r[0] != previous:
            table.add_section()
        previous = r[0]
        table.add_row(*r)
    con.print(table)
    render_comparisons(result, con)
    render_caveats_table(result, con)
    render_moved_table(result, con)
    render_notes(result, con)


def render_comparisons(result: ReportResult, console: Console | None = None) -> None:
    """The difference-to-baseline table (nothing with a single system)."""
    from rich.console import Console
    from rich.table import Table

    con = console or Console()
    header, rows = comparison_cells(result, with_p=False)
    if rows:
        table = Table(title=f"difference to the baseline {result.baseline}", caption=P_LEGEND_SHORT)
        for i, col in enumerate(header):
            table.add_column(col, justify="right" if i >= 2 else "left")
        for r in rows:
            table.add_row(*r)
        con.print(table)


def render_notes(result: ReportResult, console: Console | None = None) -> None:
    """Notes (what was left out or set to 0) and warnings (unsafe comparisons)."""
    from rich.console import Console

    con = console or Console()
    for note in result.notes:
        con.print(f"note: {note}", markup=False, highlight=False)
    for warning in result.warnings:
        con.print(f"[bold red]warning:[/] {warning}", highlight=False)
    from ndcg_labeling.reports.headline import coverage_advice

    for advice in coverage_advice(result):
        con.print(f"[bold]hint:[/] {advice}", highlight=False)


def render_overview(result: ReportResult, metric: str, console: Console | None = None) -> None:
    """One metric per query type (rows) and system (columns) with its interval; the best mean in bold."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    con = console or Console()
    s = result.summary.set_index(["query_type", "system", "metric"]).sort_index()
    table = Table(title=f"{metric} {grouping_phrase(result.options.by)}: mean "
                        f"[{result.options.confidence:.0%} bootstrap interval]",
                  box=box.SIMPLE_HEAD)
    table.add_column("query type", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    for system in result.systems:
        table.add_column(system, justify="right", no_wrap=True)
    for qt in result.query_types + ["all"]:
        values = {sys_: s.loc[(qt, sys_, metric)] for sys_ in result.systems}
        best = max(float(v["value"]) for v in values.values())
        cells = []
        for v in values.values():
            text = f"{_fmt(v['value'])} [{_fmt(v['ci_low'], 2)}, {_fmt(v['ci_high'], 2)}]"
            cells.append(f"[bold]{text}[/]" if float(v["value"]) == best else text)
        n = max(int(v["n_queries"]) for v in values.values())
        if qt == "all":
            table.add_section()
        table.add_row(qt, str(n), *cells)
    con.print(table)


def render_comparison_metric(result: ReportResult, metric: str, console: Console | None = None) -> None:
    """For one metric: each system's difference to the baseline per query type, its simultaneous
    interval, the Bonferroni-corrected t-test p and wins/ties/losses."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    con = console or Console()
    c = result.comparisons
    if c.empty:
        return
    c = c[c["metric"] == metric].set_index(["query_type", "system"]).sort_index()
    table = Table(title=f"{metric}: difference to the baseline {result.baseline}", box=box.SIMPLE_HEAD,
                  caption="p: paired t-test, Bonferroni-corrected over the systems compared with the baseline; "
                          "interval: the matching simultaneous 95% interval (* = p < 0.05 = the interval "
                          "excludes 0; not tested below 6 queries); W/T/L: queries won, tied, lost")
    for col in ("query type", "system", "diff", "simultaneous 95% interval", "p", "W/T/L"):
        table.add_column(col, justify="left" if col in ("query type", "system") else "right", no_wrap=True)
    for qt in result.query_types + ["all"]:
        if qt == "all":
            table.add_section()
        for system in result.systems:
            if system == result.baseline:
                continue
            r = c.loc[(qt, system)]
            table.add_row(qt, system, f"{r['diff']:+.3f}{star(r)}", adj_interval(r),
                          _p(r["t_p_bonf"]) if tested(r) else "-",
                          f"{int(r['wins'])}/{int(r['ties'])}/{int(r['losses'])}")
    con.print(table)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def esc(x: str) -> str:
        return x.replace("|", "\\|")

    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def render_markdown(result: ReportResult) -> str:
    """The report as Markdown: warnings first, then the summary, comparison and judged@k tables."""
    parts = ["# ndcg-labeling report\n"]
    from ndcg_labeling.reports.headline import caveat_notes, caveat_rows, coverage_advice, headline_markdown
    from ndcg_labeling.reports.moved import render_moved_markdown

    for warning in result.warnings:
        parts.append(f"> **Warning:** {warning}\n")
    parts.extend(f"> **Hint:** {advice}\n" for advice in coverage_advice(result))
    parts.extend(headline_markdown(result))
    ci = f"{result.options.confidence:.0%}"
    header, rows = summary_cells(result)
    parts.append(f"## Mean {grouping_phrase(result.options.by)} ({ci} bootstrap interval, {gain_phrase(result.options)})\n")
    parts.append(_md_table(header, rows))
    header, rows = comparison_cells(result)
    if rows:
        parts.append(f"## Difference to the baseline {result.baseline}\n")
        parts.append(_md_table(header, rows))
        parts.append(f"{P_LEGEND}.\n")
    header, rows = coverage_cells(result)
    parts.append(f"## Judged@{result.coverage_k} coverage\n")
    parts.append(_md_table(header, rows))
    header, rows = caveat_rows(result)
    if rows:
        parts.append("## Label quality\n")
        parts.append(_md_table(header, rows))
        parts.extend(f"- {n}\n" for n in caveat_notes(result))
    moved = render_moved_markdown(result, _md_table)
    if moved:
        parts.append("## Queries that moved\n")
        parts.extend(moved)
    if _per_query_wanted(result):
        parts.append("## Per query\n")
        parts.append(_md_table(["query", "query type", "system"] + result.metrics, _per_query_rows(result)))
    parts.append("## Notes\n")
    parts.extend(f"- {n}\n" for n in result.notes)
    return "\n".join(parts)
