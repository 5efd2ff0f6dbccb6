"""``agreement``, ``consensus``, ``adjudicate list|set`` and ``export qrels``."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ndcg_labeling import choices
from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import (
    DbOption,
    ForceOption,
    FormatOption,
    OutOption,
    check_out,
    err_console,
    open_session,
    printed_to,
    row_progress,
    write_output,
)
from ndcg_labeling.reports.rows import render_rows

adjudicate_app = typer.Typer(help="List items flagged for adjudication and record final grades.",
                             no_args_is_help=True)
export_app = typer.Typer(help="Export the labels in force.", no_args_is_help=True)

BatchOption = Annotated[str | None, typer.Option("--batch", help="Only the judgments of this batch.")]
IncludeModels = Annotated[bool, typer.Option("--include-models", help="Count model graders (automatic judges) too.")]
IncludeBehavior = Annotated[bool, typer.Option("--include-behavior", help="Count behavior graders (labels from clicks or watch time) too.")]


# The vocabularies live in ndcg_labeling.choices.
Level = choices.AgreementLevel
ByScope = choices.AgreementScope
Method = choices.ConsensusMethod
Tie = choices.TieRule
Point = choices.DawidSkenePoint
Rounding = choices.QrelsRounding


TABLE_COLUMNS = ("scope", "alpha", "n_items", "n_graders", "n_grades", "percent_agreement", "ac1", "ac2", "reason")
GRADER_TABLE_COLUMNS = ("scope", "alpha", "n_items", "n_grades", "mean_difference", "mean_kappa", "n_partners",
                        "flagged", "reason")


def agreement(
    batch: BatchOption = None,
    by: Annotated[ByScope | None, typer.Option("--by", help="One row per query type, query or grader.")] = None,
    level: Annotated[Level, typer.Option("--level", help="Level of measurement for alpha.")] = Level.ordinal,
    include_models: IncludeModels = False,
    include_behavior: IncludeBehavior = False,
    fmt: FormatOption = OutputFormat.table,
    out: OutOption = None, force: ForceOption = False,
    db: DbOption = None,
) -> None:
    """Krippendorff's alpha, percent agreement and Gwet's AC1/AC2 of the judgments (row 'all' first)."""
    from ndcg_labeling.labels.agreement import agreement_report

    check_out(out, force)
    with open_session(db) as session:
        report = agreement_report(session=session, batch=batch, by=by.value if by else None,
                                  level=level.value, include_models=include_models,
                                  include_behavior=include_behavior)
    columns = list(report.columns)
    if fmt is OutputFormat.json and report.by == "grader":
        columns.append("kappa")
    if fmt is OutputFormat.table:  # narrower: the notes are printed under the table instead
        columns = list(GRADER_TABLE_COLUMNS if report.by == "grader" else TABLE_COLUMNS)
    scope = f"batch {report.batch}" if report.batch is not None else "all judgments"
    with printed_to(out, force):
        text = render_rows(report.rows, fmt, columns=columns,
                           title=f"agreement ({report.level}, scale {report.scale}, {scope})")
        if text is None:
            for warning in report.warnings:
                typer.echo(f"Warning: {warning}")
            for note in report.notes:
                typer.echo(f"Note: {note}")
    if text is not None:
        write_output(text, out, force)
    for warning in report.warnings if text is not None else ():  # csv/json: the warning on stderr, the data clean
        typer.echo(f"Warning: {warning}", err=True)


def consensus_cmd(
    method: Annotated[Method, typer.Option("--method", help="How the grades of an item are combined.")],
    batch: BatchOption = None,
    tie: Annotated[Tie, typer.Option("--tie", help="Median/majority tie: the lower or the higher grade.")] = Tie.low,
    min_graders: Annotated[int, typer.Option("--min-graders", help="Flag items with fewer grades.")] = 2,
    max_spread: Annotated[int, typer.Option("--max-spread", help="Flag items whose max - min grade is above this.")] = 1,
    point: Annotated[Point, typer.Option("--point", help="Dawid-Skene value: posterior mean or mode.")] = Point.mean,
    include_models: IncludeModels = False,
    include_behavior: IncludeBehavior = False,
    exclude_untrusted: Annotated[bool | None, typer.Option("--exclude-untrusted/--include-untrusted", help="Leave out (or count again) graders whose gold accuracy is surely below --min-accuracy; recorded for the scope, later runs honour it. Default: as recorded (count them).")] = None,
    exclude_undecided: Annotated[bool | None, typer.Option("--exclude-undecided/--include-undecided", help="With --exclude-untrusted: also leave out graders whose trust is undecided (recorded too).")] = None,
    recalibrate: Annotated[bool, typer.Option("--recalibrate", help="Shift a consistently biased grader's grades by the ordinal offset their gold answers show (e.g. -1 for one grade too lenient), instead of leaving them out.")] = False,
    min_accuracy: Annotated[float | None, typer.Option("--min-accuracy", help="Gold accuracy a trusted grader needs (0..1); default: as recorded (0.7).")] = None,
    judge_fills: Annotated[str | None, typer.Option("--judge-fills", help="A model judge fills items with fewer human grades than the batch's overlap, on the query types its calibration says agree (needs --batch).")] = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """Write one consensus label per (query, document), replacing the previous ones of the scope."""
    from ndcg_labeling.labels.consensus import run_consensus
    from ndcg_labeling.sources.judge_fill import judge_filler

    with open_session(db) as session, row_progress("writing consensus labels") as progress:
        fill = None if judge_fills is None else judge_filler(judge_fills, batch=batch, session=session)
        summary = run_consensus(session=session, batch=batch, method=method.value, tie=tie.value,
                                min_graders=min_graders, max_spread=max_spread, point=point.value,
                                progress=progress, include_models=include_models,
                                exclude_untrusted=exclude_untrusted, min_accuracy=min_accuracy,
                                exclude_undecided=exclude_undecided, recalibrate=recalibrate,
                                fill=fill, include_behavior=include_behavior)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(summary.as_dict()))
        return
    if fmt is OutputFormat.table:
        typer.echo(str(summary))
    text = render_rows(summary.as_rows(), fmt, columns=["reason", "items"], title="consensus labels")
    if text is not None:
        write_output(text, None)


def flagged_title(rows: list[dict[str, Any]]) -> str:
    """The heading of ``adjudicate list``: how many flagged items are still open and how many adjudicated."""
    n = len(rows)
    done = sum(r.get("adjudicated") is not None for r in rows)
    items = "item" if n == 1 else "items"
    if done == 0:
        return f"{n} {items} flagged for adjudication"
    if done == n:
        return f"{n} flagged {items}, {'adjudicated' if n == 1 else 'all adjudicated'}"
    return f"{n} {items} flagged for adjudication: {n - done} open, {done} adjudicated"


@adjudicate_app.command("list")
def adjudicate_list(batch: BatchOption = None, fmt: FormatOption = OutputFormat.table, out: OutOption = None,
                   force: ForceOption = False, db: DbOption = None) -> None:
    """Items flagged for adjudication, with every grade (grader: grade) and the current consensus."""
    from ndcg_labeling.cli.common import open_connection
    from ndcg_labeling.labels.overview import flagged_items  # Core reads: starts without the ORM or numpy

    with open_connection(db) as conn:
        rows = flagged_items(session=conn, batch=batch)
    columns = ["query_id", "doc_id", "batch", "consensus", "method", "n_graders", "spread", "reason", "grades",
               "adjudicated", "adjudicator"]
    if not rows and fmt is OutputFormat.table:
        typer.echo("no items flagged for adjudication")
        return
    with printed_to(out, force):
        text = render_rows(rows, fmt, columns=columns, title=flagged_title(rows))
    if text is not None:
        write_output(text, out, force)


@adjudicate_app.command("set")
def adjudicate_set(
    query_id: Annotated[str, typer.Argument(help="External query id.")],
    doc_id: Annotated[str, typer.Argument(help="External document id.")],
    grade: Annotated[int, typer.Argument(help="The final grade, on the item's scale.")],
    adjudicator: Annotated[str, typer.Option("--adjudicator", help="Name of the adjudicator.")],
    note: Annotated[str | None, typer.Option("--note", help="Why.")] = None,
    db: DbOption = None,
) -> None:
    """Record the final GRADE of (QUERY_ID, DOC_ID); it overrides the consensus (history is kept)."""
    from ndcg_labeling.labels.consensus import set_adjudication

    with open_session(db) as session:
        record = set_adjudication(query_id, doc_id, grade, adjudicator=adjudicator, note=note, session=session)
    typer.echo(str(record))


@export_app.command("qrels")
def export_qrels(
    out: OutOption = None, force: ForceOption = False,
    rounding: Annotated[Rounding | None, typer.Option("--round", help="Rounding rule for fractional labels.")] = None,
    keep_fraction: Annotated[bool, typer.Option("--keep-fraction", help="Write fractional labels as they are.")] = False,
    db: DbOption = None,
) -> None:
    """Write the labels in force (adjudication, else consensus) as TREC qrels: qid 0 docid rel."""
    from ndcg_labeling.labels.consensus import export_qrels as run

    with open_session(db) as session:
        result = run(session=session, rounding=rounding.value if rounding else None,
                     keep_fraction=keep_fraction)
    if result.warning:
        err_console.print(f"Warning: {result.warning}", markup=False)
    write_output(result.text, out, force)
    if out:
        err_console.print(f"{result.n_labels} qrels lines written to {out}", markup=False)


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("agreement")(agreement)
    app.command("consensus")(consensus_cmd)
    app.add_typer(adjudicate_app, name="adjudicate")
    app.add_typer(export_app, name="export")
