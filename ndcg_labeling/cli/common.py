"""Options shared by many commands (``--db``, ``--format``, ``--out``) and the one error handler.

A command body is: options -> ``with open_session(db) as session`` -> one pipeline call -> print.
Every :class:`NdcgLabelingError` becomes ``Error: <message>`` on stderr and exit code 1; the
transaction of the command is rolled back, so the database is left as it was.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:  # sqlalchemy loads when a command opens a database, not for `eval` or `--help`
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session

from ndcg_labeling.errors import NdcgLabelingError

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL; else $NDCG_LABELING_DB; else sqlite:///ndcg_labeling.db.", show_default=False),
]
OutOption = Annotated[
    str | None, typer.Option("--out", "-o", help="Write the output to this file instead of the terminal.")
]


class TableFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


FormatOption = Annotated[TableFormat, typer.Option("--format", help="Output format.")]

console = Console()
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``Error: message`` (one line) on stderr; return the Exit to raise."""
    err_console.print(f"Error: {message}", markup=False)
    return typer.Exit(code)


@contextmanager
def handle_errors() -> Iterator[None]:
    """Turn the project's errors (and a missing/unreachable database) into ``Error: ...``, exit 1."""
    try:
        yield
    except NdcgLabelingError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:
        # A database the driver cannot reach or use (sqlalchemy's DBAPIError, OperationalError included).
        from sqlalchemy.exc import DBAPIError

        if isinstance(exc, DBAPIError):
            raise fail(f"database error: {str(exc.orig).splitlines()[0] if exc.orig else exc}") from None
        raise
    except KeyboardInterrupt:
        err_console.print("Interrupted: nothing was written.", markup=False)
        raise typer.Exit(130) from None


def engine_for(db: str | None, *, check_head: bool = True) -> Engine:
    from ndcg_labeling.db.migrate import ensure_at_head
    from ndcg_labeling.db.session import make_engine

    engine = make_engine(db)
    if check_head:
        ensure_at_head(engine)
    return engine


@contextmanager
def open_session(db: str | None) -> Iterator[Session]:
    """Error handling + an engine at head + one transaction, for a command body."""
    from ndcg_labeling.db.session import session_scope

    with handle_errors():
        engine = engine_for(db)
        try:
            with session_scope(engine) as session:
                yield session
        finally:
            engine.dispose()


def write_output(text: str, out: str | None) -> None:
    """Print ``text`` to stdout, or write it to ``out``."""
    if out:
        with open(out, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
        if text and not text.endswith("\n"):
            sys.stdout.write("\n")


def render_rows(rows: Sequence[dict[str, Any]], fmt: TableFormat | str, *, title: str | None = None,
                columns: Sequence[str] | None = None) -> str | None:
    """Render a list of flat dicts as csv / json text; for ``table`` print a Rich table and return None."""
    fmt = TableFormat(fmt)
    cols = list(columns) if columns is not None else (list(rows[0].keys()) if rows else [])
    if fmt is TableFormat.json:
        return json.dumps([{c: r.get(c) for c in cols} for r in rows], indent=2, default=str)
    if fmt is TableFormat.csv:
        import csv
        import io

        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in cols})
        return buf.getvalue()
    from rich.table import Table

    table = Table(title=title)
    for c in cols:
        table.add_column(c)
    for r in rows:
        table.add_row(*("" if r.get(c) is None else _fmt_cell(r.get(c)) for c in cols))
    console.print(table)
    return None


def _fmt_cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


@contextmanager
def row_progress(label: str) -> Iterator[Callable[[int], None]]:
    """A Rich progress display of rows written (shown on a terminal only).

    With ``NDCG_LABELING_PROGRESS=plain`` the progress is printed as plain ``progress: N rows`` lines
    on stderr instead (for logs, and for the test that interrupts an import half way).
    """
    import os

    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    if os.environ.get("NDCG_LABELING_PROGRESS") == "plain":
        def plain(n: int) -> None:
            err_console.file.write(f"progress: {n} rows\n")
            err_console.file.flush()

        yield plain
        return

    with Progress(SpinnerColumn(), TextColumn(f"{label}"), BarColumn(), TextColumn("{task.completed:,} rows"),
                  TimeElapsedColumn(), console=err_console, transient=True,
                  disable=not err_console.is_terminal) as bar:
        task = bar.add_task(label, total=None)
        yield lambda n: bar.update(task, completed=n)
