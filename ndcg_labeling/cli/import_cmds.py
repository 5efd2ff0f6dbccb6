"""``import queries|documents|graders|run|judgments`` and ``graders add|list``."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import (
    DbOption,
    ForceOption,
    FormatOption,
    JsonSummaryOption,
    OutOption,
    SummaryFormatNamedOption,
    check_out,
    open_session,
    print_summary,
    row_progress,
    summary_format,
    write_output,
)
from ndcg_labeling.reports.rows import render_rows

import_app = typer.Typer(help="Import queries, documents, graders, system runs and judgments.", no_args_is_help=True)
graders_app = typer.Typer(help="Add and list graders.", no_args_is_help=True)

FileArg = Annotated[Path, typer.Argument(help="The file to import.", show_default=False, readable=False)]
InFormat = Annotated[str | None, typer.Option("--format", help="File format; default from the extension.")]
KindOption = Annotated[str, typer.Option("--kind", help="Kind of new graders: human, or model (an automatic judge).")]


def _import(name: str, file: Path, db: str | None, as_json: bool, summary_fmt: OutputFormat | None,
            progress: bool = False, **options: Any) -> None:
    """One ``import`` command: the importer ``name`` of :mod:`ndcg_labeling.labels.importing` over ``file``
    (``progress``: with a display of the rows written)."""
    from ndcg_labeling.labels import importing

    out_fmt = summary_format(as_json, summary_fmt)
    shown = row_progress(f"importing {file.name}") if progress else nullcontext(None)
    with open_session(db, file) as session, shown as progress_to:
        if progress_to is not None:
            options["progress"] = progress_to
        summary = getattr(importing, name)(file, session=session, **options)
    print_summary(summary, out_fmt)


@import_app.command("queries")
def import_queries(file: FileArg, fmt: InFormat = None, db: DbOption = None, as_json: JsonSummaryOption = False,
                   summary_fmt: SummaryFormatNamedOption = None) -> None:
    """Import queries: columns query_id,text,query_type."""
    _import("import_queries", file, db, as_json, summary_fmt, fmt=fmt)


@import_app.command("documents")
def import_documents(file: FileArg, fmt: InFormat = None, db: DbOption = None, as_json: JsonSummaryOption = False,
                     summary_fmt: SummaryFormatNamedOption = None) -> None:
    """Import documents: columns doc_id,title and body and/or url (other columns become metadata)."""
    _import("import_documents", file, db, as_json, summary_fmt, fmt=fmt)


@import_app.command("graders")
def import_graders(file: FileArg, fmt: InFormat = None, db: DbOption = None, as_json: JsonSummaryOption = False,
                   kind: KindOption = "human", summary_fmt: SummaryFormatNamedOption = None) -> None:
    """Import graders: columns grader[,display_name]."""
    _import("import_graders", file, db, as_json, summary_fmt, fmt=fmt, kind=kind)


@import_app.command("run")
def import_run(
    file: FileArg,
    system: Annotated[str, typer.Option("--system", help="The system (ranker) this run belongs to.")],
    fmt: Annotated[str | None, typer.Option("--format", help="trec or csv/tsv/jsonl/parquet; default: by extension (.csv etc. are tables, anything else TREC).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace the stored list of a query that differs.")] = False,
    description: Annotated[str | None, typer.Option("--description", help="Description of a new system.")] = None,
    db: DbOption = None,
    as_json: JsonSummaryOption = False,
    summary_fmt: SummaryFormatNamedOption = None,
) -> None:
    """Import a system's ranking: TREC run (qid Q0 docid rank score tag) or CSV (query_id,doc_id,rank[,score])."""
    _import("import_run", file, db, as_json, summary_fmt, progress=True, system=system, fmt=fmt, replace=replace,
            description=description)


@import_app.command("judgments")
def import_judgments(
    file: FileArg,
    scale: Annotated[str, typer.Option("--scale", help="Grading scale: 0-3 or 0-4.")],
    fmt: Annotated[str | None, typer.Option("--format", help="csv, tsv, jsonl, parquet or trec-qrels; default by extension.")] = None,
    grader: Annotated[str | None, typer.Option("--grader", help="The grader of a TREC qrels file.")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite existing judgments whose grade differs.")] = False,
    create_graders: Annotated[bool, typer.Option("--create-graders", help="Add graders the file names that are unknown.")] = False,
    db: DbOption = None,
    as_json: JsonSummaryOption = False,
    summary_fmt: SummaryFormatNamedOption = None,
) -> None:
    """Import judgments: long format query_id,doc_id,grader,grade[,batch], or TREC qrels with --grader."""
    _import("import_judgments", file, db, as_json, summary_fmt, progress=True, scale=scale, fmt=fmt, grader=grader,
            replace=replace, create_graders=create_graders)


@graders_app.command("add")
def graders_add(names: Annotated[list[str], typer.Argument(help="Grader names.")], db: DbOption = None,
                role: Annotated[str, typer.Option("--role", help="Role of new graders: grader or lead.")] = "grader",
                kind: KindOption = "human") -> None:
    """Add graders by name."""
    from ndcg_labeling.labels.importing import add_graders

    with open_session(db) as session:
        summary = add_graders(names, session=session, role=role, kind=kind)
    typer.echo(f"graders: {summary.new} new, {summary.unchanged} unchanged")


@graders_app.command("list")
def graders_list(db: DbOption = None, fmt: FormatOption = OutputFormat.table, out: OutOption = None,
                 force: ForceOption = False) -> None:
    """List graders with their role, kind and number of judgments."""
    from ndcg_labeling.cli.common import open_connection
    from ndcg_labeling.labels.overview import list_graders  # Core reads: starts without the ORM

    check_out(out, force)
    with open_connection(db) as conn:
        rows = list_graders(session=conn)
    text = render_rows(rows, fmt, title="graders", columns=["grader", "display_name", "active", "role", "kind",
                                                                      "judgments"])
    if text is not None:
        write_output(text, out, force)


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")
    app.add_typer(graders_app, name="graders")
