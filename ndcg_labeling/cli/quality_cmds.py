"""``gold import | list``, ``graders quality`` and ``calibrate``: grader quality control and judges."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import (
    DbOption,
    ForceOption,
    FormatOption,
    JsonSummaryOption,
    OutOption,
    SummaryFormatNamedOption,
    check_out,
    console,
    open_session,
    print_summary,
    printed_to,
    summary_format,
    write_output,
)
from ndcg_labeling.reports.judge_gate import GATE_TABLE_COLUMNS, gate_lines, gate_table_rows
from ndcg_labeling.reports.rows import render_rows

gold_app = typer.Typer(help="Gold items: (query, document) pairs whose grade is known, mixed into batches.",
                       no_args_is_help=True)

BatchOption = Annotated[str | None, typer.Option("--batch", help="Only this batch; default: every batch.")]
MinAccuracy = Annotated[float, typer.Option("--min-accuracy", help="Gold accuracy a trusted grader needs (0..1).")]


class CalibrateBy(StrEnum):
    query_type = "query-type"


@gold_app.command("import")
def gold_import(
    file: Annotated[Path, typer.Argument(help="query_id,doc_id,grade[,explanation]", show_default=False, readable=False)],
    scale: Annotated[str, typer.Option("--scale", help="Grading scale: 0-3 or 0-4.")],
    fmt: Annotated[str | None, typer.Option("--format", help="File format; default from the extension.")] = None,
    db: DbOption = None,
    as_json: JsonSummaryOption = False,
    summary_fmt: SummaryFormatNamedOption = None,
) -> None:
    """Import gold items: columns query_id,doc_id,grade[,explanation] (queries and documents must exist)."""
    from ndcg_labeling.labels.gold import import_gold

    out_fmt = summary_format(as_json, summary_fmt)
    with open_session(db) as session:
        summary = import_gold(file, scale=scale, session=session, fmt=fmt)
    print_summary(summary, out_fmt)


@gold_app.command("list")
def gold_list(
    scale: Annotated[str | None, typer.Option("--scale", help="Only gold items of this scale.")] = None,
    fmt: FormatOption = OutputFormat.table,
    out: OutOption = None, force: ForceOption = False,
    db: DbOption = None,
) -> None:
    """List gold items with their grade, explanation, batches using them and graders' accuracy on them."""
    from ndcg_labeling.labels.gold import list_gold

    with open_session(db) as session:
        rows = list_gold(session=session, scale=scale)
    if not rows and fmt is OutputFormat.table:
        typer.echo("no gold items; import some with `ndcg-labeling gold import FILE --scale 0-3`")
        return
    columns = ["query_id", "doc_id", "scale", "grade", "explanation", "batches", "answers", "accuracy"]
    with printed_to(out, force):
        text = render_rows(rows, fmt, columns=columns, title=f"{len(rows)} gold items")
    if text is not None:
        write_output(text, out, force)


def graders_quality(
    batch: BatchOption = None,
    min_accuracy: MinAccuracy = 0.7,
    fmt: FormatOption = OutputFormat.table,
    out: OutOption = None, force: ForceOption = False,
    db: DbOption = None,
) -> None:
    """Per grader, answers to gold items: accuracy, within one, MAE, bias, trusted, drift over time."""
    from ndcg_labeling.labels.quality import QUALITY_COLUMNS, TABLE_COLUMNS, TRUST_RULE
    from ndcg_labeling.labels.quality import graders_quality as run

    with open_session(db) as session:
        report = run(session=session, batch=batch, min_accuracy=min_accuracy)
    if fmt is OutputFormat.json:
        write_output(json.dumps(report.as_dict(), indent=2), out, force)
        return
    scope = f"batch {batch}" if batch else "all batches"
    columns = QUALITY_COLUMNS if fmt is OutputFormat.csv else TABLE_COLUMNS
    text = render_rows(report.rows, fmt, columns=columns,
                       title=f"grader quality on gold items ({scope}; threshold {min_accuracy:g})")
    if text is not None:
        write_output(text, out, force)
    else:
        console.print(f"Rule: {TRUST_RULE}.", markup=False, highlight=False)
        for note in report.notes:
            console.print(f"Note: {note}", markup=False, highlight=False)


