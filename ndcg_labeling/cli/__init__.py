"""The ``ndcg-labeling`` command line: a Typer app whose commands are thin shells over the pipeline.

Each area registers its commands from its own module (``register(app)``), so the areas can grow
independently; shared options live in :mod:`ndcg_labeling.cli.common`.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="ndcg-labeling",
    help="From human relevance grades to trustworthy NDCG numbers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_all() -> None:
    from ndcg_labeling.cli import (
        agreement_cmds,
        db_cmds,
        demo_cmd,
        eval_cmd,
        graders_cmds,
        import_cmds,
        quality_cmds,
        report_cmd,
        serve_cmd,
        tasks_cmds,
    )

    for module in (db_cmds, import_cmds, graders_cmds, tasks_cmds, agreement_cmds, quality_cmds, report_cmd, eval_cmd,
                   demo_cmd, serve_cmd):
        module.register(app)


_register_all()


def main() -> None:
    """Console-script entry point."""
    app()
