"""The ``ndcg-labeling`` command line: a Typer app whose commands are thin shells over the pipeline.

Each area registers its commands from its own module (``register(app)``), so the areas can grow
independently; shared options live in :mod:`ndcg_labeling.cli.common`.

Registration is lazy (issue 17: a light command starts in less time than ``import pandas``): the
console script (:func:`main`) imports and registers only the module(s) of the command named on the
command line (:data:`COMMAND_MODULES`), and every module for ``--help``, no arguments or a name it
does not know (so click's help and its "No such command" read as before). ``from ndcg_labeling.cli
import app`` (the tests, ``docgen``, ``CliRunner``) gives the app with every command registered.
A new command module goes into :data:`MODULES` and its top-level names into :data:`COMMAND_MODULES`;
``tests/cli/test_lazy_registration.py`` fails until the table gives each command the tree that full
registration gives it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Sequence
from typing import Annotated

import typer

_app = typer.Typer(
    name="ndcg-labeling",
    help="From human relevance grades to trustworthy NDCG numbers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: flags show as flags (`--json`), not as options taking a value (`--json <bool>`).
    rich_markup_mode=None,
)

#: the command modules in registration order (the order of the commands in ``--help`` and docs/cli.md)
MODULES = ("db_cmds", "import_cmds", "graders_cmds", "tasks_cmds", "agreement_cmds", "quality_cmds", "report_cmd",
           "plan_cmd", "eval_cmd", "demo_cmd", "serve_cmd", "judge_cmds", "implicit_cmds",
           "online_cmds", "keys_cmds", "snapshot_cmds")

#: each top-level command or group -> the modules that add to it (``graders`` is defined by
#: import_cmds and extended by graders_cmds and quality_cmds); a test checks it against full registration
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "db": ("db_cmds",),
    "status": ("db_cmds",),
    "import": ("import_cmds",),
    "graders": ("import_cmds", "graders_cmds", "quality_cmds"),
    "tasks": ("tasks_cmds",),
    "grade": ("tasks_cmds",),
    "agreement": ("agreement_cmds",),
    "consensus": ("agreement_cmds",),
    "adjudicate": ("agreement_cmds",),
    "export": ("agreement_cmds",),
    "gold": ("quality_cmds",),
    "calibrate": ("quality_cmds",),
    "report": ("report_cmd",),
    "plan": ("plan_cmd",),
    "eval": ("eval_cmd",),
    "demo": ("demo_cmd",),
    "serve": ("serve_cmd",),
    "judge": ("judge_cmds",),
    "implicit": ("implicit_cmds",),
    "online": ("online_cmds",),
    "keys": ("keys_cmds",),
    "snapshot": ("snapshot_cmds",),
}

_registered: list[str] = []  # the modules whose commands are on the app, in the order they were added


def _print_version(value: bool) -> None:
    if value:
        from ndcg_labeling import __version__

        typer.echo(f"ndcg-labeling {__version__}")
        raise typer.Exit()


@_app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
    db: Annotated[str | None, typer.Option("--db", help="Database URL for the command (as the command's own "
                                                        "--db, which wins when both are given).",
                                           show_default=False)] = None,
) -> None:
    """From human relevance grades to trustworthy NDCG numbers."""
    if db is not None:
        # The URL has one source chain (--db, else $NDCG_LABELING_DB, else the default): the root option
        # fills the variable for this process, so a command's own --db still wins.
        from ndcg_labeling import settings

        settings.use_db_url(db)


def register(modules: Iterable[str] = MODULES) -> typer.Typer:
    """Add the commands of ``modules`` (names in :data:`MODULES`) to the app, each module once, in
    :data:`MODULES` order; return the app."""
    wanted = set(modules)
    for name in MODULES:
        if name in wanted and name not in _registered:
            importlib.import_module(f"ndcg_labeling.cli.{name}").register(_app)
            _registered.append(name)
    return _app


def modules_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The modules a command line needs: those of its command (the first word that is not an option;
    of the root options only ``--db`` takes a value), else every module."""
    argv = list(argv)
    while argv[:1] == ["--db"] or (argv and argv[0].startswith("--db=")):  # the root's --db (with its value)
        argv = argv[2:] if argv[0] == "--db" else argv[1:]
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    if command is None or "--help" in argv[:argv.index(command)] or command not in COMMAND_MODULES:
        return MODULES
    return COMMAND_MODULES[command]


def __getattr__(name: str) -> typer.Typer:
    # ``from ndcg_labeling.cli import app``: the whole app (after a lazy ``main`` in the same process the
    # remaining modules are added after the ones it registered, so only --help's order can differ).
    if name == "app":
        return register(MODULES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point. Ctrl-C before a command has started its work (while typer builds
    the command tree) prints ``Interrupted`` and exits 130; a command's own transaction handles it later."""
    import signal

    try:
        app = register(modules_for(sys.argv[1:]))
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
