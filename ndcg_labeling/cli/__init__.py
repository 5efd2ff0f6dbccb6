"""The ``ndcg-labeling`` command line: a Typer app whose commands are thin shells over the pipeline.

Each area registers its commands from its own module (``register(app)``), so the areas can grow
independently; shared options live in :mod:`ndcg_labeling.cli.common`.
"""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    name="ndcg-labeling",
    help="From human relevance grades to trustworthy NDCG numbers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: flags show as flags (`--json`), not as options taking a value (`--json <bool>`).
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from ndcg_labeling import __version__

        typer.echo(f"ndcg-labeling {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    """From human relevance grades to trustworthy NDCG numbers."""


def _register_all() -> None:
    from ndcg_labeling.cli import (
        agreement_cmds,
        db_cmds,
        demo_cmd,
        eval_cmd,
        graders_cmds,
        import_cmds,
        plan_cmd,
        quality_cmds,
        report_cmd,
        serve_cmd,
        tasks_cmds,
    )

    for module in (db_cmds, import_cmds, graders_cmds, tasks_cmds, agreement_cmds, quality_cmds, report_cmd, plan_cmd,
                   eval_cmd, demo_cmd, serve_cmd):
        module.register(app)


_register_all()


def main() -> None:
    """Console-script entry point. Ctrl-C before a command has started its work (while typer builds
    the command tree) prints ``Interrupted`` and exits 130; a command's own transaction handles it later."""
    import signal
    import sys

    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        app()
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted\n")
        raise SystemExit(130) from None
    except SystemExit as exc:
        # typer turns a Ctrl-C while it parses the command line into a silent exit 130
        inner = exc.__context__
        if exc.code == 130 and inner is not None and isinstance(inner.__cause__, KeyboardInterrupt):
            sys.stderr.write("Interrupted\n")
        raise
