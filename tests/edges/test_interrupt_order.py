"""Issue 36: Ctrl+C in a command on SQLite once printed ``sqlite3.ProgrammingError: Cannot operate on a
closed database`` before "Interrupted: nothing was written." (1 in 67 interrupts of ``tasks create``):
the engine was disposed (its connections closed) while the interrupted work still held a half-read
cursor, which was closed later, by the garbage collector, on a closed connection. The interrupt path
now releases what the interrupted frames hold first, then closes the session, then the engine.

The race is made certain here: the command's work holds a generator over a raw cursor when Ctrl+C
lands; whatever Python reports as "Exception ignored" (sys.unraisablehook) is recorded."""

from __future__ import annotations

import gc
import sys

import typer

from ndcg_labeling.cli.common import open_session


def _interrupted_work(session) -> None:
    raw = session.connection().connection.dbapi_connection

    def rows():
        cursor = raw.cursor()
        try:
            cursor.execute("SELECT 1 UNION SELECT 2")
            yield from cursor
        finally:
            cursor.close()

    pending = rows()
    next(pending)
    raise KeyboardInterrupt  # Ctrl+C while the generator is half way


def test_ctrl_c_closes_in_order(sqlite_db, monkeypatch, capsys):
    ignored: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: ignored.append(f"{type(u.exc_value).__name__}: {u.exc_value}"))
    code = None
    try:
        with open_session(sqlite_db.url) as session:
            _interrupted_work(session)
    except typer.Exit as stop:
        code = stop.exit_code
    gc.collect()  # whatever the interrupted frames still held is gone now
    assert code == 130
    assert ignored == []
    assert capsys.readouterr().err.strip() == "Interrupted: nothing was written."
