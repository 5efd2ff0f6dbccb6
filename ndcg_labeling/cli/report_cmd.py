"""``report``: score the stored rankings against the effective labels, per query type and overall."""

from __future__ import annotations

from typing import Annotated

import typer

from ndcg_labeling import choices
from ndcg_labeling.cli.common import DbOption, OutOption, console, err_console, open_session, write_output

# The vocabularies live in ndcg_labeling.choices; these names keep the signature below short.
ReportFormat = choices.ReportFormat
By = choices.ReportGrouping
Gain = choices.Gain
Empty = choices.EmptyQueries
Missing = choices.MissingRuns


def report(
    system: Annotated[list[str] | None, typer.Option("--system", help="A system to score (repeat); default: all.")] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="The system the others are compared with; default: the first by name.")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", help="A metric such as ndcg@10 (repeat); default: ndcg@5 ndcg@10 mrr@10 map@10 p@10 judged@10.")] = None,
    by: Annotated[By, typer.Option("--by", help="Group rows by query type (and overall), by query, or overall only.")] = By.query_type,
    per_query: Annotated[bool, typer.Option("--per-query", help="One row per (system, query, metric).")] = False,
    gain: Annotated[Gain, typer.Option("--gain", help="NDCG gain: 2^rel-1 (exponential) or rel (linear, as trec_eval).")] = Gain.exponential,
    relevant_threshold: Annotated[float, typer.Option("--relevant-threshold", help="A label >= this is relevant (mrr, map, p, and empty queries).")] = 1.0,
    empty: Annotated[Empty, typer.Option("--empty", help="Queries without a relevant document: leave out (skip) or score as 0.")] = Empty.skip,
    missing: Annotated[Missing, typer.Option("--missing", help="Judged queries a system returned nothing for: 0 or leave out (trec_eval).")] = Missing.zero,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="Output format.")] = ReportFormat.table,
    out: OutOption = None,
    db: DbOption = None,
) -> None:
    """Score systems against the consensus labels: means with 95% bootstrap intervals, paired tests."""
    from ndcg_labeling.pipeline.report import agreement_by_query_type, build_report
    from ndcg_labeling.reports.model import DEFAULT_METRICS, ReportOptions
    from ndcg_labeling.reports.render import TABLE_WIDTH, render_report

    options = ReportOptions(systems=tuple(system or ()), baseline=baseline, metrics=tuple(metric or DEFAULT_METRICS),
                            by=by.value, per_query=per_query, gain=gain.value, relevant_threshold=relevant_threshold,
                            empty=empty.value, missing=missing.value)
    agreement = note = None
    with open_session(db) as session:
        result = build_report(session=session, options=options)
        if fmt is ReportFormat.html:
            agreement, note = agreement_by_query_type(session=session)
    if fmt is ReportFormat.table:
        from rich.console import Console

        if out:
            with open(out, "w", encoding="utf-8") as fh:
                render_report(result, "table", console=Console(file=fh, width=TABLE_WIDTH))
        else:  # piped: wide enough for the metric columns
            render_report(result, "table", console=console if console.is_terminal else None)
        return
    if fmt in (ReportFormat.csv, ReportFormat.json):
        for warning in result.warnings:
            err_console.print(f"Warning: {warning}", markup=False)
        for n in result.notes:
            err_console.print(f"note: {n}", markup=False)
    write_output(render_report(result, fmt.value, agreement=agreement, agreement_note=note) or "", out)
    if out:
        err_console.print(f"report written to {out}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report")(report)
