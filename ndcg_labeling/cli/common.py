"""Options shared by many commands (``--db``, ``--format``, ``--out``) and the one error handler.

A command body is: options -> ``with open_session(db) as session`` -> one pipeline call -> print.
Every :class:`NdcgLabelingError` becomes ``Error: <message>`` on stderr and exit code 1; the
transaction of the command is rolled back, so the database is left as it was.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

if TYPE_CHECKING:  # sqlalchemy loads when a command opens a database, not for `eval` or `--help`
    from rich.console import Console
    from sqlalchemy import Engine
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

from ndcg_labeling import settings
from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.reports.rows import inert, summary_csv, summary_text

T = TypeVar("T")

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL; else $NDCG_LABELING_DB; else sqlite:///ndcg_labeling.db.", show_default=False),
]
# --out and --force, declared here once: the optional output file of most commands, the file a command
# must write (tasks export) and the folder of the demo, all spelled --out/-o
_OUT = ("--out", "-o")
OutOption = Annotated[str | None, typer.Option(*_OUT, help="Write the output to this file instead of the terminal.")]
OutFileOption = Annotated[Path, typer.Option(*_OUT, help="The file to write.", readable=False)]
OutFolderOption = Annotated[str, typer.Option(*_OUT, help="Folder for the database, task files and report.html.")]
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite the --out file if it exists.")]
MESSAGE_LIMIT = 1_000  # characters of one error line; longer messages are cut with a note


def format_option(*offered: OutputFormat, help: str = "Output format.", name: str = "--format") -> Any:
    """The ``--format`` option (or ``name``) of a command that writes ``offered`` (members of the one
    vocabulary, :class:`~ndcg_labeling.choices.OutputFormat`): its help shows only those, and another one is
    a usage error (exit 2), as a choice outside an enum is."""
    names = [f.value for f in offered]

    def check(value: OutputFormat | None) -> OutputFormat | None:
        if value is not None and value not in offered:
            raise typer.BadParameter(f"{value.value!r} is not one of {', '.join(repr(n) for n in names)}.")
        return value

    return typer.Option(name, metavar="<" + "|".join(names) + ">", help=help, callback=check)


#: ``--format`` of the commands that print rows: table, csv or json
FormatOption = Annotated[OutputFormat, format_option(OutputFormat.table, OutputFormat.csv, OutputFormat.json)]
SUMMARY_FORMATS = (OutputFormat.text, OutputFormat.json, OutputFormat.csv)
_SUMMARY_HELP = "text, or the summary as json (one object) or csv (a header line and one row)."
#: ``--format`` of the commands that print a summary: text, or the summary as a JSON object or a CSV row
SummaryFormatOption = Annotated[OutputFormat, format_option(*SUMMARY_FORMATS, help=_SUMMARY_HELP)]
#: the same choice on the import commands, whose ``--format`` is the input file's format; beside ``--json``
SummaryFormatNamedOption = Annotated[OutputFormat | None, format_option(
    *SUMMARY_FORMATS, name="--summary-format", help=_SUMMARY_HELP + " Default: text; json with --json.")]
JsonSummaryOption = Annotated[bool, typer.Option("--json", help="Print the summary as a JSON object.")]


def summary_format(as_json: bool, fmt: OutputFormat | None) -> OutputFormat:
    """The format of ``--json`` and ``--summary-format`` together; ``Error: ...`` (exit 1) when they
    disagree. Call it before the command's work, so a refused command writes nothing."""
    if as_json and fmt is not None and fmt is not OutputFormat.json:
        raise fail(f"--json and --summary-format {fmt.value} disagree: give one of them")
    return OutputFormat.json if as_json else (fmt or OutputFormat.text)


def print_summary(summary: Any, fmt: OutputFormat | bool, as_dict: dict[str, Any] | None = None) -> None:
    """A command's summary: its text (``str()``, every control character but the newline shown escaped),
    or ``as_dict()`` (or ``as_dict``, when given) as one JSON object (json, or ``--json``) or as CSV
    (:func:`summary_csv`)."""
    fmt = OutputFormat.json if fmt is True else OutputFormat.text if fmt is False else fmt
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(summary.as_dict() if as_dict is None else as_dict))
    elif fmt is OutputFormat.csv:
        write_output(summary_csv(summary.as_dict() if as_dict is None else as_dict), None)
    else:
        typer.echo(summary_text(summary))


