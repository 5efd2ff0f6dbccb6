"""``demo``: the whole pipeline on the bundled demo set, into a fresh database, with a report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ndcg_labeling.cli.common import OutFolderOption, console, err_console, handle_errors

if TYPE_CHECKING:
    from rich.console import Console

    from ndcg_labeling.results import ReportResult


def demo(
    db: Annotated[str | None, typer.Option("--db", help="A fresh database URL; default sqlite:///<out>/demo.db.")] = None,
    out: OutFolderOption = "demo-out",
) -> None:
    """Run import, pooling, grading (simulated graders), agreement, consensus and report on the demo set."""
    from rich import box
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from ndcg_labeling.demo.run import STEPS, run_demo
    from ndcg_labeling.reports.text import render_comparison_metric, render_notes, render_overview
    from ndcg_labeling.results import headline_metric

    with handle_errors(), Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                   TextColumn("{task.completed}/{task.total} steps"), TimeElapsedColumn(),
                                   console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        task = bar.add_task("demo", total=len(STEPS))
        seen: list[str] = []

        def on_step(name: str) -> None:
            if seen:
                bar.advance(task)
            seen.append(name)
            bar.update(task, description=name)

        result = run_demo(db=db, out=out, on_step=on_step)
        bar.advance(task)
    con = console if console.is_terminal else Console(width=120)  # piped: no wrapping of the tables
    for name, secs in result.timings:
        err_console.print(f"[green]✓[/] {name} ({secs:.1f} s)", highlight=False)
    con.print(result.batch_summary, markup=False, highlight=False)  # it starts with "batch NAME: ..."
    con.print(result.consensus_summary, markup=False, highlight=False)
    if result.agreement:
        table = Table(title="agreement per query type (Krippendorff's alpha, ordinal)", box=box.SIMPLE_HEAD)
        for col in ("query type", "alpha", "% agreement", "AC1", "items", "graders"):
            table.add_column(col, justify="left" if col == "query type" else "right")
        for r in result.agreement:
            table.add_row(str(r["scope"]), *(_num(r.get(k)) for k in ("alpha", "percent_agreement", "ac1")),
                          str(r.get("n_items", "")), str(r.get("n_graders", "")))
        con.print(table)
    if result.agreement_note:
        con.print(f"note: {result.agreement_note}", markup=False, highlight=False)
    metric = headline_metric(result.report.metrics)  # the metric of the report's W/T/L column too
    render_overview(result.report, metric, con)
    render_comparison_metric(result.report, metric, con)
    render_notes(result.report, con)
    from ndcg_labeling.cli.quality_cmds import print_quality_demo

    print_quality_demo(result.quality, con)
    print_decision(result.report, con)
    from ndcg_labeling.cli.implicit_cmds import print_behavior_demo

    print_behavior_demo(result.behavior, con)
    from ndcg_labeling.demo.online import online_demo
    from ndcg_labeling.demo.run import DATA_DIR  # issue 27: the simulated A/B test's online headline

    with handle_errors():
        for line in online_demo(result.db_url, result.out_dir, DATA_DIR):
            con.print(line, markup=False, highlight=False)
    total = sum(s for _, s in result.timings)
    con.print(f"database: {result.db_url}", markup=False, highlight=False)
    con.print(f"report: {result.html_path} (and {result.csv_path}); {total:.1f} s in all", markup=False,
              highlight=False)


def print_decision(report: ReportResult, con: Console) -> None:
    """The part of the report a lead decides from, after the tables: the headline and the label-quality caveats."""
    from ndcg_labeling.reports.headline import render_caveats_table, render_headline_table

    con.print()
    render_headline_table(report, con)
    render_caveats_table(report, con)


def _num(v: object) -> str:
    return "-" if v is None else f"{float(v):.3f}"  # type: ignore[arg-type]


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""
    app.command("demo")(demo)
