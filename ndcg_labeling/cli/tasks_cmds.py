"""``tasks create | status | list | delete | export | import`` and the interactive ``grade`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ndcg_labeling import choices
from ndcg_labeling.choices import OutputFormat, PoolStrategy
from ndcg_labeling.cli.common import (
    DbOption,
    ForceOption,
    FormatOption,
    JsonSummaryOption,
    OutFileOption,
    SummaryFormatNamedOption,
    SummaryFormatOption,
    console,
    err_console,
    handle_errors,
    open_session,
    print_summary,
    summary_format,
    write_output,
)
from ndcg_labeling.reports.rows import render_rows

tasks_app = typer.Typer(help="Position-blind grading batches: pool, assign, export, import, track progress.",
                        no_args_is_help=True)

BatchArg = Annotated[str, typer.Argument(help="The batch name.", show_default=False)]
GraderOption = Annotated[str, typer.Option("--grader", help="The grader (as added with `graders add`).")]


TaskFileFormat = choices.TaskFileFormat  # the vocabulary lives in ndcg_labeling.choices


def _warn(lines: list[str]) -> None:
    for line in lines:
        err_console.print(f"Warning: {line}", markup=False)


@tasks_app.command("create")
def create(
    batch: BatchArg,
    scale: Annotated[str, typer.Option("--scale", help="Grading scale: 0-3 or 0-4.")],
    overlap: Annotated[int, typer.Option("--overlap", help="Graders per item (N distinct graders).")],
    graders: Annotated[str, typer.Option("--graders", help="Comma-separated grader names: a,b,c.")],
    depth: Annotated[int | None, typer.Option("--depth", help="Pool depth K (1 to 1000): the top-K documents of each system per query (not with --from-traffic).")] = None,
    system: Annotated[list[str] | None, typer.Option("--system", help="A system to pool from (repeat); default: all.")] = None,
    query_type: Annotated[list[str] | None, typer.Option("--query-type", help="Only queries of this type (repeat).")] = None,
    query_id: Annotated[list[str] | None, typer.Option("--query-id", help="Only this query (repeat).")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Random seed of assignment, order and item ids; default: random (recorded).")] = None,
    gold_rate: Annotated[float, typer.Option("--gold-rate", help="Share of each grader's items that are gold items (0..0.5).")] = 0.0,
    gold_feedback: Annotated[bool, typer.Option("--gold-feedback", help="Show the expected grade after a gold item.")] = False,
    from_traffic: Annotated[list[str] | None, typer.Option("--from-traffic", help="Pool the unjudged pairs with the most impressions in these logs (repeat).")] = None,
    budget: Annotated[int | None, typer.Option("--budget", help="With --from-traffic or --strategy: how many pairs to pool.")] = None,
    strategy: Annotated[PoolStrategy | None, typer.Option("--strategy", help="Judge --budget pairs of the depth-K pool chosen by depth, mtf, bandit, sample or weighted (docs/budget.md); default: the whole pool.")] = None,
    by: Annotated[str, typer.Option("--by", help="With --from-traffic: pair (heaviest first) or query-type (budget split by traffic).")] = "pair",
    half_life: Annotated[str, typer.Option("--half-life", help="With --from-traffic: impressions halve in weight every this long.")] = "14d",
    audit_of: Annotated[str | None, typer.Option("--audit-of", help="Audit this batch, which --judge graded in full: --budget of its queries for people, stratified by query type and judge grade (docs/judges.md).")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="With --audit-of: the judge (a model grader) whose labels are audited.")] = None,
    from_snapshot: Annotated[str | None, typer.Option("--from-snapshot", help="Pool exactly the pairs of this snapshot's top --depth (default: its depth) that have no label in force.")] = None,
    db: DbOption = None,
    fmt: SummaryFormatOption = OutputFormat.text,
) -> None:
    """Pool the top-K documents of the systems, leave out pairs already judged N times, and give each
    item to N graders, load-balanced, in each grader's own random order."""
    from ndcg_labeling.labels.tasks import create_batch

    names = [g for g in (part.strip() for part in graders.split(",")) if g]
    if from_traffic and strategy is not None:
        raise typer.BadParameter("--strategy pools from the stored rankings; it does not go with --from-traffic",
                                 param_hint="--strategy")
    if audit_of is not None:
        from ndcg_labeling.cli.audit_hook import create_audit_batch

        create_audit_batch(batch, audit_of, scale=scale, judge=judge, budget=budget, overlap=overlap, graders=names, seed=seed,
                           depth=depth, db=db, fmt=fmt)
        return
    if from_snapshot is not None:
        if from_traffic or strategy is not None or system or query_type or query_id:
            raise typer.BadParameter("--from-snapshot pools the snapshot's unjudged pairs; it goes with none of "
                                     "--from-traffic, --strategy, --system, --query-type, --query-id",
                                     param_hint="--from-snapshot")
        from ndcg_labeling.cli.snapshot_hook import create_from_snapshot

        create_from_snapshot(batch, from_snapshot, depth=depth, scale=scale, overlap=overlap, graders=names,
                             seed=seed, gold_rate=gold_rate, gold_feedback=gold_feedback, db=db, fmt=fmt)
        return
    if from_traffic:
        from ndcg_labeling.cli.traffic_hook import create_from_traffic

        create_from_traffic(batch, list(from_traffic), budget=budget, by=by, half_life=half_life, scale=scale,
                            overlap=overlap, graders=names, seed=seed, gold_rate=gold_rate,
                            gold_feedback=gold_feedback, depth=depth, db=db, fmt=fmt)
        return
    if depth is None:
        raise typer.BadParameter("--depth is required (or pool with --from-traffic)", param_hint="--depth")
    from ndcg_labeling.labels.tasks.pooling import check_depth

    with handle_errors():
        check_depth(depth)
    if strategy is not None:
        from ndcg_labeling.labels.tasks.budgeted import create_budgeted

        with open_session(db) as session:
            result = create_budgeted(batch, strategy=strategy.value, budget=budget, scale=scale, depth=depth,
                                     overlap=overlap, graders=names, session=session, systems=system,
                                     query_types=query_type, query_ids=query_id, seed=seed, gold_rate=gold_rate,
                                     gold_feedback=gold_feedback)
        print_summary(result, fmt)
        return
    with open_session(db) as session:
        result = create_batch(batch, scale=scale, depth=depth, overlap=overlap, graders=names, session=session,
                              systems=system, query_types=query_type, query_ids=query_id, seed=seed,
                              gold_rate=gold_rate, gold_feedback=gold_feedback)
    print_summary(result, fmt)


