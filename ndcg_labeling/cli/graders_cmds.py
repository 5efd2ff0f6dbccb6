"""``graders token | revoke | set-role``: sign-in links and roles for the web workspace (``serve``).

The commands join the ``graders`` group that :mod:`ndcg_labeling.cli.import_cmds` defines.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ndcg_labeling.choices import GraderRole, OutputFormat
from ndcg_labeling.cli.common import DbOption, format_option, open_session, print_summary

NameArg = Annotated[str, typer.Argument(help="The grader's name.", show_default=False)]


def token(
    name: NameArg,
    expires: Annotated[str, typer.Option("--expires", help="How long the link is valid: 30d, 12h or 90m.")] = "30d",
    host: Annotated[str, typer.Option("--host", help="Host name of the server in the link.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port of the server in the link.")] = 8000,
    fmt: Annotated[OutputFormat, format_option(OutputFormat.text, OutputFormat.json, OutputFormat.csv,
                                               help="text; json or csv: grader, token, url, expires.")] = OutputFormat.text,
    db: DbOption = None,
) -> None:
    """Print a sign-in link http://HOST:PORT/login?token=TOKEN for the web workspace (stored hashed)."""
    from ndcg_labeling.workspace.auth import issue_token

    with open_session(db) as session:
        issued = issue_token(name, session=session, expires=expires, host=host, port=port)
    print_summary(issued, fmt)


def revoke(name: NameArg, db: DbOption = None) -> None:
    """End every sign-in token and browser session of a grader."""
    from ndcg_labeling.workspace.auth import revoke_tokens

    with open_session(db) as session:
        result = revoke_tokens(name, session=session)
    typer.echo(str(result))


def set_role(name: NameArg, role: Annotated[GraderRole, typer.Argument(help="grader or lead.")], db: DbOption = None) -> None:
    """Give a grader the role grader (grades own items) or lead (runs batches, adjudicates)."""
    from ndcg_labeling.workspace.auth import set_role as run

    with open_session(db) as session:
        previous = run(name, role.value, session=session)
    typer.echo(f"{name}: role {role.value} (was {previous})")


def register(app: typer.Typer) -> None:
    """Add the commands to the ``graders`` group (already registered on ``app`` by import_cmds)."""
    from ndcg_labeling.cli.import_cmds import graders_app

    graders_app.command("token")(token)
    graders_app.command("revoke")(revoke)
    graders_app.command("set-role")(set_role)