def calibrate(
    judge: Annotated[str, typer.Option("--judge", help="The grader to calibrate (e.g. a model grader).")],
    batch: BatchOption = None,
    by: Annotated[CalibrateBy | None, typer.Option("--by", help="Also one row per query type.")] = None,
    metric: Annotated[str, typer.Option("--metric", help="Metric of the system ranking comparison.")] = "ndcg@10",
    fmt: FormatOption = OutputFormat.table,
    out: OutOption = None, force: ForceOption = False,
    db: DbOption = None,
) -> None:
    """Compare a judge with people: labels (kappa, quadratic-weighted and unweighted; agreement, MAE,
    confusion) and system ranking (tau). The verdict gates on the quadratic-weighted kappa. The gate's
    measures follow: binarized kappa and leniency, with 95% intervals over queries; tau_ap, tau over the
    top 5 systems, per-query tau; the newest canary and self-consistency check (docs/judges.md).

    Against the human consensus on the items both labelled, and against the systems' order under the
    human labels (Kendall's tau-b, largest rank change); a verdict per query type.
    """
    from ndcg_labeling.sources.calibration import CALIBRATION_COLUMNS, RELEVANT_FROM, TOP_SYSTEMS
    from ndcg_labeling.sources.calibration import calibrate as run

    check_out(out, force)
    with open_session(db) as session:
        report = run(session=session, judge=judge, batch=batch, by=by.value if by else None, metric=metric)
    if fmt is OutputFormat.json:
        write_output(json.dumps(report.as_dict(), indent=2), out, force)
        return
    if fmt is OutputFormat.csv:
        write_output(render_rows(report.rows, fmt, columns=CALIBRATION_COLUMNS) or "", out, force)
        return
    # the table names the kappa's weighting: ``kappa`` (kept in json and csv) is kappa_quadratic
    named = ["kappa_quadratic", "kappa_unweighted"]
    columns = [c for c in CALIBRATION_COLUMNS[:13] if c not in ("kappa", "verdict", "max_rank_change_system", *named)]
    columns[2:2] = named
    with printed_to(out, force):
        render_rows(report.rows, fmt, columns=columns,
                    title=f"calibration of {report.judge} against people (scale {report.scale}, {report.metric})")
        for row in report.rows:
            grades = [str(g) for g in row["grades"]]
            cm = [{"people \\ judge": g, **dict(zip(grades, counts, strict=True))}
                  for g, counts in zip(grades, row["confusion"], strict=True)]
            render_rows(cm, fmt, columns=["people \\ judge", *grades],
                        title=f"confusion ({row['scope']}, n {row['n']})")
        render_rows(gate_table_rows(report.rows), fmt, columns=list(GATE_TABLE_COLUMNS),
                    title=f"the gate: kappas and leniency (judge - people, in grades) [95% interval over queries]; "
                          f"binary: relevant = grade >= {RELEVANT_FROM}; tau, tau_ap over all systems and the top "
                          f"{TOP_SYSTEMS} of people's order; per-query tau: mean ± sd")
        for line in gate_lines(report.checks):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        for line in report.verdicts:
            console.print(f"Verdict: {line}", markup=False, highlight=False, soft_wrap=True)


def print_quality_demo(result: Any, con: Console) -> None:
    """The demo's quality part: the gold-based quality table, consensus before/after, the calibration."""
    if result is None:
        return
    con.print(_demo_table("grader quality on gold items (simulated: dev random, emma lenient)", result.quality.rows,
                          ("grader", "n_gold", "gold_accuracy", "within_one", "bias", "trusted", "drift")))
    for line in result.lines():
        con.print(line, markup=False, highlight=False)
    con.print(_demo_table(f"calibration of the simulated judge {result.calibration.judge} against people",
                          result.calibration.rows,
                          ("scope", "n", "kappa_quadratic", "kappa_unweighted", "exact_agreement", "mae", "tau",
                           "max_rank_change")))
    for line in result.calibration.verdicts:
        con.print(f"verdict: {line}", markup=False, highlight=False)


def _demo_table(title: str, rows: list[dict[str, Any]], cols: tuple[str, ...]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for col in cols:
        table.add_column(col, justify="left" if col == cols[0] else "right")
    for r in rows:
        table.add_row(*("-" if r[c] is None else (f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c])) for c in cols))
    return table


def register(app: typer.Typer) -> None:
    """Add ``gold``, ``calibrate`` and ``graders quality`` (the graders group comes from import_cmds)."""
    from ndcg_labeling.cli.import_cmds import graders_app

    app.add_typer(gold_app, name="gold")
    app.command("calibrate")(calibrate)
    graders_app.command("quality")(graders_quality)