@tasks_app.command("extend")
def extend(
    batch: BatchArg,
    budget: Annotated[int, typer.Option("--budget", help="How many more pairs to pool.")],
    db: DbOption = None,
    fmt: SummaryFormatOption = OutputFormat.text,
) -> None:
    """Grow a batch made with --strategy by one round: its strategy picks --budget more pairs, seeing the
    grades the batch has so far; they go to the batch's graders after their current items."""
    from ndcg_labeling.labels.tasks.budgeted import extend_batch

    with open_session(db) as session:
        result = extend_batch(batch, budget=budget, session=session)
    print_summary(result, fmt)


@tasks_app.command("status")
def status(batch: BatchArg, fmt: FormatOption = OutputFormat.table, db: DbOption = None) -> None:
    """Progress of a batch: per grader done/skipped/total; items with all N grades; items still open."""
    from ndcg_labeling.cli.common import open_connection
    from ndcg_labeling.labels.overview import batch_status  # Core reads: starts without the ORM

    with open_connection(db) as conn:
        result = batch_status(batch, session=conn)
    _warn(result.warnings)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(result.as_dict()))
        return
    rows: list[dict[str, object]] = [
        {"grader": g.grader, "done": g.done, "skipped": g.skipped, "open": g.open, "total": g.total}
        for g in result.graders]
    done = sum(g.done for g in result.graders)
    skipped = sum(g.skipped for g in result.graders)
    total = sum(g.total for g in result.graders)
    rows.append({"grader": "(all)", "done": done, "skipped": skipped, "open": total - done - skipped, "total": total,
                 "complete_items": result.complete_items, "open_items": result.open_items, "items": result.items})
    columns = ["grader", "done", "skipped", "open", "total"]
    if fmt is OutputFormat.csv:
        write_output(render_rows(rows, fmt, columns=[*columns, "items", "complete_items", "open_items"]) or "", None)
        return
    render_rows(rows, fmt, title=f"batch {result.batch} (scale {result.scale}, overlap {result.overlap})", columns=columns)
    console.print(f"items: {result.items:,}; complete (all {result.overlap} grades): {result.complete_items:,}; "
                  f"still open: {result.open_items:,}", markup=False, highlight=False)


