"""``judge run``: grade a batch with an OpenAI-compatible model (docs/judges.md)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from ndcg_labeling import settings as env
from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli import common
from ndcg_labeling.cli.common import DbOption, FormatOption, engine_for, handle_errors
from ndcg_labeling.reports.rows import inert, render_rows

judge_app = typer.Typer(help="LLM judges: grade a batch with an OpenAI-compatible model.", no_args_is_help=True)


@contextmanager
def _item_progress() -> Iterator[Callable[[int, int], None]]:
    """A progress bar of items stored, with items/s (terminal only; ``NDCG_LABELING_PROGRESS=plain``:
    ``progress: N/M items`` lines on stderr)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TimeElapsedColumn
    from rich.text import Text

    err_console = common.err_console
    if env.plain_progress():
        def plain(done: int, total: int) -> None:
            err_console.file.write(f"progress: {done}/{total} items\n")
            err_console.file.flush()

        yield plain
        return

    class Speed(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(f"{task.speed:.1f} items/s" if task.speed else "- items/s")

    with Progress(BarColumn(), MofNCompleteColumn(), Speed(), TimeElapsedColumn(), console=err_console,
                  transient=True, disable=not err_console.is_terminal) as bar:
        task = bar.add_task("judging", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _print_prompt(messages: list[dict[str, str]] | None) -> None:
    if messages is None:
        typer.echo("(no open item: no prompt)")
        return
    for message in messages:
        typer.echo(f"--- {message['role']} ---")
        typer.echo(inert(message["content"], newlines=True))
    typer.echo("---")


@judge_app.command("run")
def judge_run(
    batch: Annotated[str, typer.Option("--batch", help="The batch to grade.")],
    grader: Annotated[str, typer.Option("--grader", help="The judge's grader name (kind model; added if new).")],
    model: Annotated[str, typer.Option("--model", help="The model name the endpoint serves.")],
    base_url: Annotated[str, typer.Option("--base-url", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1.")],
    api_key_env: Annotated[str, typer.Option("--api-key-env", help="Environment variable holding the API key.")]
    = "OPENAI_API_KEY",
    prompt: Annotated[str, typer.Option("--prompt", help="umbrela, or a template FILE with {{placeholders}}.")]
    = "umbrela",
    max_doc_chars: Annotated[int, typer.Option("--max-doc-chars", help="Document body cut to this many characters.")]
    = 4000,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Requests in flight at once (1 to 64).")] = 8,
    rate_limit: Annotated[float | None, typer.Option("--rate-limit", help="At most this many requests per second.")]
    = None,
    max_requests: Annotated[int | None, typer.Option("--max-requests", help="Send at most this many items.")] = None,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature, 0 to 2.")] = 0.0,
    timeout: Annotated[float, typer.Option("--timeout", help="Deadline of one request, sending to the last byte of its answer, in seconds (at most 86400).")] = 60.0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the first prompt and the number of requests.")]
    = False,
    price_in: Annotated[float | None, typer.Option("--price-in", help="Price per million prompt tokens.")] = None,
    price_out: Annotated[float | None, typer.Option("--price-out", help="Price per million completion tokens.")]
    = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """Grade the batch's items with a model, as grader NAME of kind model (cached, resumable)."""
    from ndcg_labeling.sources.judge_runs import JudgeSettings, run_judge

    settings = JudgeSettings(batch=batch, grader=grader, model=model, base_url=base_url,
                             api_key=env.secret(api_key_env), prompt=prompt, max_doc_chars=max_doc_chars,
                             concurrency=concurrency, max_requests=max_requests, temperature=temperature,
                             rate_limit=rate_limit, timeout=timeout, price_in=price_in, price_out=price_out,
                             dry_run=dry_run)
    with handle_errors():
        engine = engine_for(db)
        try:
            with _item_progress() as progress:
                summary = run_judge(engine=engine, settings=settings, progress=progress)
        finally:
            engine.dispose()
    if dry_run and fmt is OutputFormat.table:
        _print_prompt(summary.first_prompt)
    _render(summary, fmt)
    for note in summary.notes:
        common.err_console.print(f"Note: {note}", markup=False, highlight=False)
    if summary.interrupted:
        raise typer.Exit(130)


def _render(summary: Any, fmt: OutputFormat) -> None:
    from ndcg_labeling.sources.judge_runs import SUMMARY_COLUMNS

    if fmt is OutputFormat.json:
        typer.echo(json.dumps(summary.as_dict(), indent=2))
        return
    text = render_rows(summary.as_rows(), fmt, columns=list(SUMMARY_COLUMNS), title="judge run")
    if text is not None:
        typer.echo(text, nl=False)
    else:
        typer.echo(str(summary))


def register(app: typer.Typer) -> None:
    app.add_typer(judge_app, name="judge")
