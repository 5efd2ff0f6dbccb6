"""``online report``: NDCG per arm of an A/B test beside CTR, conversion and watch time."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from ndcg_labeling.choices import Gain, LogEngineName, OutputFormat, Unjudged
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
from ndcg_labeling.reports.rows import inert

online_app = typer.Typer(help="Online experiments: NDCG per arm beside the business metrics.", no_args_is_help=True)


class Cluster(StrEnum):
    auto = "auto"
    user = "user"
    session = "session"
    request = "request"


@online_app.command("report")
def report(
    logs: Annotated[list[str], typer.Argument(help="Impression logs with an arm column: Parquet, CSV, TSV, JSONL, folders, globs.")],
    baseline: Annotated[str, typer.Option("--baseline", help="The arm the others are compared with.")],
    metric: Annotated[str, typer.Option("--metric", help="Registry metric of each served list, e.g. ndcg@10.")] = "ndcg@10",
    window: Annotated[str | None, typer.Option("--window", help="Window length for the time series, e.g. 1h, 1d.")] = None,
    labels: Annotated[str, typer.Option("--labels", help="consensus, GRADER, or consensus,GRADER (consensus first).")] = "consensus",
    gain: Annotated[Gain, typer.Option("--gain", help="NDCG gain: 2^rel-1 (exponential) or rel (linear); binary is refused (report only).")] = Gain.exponential,
    cluster: Annotated[Cluster, typer.Option("--cluster", help="Resampling unit: user, session, request; auto: user_id, else session_id, else request.")] = Cluster.auto,
    unjudged: Annotated[Unjudged, typer.Option("--unjudged", help="A request whose query has no label: skip it in the metric's mean (as report skips unjudged queries) or count it as zero.")] = Unjudged.skip,
    column: Annotated[list[str] | None, typer.Option("--column", help="NAME=SOURCE: read log column NAME from SOURCE (repeatable).")] = None,
    fmt: Annotated[OutputFormat, format_option(OutputFormat.table, OutputFormat.csv, OutputFormat.json,
                                               OutputFormat.html)] = OutputFormat.table,
    engine: Annotated[LogEngineName, typer.Option("--engine", help="Log engine: duckdb (embedded) or spark (docs/scale.md).")] = LogEngineName.duckdb,
    spark_master: Annotated[str | None, typer.Option("--spark-master", help="Spark master URL for --engine spark (default local[*]).")] = None,
    out: OutOption = None, force: ForceOption = False,
    db: DbOption = None,
) -> None:
    """Score every served list against the label store and compare the arms on NDCG and business metrics."""
    from ndcg_labeling.experiments.report import OnlineOptions, online_report
    from ndcg_labeling.reports.online import render

    check_out(out, force)
    cols = parse_columns(column or [])
    options = OnlineOptions(baseline=baseline, metric=metric, window=window, labels=labels, gain=gain.value,
                            cluster=cluster.value, columns=cols, engine=engine.value, spark_master=spark_master,
                            unjudged=unjudged.value)
    with open_session(db, read_only=True) as session, handle_errors():
        result = online_report(list(logs), options, session=session)
    text = render(result, fmt.value)
    # arm names, query types and --labels come from the log and the user: the table shows them inert
    write_output(inert(text, newlines=True) if fmt is OutputFormat.table else text, out, force)


def register(app: typer.Typer) -> None:
    """Add the ``online`` group to ``app``."""
    app.add_typer(online_app, name="online")