_consoles: dict[str, Console] = {}


def _console(name: str) -> Console:
    # rich loads on first use (``db current`` and ``eval`` print plain text: issue 17)
    if name not in _consoles:
        from rich.console import Console

        _consoles["console"] = Console()
        _consoles["err_console"] = Console(stderr=True, highlight=False, soft_wrap=True)
    return _consoles[name]


def __getattr__(name: str) -> Console:
    # ``console`` (stdout) and ``err_console`` (stderr, no highlighting), made on first use
    if name in ("console", "err_console"):
        return _console(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def one_line(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """``message`` as one line of inert text: control characters (newlines included) escaped, and
    cut to ``limit`` characters with a note of the full length."""
    text = inert(message)
    if len(text) > limit:
        text = f"{text[:limit]}... (message cut; {len(text):,} characters)"
    return text


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``Error: message`` (one line) on stderr; return the Exit to raise."""
    _console("err_console").print(f"Error: {one_line(message)}", markup=False, highlight=False)
    return typer.Exit(code)


@contextmanager
def handle_errors(file: object = None) -> Iterator[None]:
    """Turn the project's errors, and every database driver error, into one ``Error: ...`` line, exit 1.

    ``file`` is the command's input file, named in a driver error (its line is unknown there: the
    importer validates every row it can before it writes, so such an error is rare).
    """
    try:
        yield
    except NdcgLabelingError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        _console("err_console").print("Interrupted: nothing was written.", markup=False)
        raise typer.Exit(130) from None
    except Exception as exc:
        raise fail(_unexpected(exc, file)) from exc


def _unexpected(exc: Exception, file: object) -> str:
    """The one line for an error that is not the project's own, or re-raise it (a bug: traceback)."""
    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

    where = f"{file}: " if file is not None else ""
    if isinstance(exc, DBAPIError):
        # A database the driver cannot reach or use, or a value it refuses.
        detail = str(exc.orig).strip().splitlines()[0] if exc.orig is not None and str(exc.orig).strip() else type(exc).__name__
        return f"{where}database error: {detail}"
    if isinstance(exc, SQLAlchemyError):
        return f"{where}database error: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, RecursionError):
        return f"{where}input nested too deeply"
    raise exc


def engine_for(db: str | None, *, check_head: bool = True, create: bool = False) -> Engine:
    """An engine for ``db``; unless ``create``, a SQLite file that does not exist is an error (so no
    command but ``db upgrade`` leaves an empty database file behind)."""
    from ndcg_labeling.db.migrate import ensure_at_head
    from ndcg_labeling.db.session import make_engine, sqlite_file
    from ndcg_labeling.errors import DatabaseNotAtHead

    file = sqlite_file(db)
    if file is not None and not create and not file.exists():
        raise DatabaseNotAtHead(f"no database at {file}; create it with `ndcg-labeling db upgrade`")
    engine = make_engine(db)
    if check_head:
        ensure_at_head(engine)
    return engine


@contextmanager
def open_session(db: str | None, file: object = None, *, read_only: bool = False) -> Iterator[Session]:
    """Error handling + an engine at head + one transaction, for a command body (``file``: the
    command's input file, named by a driver error; ``read_only``: a command that writes nothing, whose
    SQLite transaction then runs beside a writer's, see :func:`ndcg_labeling.db.session.read_only`)."""
    from ndcg_labeling.db.session import read_only as reader
    from ndcg_labeling.db.session import session_scope

    with _scoped(db, file, (lambda engine: session_scope(reader(engine))) if read_only else session_scope) as session:
        yield session


@contextmanager
def open_connection(db: str | None) -> Iterator[Connection]:
    """:func:`open_session` for the read-only commands: a Core connection instead of an ORM session,
    so ``sqlalchemy.orm`` and the models need not load (issue 17)."""
    from ndcg_labeling.db.session import connection_scope

    with _scoped(db, None, connection_scope) as conn:
        yield conn


@contextmanager
def open_engine(db: str | None) -> Iterator[Engine]:
    """:func:`open_session` for a pipeline call that opens its own transactions: the engine itself."""
    with _scoped(db, None, nullcontext) as engine:
        yield engine


@contextmanager
def _scoped(db: str | None, file: object, scope: Callable[[Any], AbstractContextManager[T]]) -> Iterator[T]:
    """``scope(engine)`` of an engine at head, inside the error handling; the engine is disposed after."""
    with handle_errors(file):
        engine = engine_for(db)
        try:
            with scope(engine) as handle:
                yield handle
        except KeyboardInterrupt as exc:
            # Close in order: what the interrupted work still holds (a half-read cursor inside a
            # generator) is released now, while its connection is open, not by the garbage collector
            # after dispose() closed it ("sqlite3.ProgrammingError: Cannot operate on a closed database").
            import gc
            import traceback

            traceback.clear_frames(exc.__traceback__)
            gc.collect()
            raise
        finally:
            engine.dispose()


def check_out(out: str | None, force: bool = False) -> None:
    """Fail early (``Error: ...``) when ``--out`` cannot be written: exists without ``--force``, a
    symbolic link, a folder, or in a missing folder. Call it before the command's work."""
    if out:
        from ndcg_labeling.io.files import check_output_path

        with handle_errors():
            check_output_path(out, force=force)


def write_output(text: str, out: str | None, force: bool = False) -> None:
    """Print ``text`` to stdout, or write it to ``out`` (never over an existing file unless ``force``,
    never through a symbolic link; see :func:`ndcg_labeling.io.files.open_output`)."""
    if out:
        from ndcg_labeling.io.files import write_text_file

        with handle_errors():
            write_text_file(out, text, force=force)
    else:
        sys.stdout.write(text)
        if text and not text.endswith("\n"):
            sys.stdout.write("\n")


@contextmanager
def printed_to(out: str | None, force: bool = False) -> Iterator[None]:
    """With ``-o FILE`` and the table format: what the command prints (its tables, notes and verdicts) goes
    to FILE instead of stdout, laid out as on a pipe (plain tables, nothing cut). Without ``out``, nothing
    changes."""
    if not out:
        yield
        return
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield
    if buf.getvalue():  # a csv/json command returned its text instead: the caller writes that
        write_output(buf.getvalue(), out, force)


@contextmanager
def row_progress(label: str, unit: str = "rows") -> Iterator[Callable[[int], None]]:
    """A Rich progress display of rows written, or of other ``unit`` done (shown on a terminal only).

    With ``NDCG_LABELING_PROGRESS=plain`` the progress is printed as plain ``progress: N rows`` lines
    on stderr instead (for logs, and for the test that interrupts an import half way).
    """
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err_console = _console("err_console")
    if settings.plain_progress():
        def plain(n: int) -> None:
            err_console.file.write(f"progress: {n} {unit}\n")
            err_console.file.flush()

        yield plain
        return

    with Progress(SpinnerColumn(), TextColumn(f"{label}"), BarColumn(), TextColumn("{task.completed:,} " + unit),
                  TimeElapsedColumn(), console=err_console, transient=True,
                  disable=not err_console.is_terminal) as bar:
        task = bar.add_task(label, total=None)
        yield lambda n: bar.update(task, completed=n)


def refuse_given(ctx: typer.Context, names: tuple[str, ...], mode: str) -> None:
    """``Error: --opt does not go with MODE`` (exit 1) for the first of ``names`` given on the command line:
    an option a command's job does not use is refused rather than ignored."""
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name) if param.name in names else None
        # compared by name: typer carries its own copy of click's ParameterSource
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT", "PROMPT"):
            raise fail(f"{param.opts[0]} does not go with {mode}")


def parse_columns(items: list[str]) -> dict[str, str]:
    """``--column NAME=SOURCE`` options (the log readers' column mapping) as a dict."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, source = item.partition("=")
        if not sep or not name.strip() or not source.strip():
            raise typer.BadParameter(f"{item!r} is not NAME=SOURCE", param_hint="--column")
        out[name.strip()] = source.strip()
    return out
