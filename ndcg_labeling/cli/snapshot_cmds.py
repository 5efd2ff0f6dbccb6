"""``snapshot config add | list``, ``snapshot take | list | diff``: rankings straight from search engines."""

from __future__ import annotations

from typing import Annotated

import typer

from ndcg_labeling.choices import OutputFormat, SearchKind
from ndcg_labeling.cli.common import (
    DbOption,
    FormatOption,
    SummaryFormatOption,
    open_session,
    print_summary,
    write_output,
)
from ndcg_labeling.reports.rows import render_rows

snapshot_app = typer.Typer(help="Rankings straight from search engines: configurations, snapshots, diffs.",
                           no_args_is_help=True)
config_app = typer.Typer(help="Search configurations: where and how to ask an engine.", no_args_is_help=True)
snapshot_app.add_typer(config_app, name="config")

NameArg = Annotated[str, typer.Argument(help="The configuration's name.", show_default=False)]


def _echo(text: str | None) -> None:
    if text is not None:
        write_output(text, None)


@config_app.command("add")
def config_add(
    name: NameArg,
    kind: Annotated[SearchKind, typer.Option("--kind", help="The engine.")],
    url: Annotated[str, typer.Option("--url", help="The engine's base URL (Solr: up to /solr).")],
    template: Annotated[str, typer.Option("--template", help="The request template: a JSON file with {{query}}, {{depth}}, ... (docs/engines.md).")],
    index: Annotated[str | None, typer.Option("--index", help="The index (Elasticsearch, OpenSearch) or collection (Solr).")] = None,
    id_path: Annotated[str | None, typer.Option("--id-path", help="Where a result's id is: a dotted path with one [] (default per kind; required for http-json).")] = None,
    score_path: Annotated[str | None, typer.Option("--score-path", help="Where a result's score is (default per kind); none: rank order.")] = None,
    key_env: Annotated[str | None, typer.Option("--key-env", help="The NAME of the environment variable holding the credential (never the credential).")] = None,
    key_header: Annotated[str | None, typer.Option("--key-header", help="vespa, http-json: send the credential bare in this header (e.g. X-Api-Key) instead of as a Bearer token.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds for one request, retries apart.")] = 10.0,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Requests in flight at once.")] = 8,
    rate: Annotated[float | None, typer.Option("--rate", help="At most this many requests per second; default: no limit.")] = None,
    fmt: SummaryFormatOption = OutputFormat.text,
    db: DbOption = None,
) -> None:
    """Store a search configuration (its template read from --template and hashed)."""
    from ndcg_labeling.snapshots.configs import ConfigSpec, add_config

    spec = ConfigSpec(name, kind.value, url, template, index=index, id_path=id_path, score_path=score_path,
                      key_env=key_env, key_header=key_header, timeout=timeout, concurrency=concurrency, rate=rate)
    with open_session(db, template) as session:
        added = add_config(spec, session=session)
    print_summary(added, fmt)


@config_app.command("list")
def config_list(fmt: FormatOption = OutputFormat.table, db: DbOption = None) -> None:
    """The search configurations (the credential's variable name, never its value)."""
    from ndcg_labeling.snapshots.configs import list_configs

    with open_session(db, read_only=True) as session:
        rows = list_configs(session=session)
    _echo(render_rows(rows, fmt, title="search configurations"))


@snapshot_app.command("take")
def take(
    config: NameArg,
    queries: Annotated[str | None, typer.Option("--queries", help="A query set (query_id,text,query_type and any columns the template names); default: the stored queries.")] = None,
    query_type: Annotated[list[str] | None, typer.Option("--query-type", help="Only stored queries of this type (repeat).")] = None,
    depth: Annotated[int, typer.Option("--depth", help="Results asked for per query ({{depth}}), 1 to 1000.")] = 10,
    fmt: SummaryFormatOption = OutputFormat.text,
    db: DbOption = None,
) -> None:
    """Send every query to the engine and store the rankings as a stored run named CONFIG@TIMESTAMP
    (all or nothing)."""
    from ndcg_labeling.snapshots.take import take_snapshot

    if queries and query_type:
        raise typer.BadParameter("--query-type filters the stored queries; it does not go with --queries",
                                 param_hint="--query-type")
    with open_session(db, queries) as session:
        taken = take_snapshot(config, session=session, queries_file=queries, query_types=query_type, depth=depth)
    print_summary(taken, fmt)


@snapshot_app.command("list")
def list_(config: Annotated[str | None, typer.Option("--config", help="Only this configuration's snapshots.")] = None,
          fmt: FormatOption = OutputFormat.table, db: DbOption = None) -> None:
    """The snapshots, oldest first: run name, configuration, time, depth, counts, template hash."""
    from ndcg_labeling.snapshots.take import list_snapshots

    with open_session(db, read_only=True) as session:
        rows = list_snapshots(session=session, config=config)
    _echo(render_rows(rows, fmt, title="snapshots"))


@snapshot_app.command("diff")
def diff(
    snapshots: Annotated[list[str], typer.Argument(help="Two or more snapshots (or stored runs), oldest first.")],
    k: Annotated[int, typer.Option("-k", help="The top k compared, and the k of NDCG@k.")] = 10,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """Per query, from each snapshot to the next: documents entering and leaving the top k, rank changes,
    the NDCG@k change against the labels in force, and the unjudged documents of the newer one."""
    from ndcg_labeling.reports.snapshots import render_diff
    from ndcg_labeling.snapshots.diff import diff_snapshots

    with open_session(db, read_only=True) as session:
        result = diff_snapshots(snapshots, session=session, k=k)
    _echo(render_diff(result.k, result.rows, result.pairs, result.notes, fmt))


def register(app: typer.Typer) -> None:
    """Add the ``snapshot`` group to ``app``."""
    app.add_typer(snapshot_app, name="snapshot")
