"""``implicit derive``: labels from behavior (click models, watch time) as a behavior grader's judgments."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

from ndcg_labeling.choices import LogEngineName, OutputFormat
from ndcg_labeling.cli.common import (
    DbOption,
    ForceOption,
    OutOption,
    check_out,
    format_option,
    handle_errors,
    open_session,
    parse_columns,
    write_output,
)

implicit_app = typer.Typer(help="Labels from behavior: click models and watch time over interaction logs.",
                           no_args_is_help=True)


class Model(StrEnum):
    coec = "coec"
    pbm = "pbm"
    dbn = "dbn"
    watch = "watch"


class ScaleName(StrEnum):
    s03 = "0-3"
    s04 = "0-4"


def _thresholds(text: str | None) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a comma-separated list of numbers", param_hint="--thresholds") from None


@implicit_app.command("derive")
def derive(
    logs: Annotated[list[str], typer.Argument(help="Impression logs: Parquet files, folders or globs; CSV, TSV, JSONL.")],
    model: Annotated[Model, typer.Option("--model", help="coec, pbm (EM), dbn (EM) or watch (decayed watch_ratio).")],
    grader: Annotated[str, typer.Option("--grader", help="The behavior grader the grades are stored under.")],
    scale: Annotated[ScaleName, typer.Option("--scale", help="The grading scale.")] = ScaleName.s03,
    half_life: Annotated[str | None, typer.Option("--half-life", help="Weigh impressions by 0.5^(age/half-life), e.g. 14d.")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Reference time of the decay (ISO 8601 or epoch s); default: newest ts.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only impressions at or after this time.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Only impressions at or before this time.")] = None,
    min_impressions: Annotated[int, typer.Option("--min-impressions", help="Leave pairs with fewer impressions ungraded.")] = 20,
    thresholds: Annotated[str | None, typer.Option("--thresholds", help="Cut points score -> grade, e.g. 0.1,0.4,0.8.")] = None,
    fit_to: Annotated[str | None, typer.Option("--fit-to", help="Fit the cut points to this batch's human consensus (held-out kappa reported).")] = None,
    batch: Annotated[str, typer.Option("--batch", help="Store the judgments in this batch.")] = "",
    column: Annotated[list[str] | None, typer.Option("--column", help="NAME=SOURCE: read log column NAME from SOURCE (repeatable).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace the grader's previous behavior judgments.")] = False,
    fmt: Annotated[OutputFormat, format_option(OutputFormat.table, OutputFormat.csv, OutputFormat.json,
                                               OutputFormat.html)] = OutputFormat.table,
    out: OutOption = None, force: ForceOption = False,
    db: DbOption = None,
    engine: Annotated[LogEngineName, typer.Option("--engine", help="Log engine: duckdb (embedded) or spark (docs/scale.md).")] = LogEngineName.duckdb,
    spark_master: Annotated[str | None, typer.Option("--spark-master", help="Spark master URL for --engine spark (default local[*]).")] = None,
) -> None:
    """Derive graded judgments from interaction logs and store them as a behavior grader's judgments."""
    from ndcg_labeling.reports.behavior import render
    from ndcg_labeling.sources.behavior import DeriveOptions, derive_labels, parse_duration, parse_time

    check_out(out, force)
    cols, cuts = parse_columns(column or []), _thresholds(thresholds)
    with handle_errors():
        options = DeriveOptions(
            model=model.value, grader=grader, scale=scale.value,
            half_life_s=parse_duration(half_life) if half_life is not None else None,
            as_of=parse_time(as_of, "--as-of") if as_of is not None else None,
            since=parse_time(since, "--since") if since is not None else None,
            until=parse_time(until, "--until") if until is not None else None,
            min_impressions=min_impressions, thresholds=cuts, fit_to=fit_to, batch=batch, columns=cols,
            replace=replace, engine=engine.value, spark_master=spark_master)
    from contextlib import AbstractContextManager, nullcontext

    from ndcg_labeling.cli.common import err_console

    status: AbstractContextManager[Any] = (err_console.status("aggregating the logs and fitting the model")
                                           if err_console.is_terminal else nullcontext())
    with open_session(db) as session, status:
        result = derive_labels(list(logs), options, session=session)
    write_output(render(result.as_dict(), fmt.value), out, force)


def register(app: typer.Typer) -> None:
    """Add the ``implicit`` group to ``app``."""
    app.add_typer(implicit_app, name="implicit")


def print_behavior_demo(result: Any, con: Console) -> None:
    """The demo's behavior part: what was derived from the log and its calibration against people."""
    if result is None:
        return
    d, cal = result.derived, result.calibration
    fit = d.get("fit") or {}
    curve = ", ".join("-" if v is None else f"{v:.2f}" for v in d["position_bias"])
    lines = [f"behavior labels ({d['model']}, half-life {d['window']['half_life_s'] / 86400:.0f} days) from "
             f"{result.log}: {d['n_impressions']} impressions, {d['pairs_graded']} pairs graded by {d['grader']}, "
             f"{d['pairs_left_out']} left out ({d['pairs_left_out_few_impressions']} with fewer than "
             f"{d['min_impressions']} impressions, {d['pairs_left_out_no_score']} without a score)",
             f"examination by position: {curve}",
             f"cut points fitted to batch {fit.get('batch')}: held-out quadratic-weighted kappa "
             f"{fit.get('kappa_held_out')} ({fit.get('n_held_out_pairs')} pairs of {fit.get('n_held_out_queries')} "
             f"queries never used in the fit)"]
    lines += [f"calibration of {cal['judge']}: {v}" for v in cal["verdicts"]]
    for line in lines:
        con.print(line, markup=False, highlight=False)
