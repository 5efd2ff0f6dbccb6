"""``db upgrade | downgrade | current`` and ``status``."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli import common
from ndcg_labeling.cli.common import DbOption, FormatOption, engine_for, handle_errors, open_connection
from ndcg_labeling.errors import NdcgLabelingError

db_app = typer.Typer(help="Create and migrate the database schema (Alembic).", no_args_is_help=True)


@db_app.command("upgrade")
def upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head", db: DbOption = None) -> None:
    """Create or upgrade the schema to REVISION (default: head)."""
    from ndcg_labeling.db import migrate

    with handle_errors():
        engine = engine_for(db, check_head=False, create=True)
        migrate.upgrade(engine, revision)
        common.console.print(f"database at revision {migrate.current_revision(engine)}", markup=False, highlight=False)


@db_app.command("downgrade")
def downgrade(revision: Annotated[str, typer.Argument(help="Target revision, or 'base' for an empty database.")],
              db: DbOption = None,
              yes: Annotated[bool, typer.Option("--yes", help="Drop tables that hold data without asking.")] = False) -> None:
    """Downgrade the schema to REVISION. Tables that would be dropped with rows in them need --yes."""
    from ndcg_labeling.db import migrate

    with handle_errors():
        engine = engine_for(db, check_head=False)
        losing = migrate.tables_losing_data(engine, revision)
        if losing and not yes:
            listed = ", ".join(f"{name} ({n:,} rows)" for name, n in losing.items())
            raise NdcgLabelingError(f"downgrading to {revision[:80]!r} would drop tables holding data: {listed}; "
                                    f"pass --yes to drop them")
        migrate.downgrade(engine, revision)
        common.console.print(f"database at revision {migrate.current_revision(engine) or 'base'}", markup=False,
                      highlight=False)


@db_app.command("current")
def current(db: DbOption = None) -> None:
    """Print the schema revision of the database and the head revision of this tool."""
    from ndcg_labeling.db import migrate
    from ndcg_labeling.db.session import sqlite_file

    with handle_errors():
        file = sqlite_file(db)
        if file is not None and not file.exists():
            rev = None  # no connection: no empty database file left behind
        else:
            engine = engine_for(db, check_head=False)
            rev = migrate.current_revision(engine)
            engine.dispose()
        head = migrate.HEAD_REVISION
        state = "at head" if rev == head else "not at head: run `ndcg-labeling db upgrade`"
        typer.echo(f"{rev or 'base'} (head {head}; {state})")


def status(db: DbOption = None,
           fmt: FormatOption = OutputFormat.table) -> None:
    """Counts of queries, documents, graders, systems, rankings, judgments and consensus labels."""
    from ndcg_labeling.db.tables import table_counts  # Core reads: no ORM, no pandas (issue 17)

    with open_connection(db) as conn:
        counts = table_counts(session=conn)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(counts))
    elif fmt is OutputFormat.csv:
        typer.echo("table,count")
        for key, value in counts.items():
            typer.echo(f"{key},{value}")
    else:
        from rich.table import Table

        table = Table(title="ndcg-labeling database")
        table.add_column("table")
        table.add_column("rows", justify="right")
        for key, value in counts.items():
            table.add_row(key, f"{value:,}")
        common.console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
    app.command("status")(status)
