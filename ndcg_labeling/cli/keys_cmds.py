"""``keys``: ingest keys for ``POST /api/events`` (shown once, stored hashed, revocable)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import (
    DbOption,
    FormatOption,
    SummaryFormatOption,
    open_session,
    print_summary,
    write_output,
)
from ndcg_labeling.reports.rows import render_rows

keys_app = typer.Typer(help="Ingest keys for posting events to a running server.", no_args_is_help=True)


class Role(StrEnum):
    ingest = "ingest"


@keys_app.command("add")
def add(name: Annotated[str, typer.Argument(help="A name for the key (who or what posts with it).")],
        role: Annotated[Role, typer.Option("--role", help="What the key may do.")] = Role.ingest,
        fmt: SummaryFormatOption = OutputFormat.text,
        db: DbOption = None) -> None:
    """Create a key; it is printed once (only its sha256 is stored)."""
    from ndcg_labeling.workspace.ingest_keys import add_key

    with open_session(db) as session:
        issued = add_key(name, role.value, session=session)
    print_summary(issued, fmt)


@keys_app.command("revoke")
def revoke(name: Annotated[str, typer.Argument(help="The key's name.")], db: DbOption = None) -> None:
    """Revoke a key: posts with it are refused from now on."""
    from ndcg_labeling.workspace.ingest_keys import revoke_key

    with open_session(db) as session:
        typer.echo(revoke_key(name, session=session))


@keys_app.command("list")
def list_(fmt: FormatOption = OutputFormat.table, db: DbOption = None) -> None:
    """The keys (never the keys themselves): name, role, created, revoked."""
    from ndcg_labeling.workspace.ingest_keys import list_keys

    with open_session(db, read_only=True) as session:
        rows = list_keys(session=session)
    text = render_rows(rows, fmt, title="ingest keys", columns=("name", "role", "created_at", "revoked"))
    if text is not None:
        write_output(text, None)


def register(app: typer.Typer) -> None:
    """Add the ``keys`` group to ``app``."""
    app.add_typer(keys_app, name="keys")
