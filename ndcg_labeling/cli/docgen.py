"""Write ``docs/cli.md``: the ``--help`` of every command, rendered at a fixed width without colour.

``python -m ndcg_labeling.cli.docgen > docs/cli.md`` (or ``make docs``). A test renders it again and
compares, so the page cannot fall behind the commands.
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

import typer
import typer.rich_utils
from typer.main import get_command

#: the terminal width the help is rendered at (fixed, so the page does not depend on the terminal)
WIDTH = 100
HEADER = """# Command reference

Generated from the `--help` of every command by `python -m ndcg_labeling.cli.docgen > docs/cli.md`
(`make docs`); a test fails when this page is stale. The pages next to this one explain each stage
with examples: [import](import.md), [grading](grading.md), [agreement](agreement.md),
[consensus](consensus.md), [report](report.md), [database](database.md).
"""


def command_paths(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command (not group) under ``group``, as the words that name it, in registration order."""
    out: list[tuple[str, ...]] = []
    for name, cmd in getattr(group, "commands", {}).items():
        path = (*prefix, name)
        if getattr(cmd, "commands", None):
            out.append(path)
            out.extend(command_paths(cmd, path))
        else:
            out.append(path)
    return out


def _full_app() -> typer.Typer:
    from ndcg_labeling.cli import app  # every command registered

    return app


def render_help(path: tuple[str, ...], root: typer.Typer | None = None) -> str:
    """The ``--help`` text of ``ndcg-labeling PATH``, plain, at :data:`WIDTH` columns (``root``: the
    app, by default the one with every command)."""
    return help_text(get_command(root if root is not None else _full_app()), path)


def help_text(command: Any, path: tuple[str, ...]) -> str:
    """:func:`render_help` from the app's click ``command``, built once by the caller for many paths
    (building it is most of the time: a page of every command took 10 s rebuilding it per path)."""
    settings: dict[str, Any] = {"MAX_WIDTH": WIDTH, "FORCE_TERMINAL": False, "COLOR_SYSTEM": None}
    saved = {k: getattr(typer.rich_utils, k) for k in settings}
    buf = io.StringIO()
    try:
        for k, v in settings.items():
            setattr(typer.rich_utils, k, v)
        with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
            command.main(args=[*path, "--help"], prog_name="ndcg-labeling", standalone_mode=True,
                         terminal_width=WIDTH, max_content_width=WIDTH)
    finally:
        for k, v in saved.items():
            setattr(typer.rich_utils, k, v)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n") + "\n"


def render_page() -> str:
    """The whole ``docs/cli.md``."""
    command = get_command(_full_app())
    parts = [HEADER, "## ndcg-labeling\n", "```text\n" + help_text(command, ()) + "```\n"]
    for path in command_paths(command):
        parts.append(f"## ndcg-labeling {' '.join(path)}\n")
        parts.append("```text\n" + help_text(command, path) + "```\n")
    return "\n".join(parts)


def main() -> None:
    sys.stdout.write(render_page())


if __name__ == "__main__":
    main()