@tasks_app.command("list")
def list_cmd(fmt: FormatOption = OutputFormat.table, db: DbOption = None) -> None:
    """List grading batches with their scale, size and progress."""
    from ndcg_labeling.cli.common import open_connection
    from ndcg_labeling.labels.overview import list_batches  # Core reads: starts without the ORM

    with open_connection(db) as conn:
        rows = list_batches(session=conn)
    columns = ["batch", "scale", "items", "graders", "overlap", "done", "total", "progress", "guideline_version",
               "guideline_changed", "created_at"]
    if fmt is OutputFormat.table:
        if not rows:
            typer.echo("no grading batches yet; create one with `ndcg-labeling tasks create`")
            return
        shown = [{"batch": r["batch"], "scale": r["scale"], "items": f"{r['items']:,}", "graders": r["graders"],
                  "overlap": r["overlap"], "progress": f"{r['done']:,}/{r['total']:,} ({r['progress']:.1%})",
                  "guideline": f"{r['guideline_version'] or '?'}{' (changed since)' if r['guideline_changed'] else ''}"}
                 for r in rows]
        render_rows(shown, fmt, title="grading batches",
                    columns=["batch", "scale", "items", "graders", "overlap", "progress", "guideline"])
        return
    write_output(render_rows(rows, fmt, columns=columns) or "", None)


@tasks_app.command("delete")
def delete(batch: BatchArg, db: DbOption = None, fmt: SummaryFormatOption = OutputFormat.text) -> None:
    """Delete a batch nobody has graded yet (its items and assignments); refused once anyone graded or skipped."""
    from ndcg_labeling.workspace.lead import delete_batch

    with open_session(db) as session:
        result = delete_batch(batch, session=session)
    print_summary(result, fmt)


@tasks_app.command("export")
def export(
    batch: BatchArg,
    grader: GraderOption,
    out: OutFileOption,
    fmt: Annotated[TaskFileFormat | None, typer.Option("--format", help="Default: from the extension (.csv, .jsonl, .json = label-studio).")] = None,
    force: ForceOption = False,
    db: DbOption = None,
) -> None:
    """Write the grader's open items, in the grader's order: item_id,query,title,body,url,grade (empty).
    An existing file (perhaps the grader's filled-in copy) is kept unless --force."""
    from ndcg_labeling.cli.common import check_out
    from ndcg_labeling.labels.tasks import export_tasks_file

    check_out(str(out), force)
    with open_session(db) as session:
        result = export_tasks_file(batch, grader=grader, out=out, session=session, fmt=fmt.value if fmt else None,
                                   force=force)
    _warn(result.warnings)
    typer.echo(str(result))


@tasks_app.command("import")
def import_cmd(
    file: Annotated[Path, typer.Argument(help="The filled task file.", show_default=False, readable=False)],
    grader: GraderOption,
    fmt: Annotated[TaskFileFormat | None, typer.Option("--format", help="Default: from the extension (.csv, .jsonl, .json = label-studio).")] = None,
    batch: Annotated[str | None, typer.Option("--batch", help="The batch the file must belong to; default: the batch of its items.")] = None,
    db: DbOption = None,
    as_json: JsonSummaryOption = False,
    overwrite_newer: Annotated[bool, typer.Option(
        "--overwrite-newer", help="Replace grades made after the file was exported (refused and counted otherwise).")] = False,
    summary_fmt: SummaryFormatNamedOption = None,
) -> None:
    """Import a filled task file (CSV/JSONL with item_id,grade or a Label Studio JSON export) as judgments.

    A row replaces a different stored grade only if the file was exported after that grade was made
    (its exported_at column) or the grade came from this same file; other such rows are refused and
    counted, unless --overwrite-newer."""
    from ndcg_labeling.labels.tasks import GradedFileError, import_graded

    out_fmt = summary_format(as_json, summary_fmt)
    with open_session(db) as session:
        try:
            result = import_graded(file, grader=grader, session=session, fmt=fmt.value if fmt else None, batch=batch,
                                   overwrite_newer=overwrite_newer)
        except GradedFileError as exc:
            for line in exc.lines:
                err_console.print(f"Error: {line}", markup=False)
            raise typer.Exit(1) from None  # the transaction rolls back: nothing is written
    print_summary(result, out_fmt)


def grade(batch: BatchArg, grader: GraderOption, db: DbOption = None) -> None:
    """Grade a batch in the terminal: digits grade, s skips, u undoes, ? shows the guideline, q quits.

    Each grade is saved at once; a later session resumes at the grader's first open item.
    """
    from ndcg_labeling.cli.grade_session import run_grading_session

    run_grading_session(batch, grader=grader, db=db)


def register(app: typer.Typer) -> None:
    """Add the ``tasks`` sub-app and the top-level ``grade`` command to ``app``."""
    app.add_typer(tasks_app, name="tasks")
    app.command("grade")(grade)
