"""The interactive grading session (``ndcg-labeling grade BATCH --grader G``), drawn with Rich.

One item at a time: the query, the document (title, body, url) and the scale's grade names with
their short definitions from the guideline — never a rank, a score, a system or another grade.
Keys, one per line: a grade digit, ``s`` skip (asks a reason; default "cannot judge"), ``u`` undo
the last grade or skip of this session, ``?`` the guideline, ``q`` quit.

Every grade, skip and undo is its own short transaction (retried when it collides with another
writer), so a crash loses nothing, and a new session resumes at the grader's first open item. Input is read line by line (``typer.prompt``), so a test
drives the session with ``CliRunner(input="2\\n0\\nu\\nq\\n")``; end of input quits.

Everything that comes from the data (query, title, body, url, batch and grader names, item ids) is
shown as inert text: passed through :func:`~ndcg_labeling.reports.rows.inert` (control characters such
as ANSI escapes made visible) and printed as Rich ``Text``, never parsed as Rich markup.
"""

from __future__ import annotations

import typer
from rich.console import Console, Group
from rich.markdown import Markdown
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text
from sqlalchemy import Engine

from ndcg_labeling.cli.common import open_engine
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import ConflictError
from ndcg_labeling.guidelines import Guideline, load_guideline
from ndcg_labeling.labels import tasks
from ndcg_labeling.labels.transactions import run_in_transaction
from ndcg_labeling.reports.rows import inert

BODY_LIMIT = 2_000  # characters of the body shown; the rest is cut with a note


def run_grading_session(batch: str, *, grader: str, db: str | None) -> None:
    """Run the session until the grader quits, input ends, or nothing is left (errors: ``Error: ...``)."""
    with open_engine(db) as engine:
        GradingSession(engine, batch, grader, Console(highlight=False)).run()


class GradingSession:
    def __init__(self, engine: Engine, batch: str, grader: str, console: Console) -> None:
        self.engine = engine
        self.batch = batch
        self.grader = grader
        self.console = console
        self.history: list[str] = []  # item ids graded or skipped in this session, for undo
        with session_scope(engine) as session:
            batch_obj = tasks.require_batch(batch, session=session)
            tasks.grader_progress(batch, grader=grader, session=session)  # the grader must have items here
            self.scale = batch_obj.scale
            changed = tasks.batch_status(batch, session=session).warnings
        self.guideline: Guideline = load_guideline(self.scale)
        for warning in changed:
            self.console.print(Text(f"Warning: {inert(warning)}", style="yellow"))

    # --- drawing ---------------------------------------------------------------------------------

    def _progress(self) -> tasks.GraderProgress:
        with session_scope(self.engine) as session:
            return tasks.grader_progress(self.batch, grader=self.grader, session=session)

    def _show_progress(self, progress: tasks.GraderProgress) -> None:
        line = Table.grid(padding=(0, 1))
        line.add_row(ProgressBar(total=progress.total, completed=progress.done + progress.skipped, width=30),
                     Text(f"{progress.done}/{progress.total} done, {progress.skipped} skipped, "
                          f"{progress.open} open"))
        self.console.print(line)

    def _legend(self) -> Table:
        legend = Table.grid(padding=(0, 1))
        for g in reversed(self.guideline.grades):
            legend.add_row(Text(str(g.grade), style="bold"), Text(g.name, style="bold"), Text(g.definition, style="dim"))
        return legend

    def _show_item(self, item: tasks.GradingItem) -> None:
        body = item.body if len(item.body) <= BODY_LIMIT else item.body[:BODY_LIMIT] + " [...]"
        parts: list[Text | Table] = [Text.assemble(("Query: ", "bold"), (inert(item.query), "bold cyan")), Text("")]
        parts.append(Text(inert(item.title) if item.title else "(no title)", style="bold"))
        if item.url:
            parts.append(Text(inert(item.url), style="underline blue"))
        if body:
            parts.append(Text(inert(body, newlines=True)))
        self.console.print(Panel(Group(*parts), title=Text(f"batch {inert(self.batch)}"),
                                 subtitle=Text(f"item {inert(item.item_id)}")))
        self.console.print(self._legend())

    # --- input -----------------------------------------------------------------------------------

    def _ask(self, text: str, default: str = "") -> str | None:
        """One line of input; None at the end of input (treated as quit)."""
        try:
            value: str = typer.prompt(text, default=default, show_default=bool(default), prompt_suffix=" ")
        except (typer.Abort, EOFError):  # typer.Abort is click's Abort: click is not imported directly
            return None
        return value.strip()

    # --- the loop --------------------------------------------------------------------------------

    def run(self) -> None:
        scale_keys = "/".join(str(g.grade) for g in self.guideline.grades)
        while True:
            with session_scope(self.engine) as session:
                item = tasks.next_item(self.batch, grader=self.grader, session=session)
                progress = tasks.grader_progress(self.batch, grader=self.grader, session=session)
            self._show_progress(progress)
            if item is None:
                self.console.print(Text(f"Nothing left to grade in batch {inert(self.batch)} for {inert(self.grader)}.",
                                        style="green"))
                if not self.history:
                    return
                key = self._ask("u undo the last one, q quit >")
            else:
                self._show_item(item)
                key = self._ask(f"grade {scale_keys}, s skip, u undo, ? guideline, q quit >")
            if key is None or key.lower() == "q":
                self._goodbye()
                return
            self._handle(key, item)

    def _handle(self, key: str, item: tasks.GradingItem | None) -> None:
        lowered = key.lower()
        if lowered == "?":
            self.console.print(Markdown(self.guideline.text))
        elif lowered == "u":
            self._undo()
        elif item is None:
            self.console.print(Text(f"Unknown key {inert(repr(key))}: u undoes, q quits.", style="red"))
        elif lowered == "s":
            reason = self._ask("Reason for skipping", default=tasks.DEFAULT_SKIP_REASON)
            run_in_transaction(self.engine, lambda session: tasks.skip_item(
                self.batch, item.item_id, grader=self.grader, session=session,
                reason=reason or tasks.DEFAULT_SKIP_REASON))
            self.history.append(item.item_id)
            self.console.print(Text(f"skipped ({inert(reason or tasks.DEFAULT_SKIP_REASON)})", style="yellow"))
        elif key.isascii() and key.isdigit() and any(g.grade == int(key) for g in self.guideline.grades):
            value = run_in_transaction(self.engine, lambda session: tasks.save_grade(
                self.batch, item.item_id, int(key), grader=self.grader, session=session))
            self.history.append(item.item_id)
            self.console.print(Text(f"saved: {value} — {self.guideline.name_of(value)}", style="green"))
            self._feedback(item.item_id)
        else:
            keys = ", ".join(str(g.grade) for g in self.guideline.grades)
            self.console.print(Text(f"Unknown key {inert(repr(key))}: grades are {keys}; s skip, u undo, ? guideline, q quit.",
                                    style="red"))

    def _feedback(self, item_id: str) -> None:
        """After a gold item of a batch created with --gold-feedback: the expected grade (else nothing)."""
        from ndcg_labeling.labels.gold import gold_feedback

        with session_scope(self.engine) as session:
            feedback = gold_feedback(self.batch, item_id, grader=self.grader, session=session)
        if feedback is not None:
            self.console.print(Text(str(feedback), style="green" if feedback.correct else "magenta"))

    def _undo(self) -> None:
        if not self.history:
            self.console.print(Text("Nothing to undo in this session.", style="red"))
            return
        item_id = self.history.pop()
        try:
            run_in_transaction(self.engine, lambda session: tasks.undo_item(
                self.batch, item_id, grader=self.grader, session=session))
        except ConflictError as exc:  # a calibration item whose reference grade was shown: the answer stands
            self.console.print(Text(inert(str(exc)), style="red"))
            return
        self.console.print(Text(f"undone: item {inert(item_id)} is open again", style="yellow"))

    def _goodbye(self) -> None:
        progress = self._progress()
        self.console.print(Text(f"Saved. {progress.done}/{progress.total} done, {progress.skipped} skipped. "
                                f"Resume with: ndcg-labeling grade {inert(self.batch)} --grader {inert(self.grader)}"))
