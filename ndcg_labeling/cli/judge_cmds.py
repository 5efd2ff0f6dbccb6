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
from ndcg_labeling.cli.common import DbOption, FormatOption, open_engine, open_session, write_output
from ndcg_labeling.reports.rows import inert, render_rows

judge_app = typer.Typer(help="LLM judges: grade a batch with an OpenAI-compatible model; the judge gate's checks.",
                        no_args_is_help=True)

# the endpoint options of judge run, canary and recheck
ModelOption = Annotated[str, typer.Option("--model", help="The model name the endpoint serves.")]
BaseUrlOption = Annotated[str, typer.Option("--base-url", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1.")]
KeyEnvOption = Annotated[str, typer.Option("--api-key-env", help="Environment variable holding the API key.")]
PromptOption = Annotated[str, typer.Option("--prompt", help="umbrela, or a template FILE with {{placeholders}}.")]
ConcurrencyOption = Annotated[int, typer.Option("--concurrency", help="Requests in flight at once (1 to 64).")]


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
    model: ModelOption, base_url: BaseUrlOption, api_key_env: KeyEnvOption = "OPENAI_API_KEY",
    prompt: PromptOption = "umbrela",
    max_doc_chars: Annotated[int, typer.Option("--max-doc-chars", help="Document body cut to this many characters.")]
    = 4000,
    concurrency: ConcurrencyOption = 8,
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
    with open_engine(db) as engine, _item_progress() as progress:
        summary = run_judge(engine=engine, settings=settings, progress=progress)
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
        write_output(text, None)
    else:
        typer.echo(str(summary))


# --- the judge gate (issue 47): canary, recheck, lineage ------------------------------------------------------

TimeoutOption = Annotated[float, typer.Option("--timeout", help="Deadline of one request in seconds.")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the random draw.")]


def _check_settings(batch: str, grader: str, model: str, base_url: str, api_key_env: str, prompt: str,
                    concurrency: int, timeout: float) -> Any:
    from ndcg_labeling.sources.judge_runs import JudgeSettings

    return JudgeSettings(batch=batch, grader=grader, model=model, base_url=base_url, api_key=env.secret(api_key_env),
                         prompt=prompt, concurrency=concurrency, timeout=timeout)


@judge_app.command("canary")
def judge_canary(
    batch: Annotated[str, typer.Option("--batch", help="The batch whose queries get canaries.")],
    grader: Annotated[str, typer.Option("--grader", help="The judge's grader name (kind model; added if new).")],
    model: ModelOption, base_url: BaseUrlOption, api_key_env: KeyEnvOption = "OPENAI_API_KEY",
    prompt: PromptOption = "umbrela",
    threshold: Annotated[float, typer.Option("--threshold", help="The gate fails above this fooled rate, per kind.")]
    = 0.10,
    seed: SeedOption = 0, concurrency: ConcurrencyOption = 8, timeout: TimeoutOption = 60.0,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """Send keyword-stuffed and instruction-carrying irrelevant documents through a judge: the share graded
    relevant (the fooled rate) per kind; the gate fails above --threshold (stored: a failed canary refuses
    the judge in calibrate and --judge-fills)."""
    from ndcg_labeling.sources.judge_checks import CHECK_COLUMNS, run_canary

    settings = _check_settings(batch, grader, model, base_url, api_key_env, prompt, concurrency, timeout)
    with open_engine(db) as engine:
        check = run_canary(engine=engine, settings=settings, threshold=threshold, seed=seed)
    _render_check(check, fmt, CHECK_COLUMNS, f"canary of {grader} (batch {batch})")
    if not check.passed:
        raise typer.Exit(1)


@judge_app.command("recheck")
def judge_recheck(
    batch: Annotated[str, typer.Option("--batch", help="The batch whose judge labels are re-judged.")],
    grader: Annotated[str, typer.Option("--grader", help="The judge's grader name.")],
    model: ModelOption, base_url: BaseUrlOption, api_key_env: KeyEnvOption = "OPENAI_API_KEY",
    prompt: PromptOption = "umbrela",
    sample: Annotated[int, typer.Option("--sample", help="How many of the judge's labels to re-judge.")] = 50,
    seed: SeedOption = 0, concurrency: ConcurrencyOption = 8, timeout: TimeoutOption = 60.0,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """Self-consistency: re-judge a shuffled random sample of the judge's labels (same model and prompt, no
    cache) and report its agreement with itself (exact-match share, kappa); stored, shown by calibrate."""
    from ndcg_labeling.sources.judge_checks import RECHECK_COLUMNS, run_recheck

    settings = _check_settings(batch, grader, model, base_url, api_key_env, prompt, concurrency, timeout)
    with open_engine(db) as engine:
        check = run_recheck(engine=engine, settings=settings, sample=sample, seed=seed)
    _render_check(check, fmt, RECHECK_COLUMNS, f"self-consistency of {grader} (batch {batch})")


def _render_check(check: Any, fmt: OutputFormat, columns: tuple[str, ...], title: str) -> None:
    from ndcg_labeling.reports.judge_gate import check_line

    if fmt is OutputFormat.json:
        typer.echo(json.dumps(check.as_dict(), indent=2))
        return
    text = render_rows(check.rows, fmt, columns=list(columns), title=title)
    if text is not None:
        write_output(text, None)
        return
    line = check_line({"kind": check.kind, "created_at": "", "model": check.model,
                       "template_sha256": check.template_sha256, "n": sum(r.get("n", 0) for r in check.rows),
                       "passed": check.passed, "threshold": check.threshold, "result": check.result})
    typer.echo(line)


lineage_app = typer.Typer(help="Judges that share a model with a system under test (refused for its comparisons).",
                          no_args_is_help=True)
judge_app.add_typer(lineage_app, name="lineage")


@lineage_app.command("add")
def lineage_add(
    judge: Annotated[str, typer.Argument(help="The judge (grader name).")],
    system: Annotated[str, typer.Option("--system", help="The system (run name) built on the judge's model.")],
    note: Annotated[str | None, typer.Option("--note", help="Why (e.g. both fine-tuned from one base model).")] = None,
    db: DbOption = None,
) -> None:
    """Declare that JUDGE shares a model with a system: the judge is then refused for comparisons involving
    that system (judge-filled labels in report, report --estimator ppi)."""
    from ndcg_labeling.sources.judge_gate import add_lineage

    with open_session(db) as session:
        row = add_lineage(judge, system, note=note, session=session)
    typer.echo(f"judge {row['judge']} shares a model with system {row['system']}: refused for its comparisons")


@lineage_app.command("remove")
def lineage_remove(
    judge: Annotated[str, typer.Argument(help="The judge (grader name).")],
    system: Annotated[str, typer.Option("--system", help="The system named in the declaration.")],
    db: DbOption = None,
) -> None:
    """Withdraw a declaration of ``judge lineage add``."""
    from ndcg_labeling.sources.judge_gate import remove_lineage

    with open_session(db) as session:
        remove_lineage(judge, system, session=session)
    typer.echo(f"judge {judge} no longer declared to share a model with system {system}")


@lineage_app.command("list")
def lineage_list(
    judge: Annotated[str | None, typer.Option("--judge", help="Only this judge's declarations.")] = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
) -> None:
    """The declared (judge, system) pairs."""
    from ndcg_labeling.sources.judge_gate import LINEAGE_COLUMNS, list_lineage

    with open_session(db, read_only=True) as session:
        rows = list_lineage(session=session, judge=judge)
    text = render_rows(rows, fmt, columns=list(LINEAGE_COLUMNS), title="judge lineage")
    if text is not None:
        write_output(text, None)


def register(app: typer.Typer) -> None:
    app.add_typer(judge_app, name="judge")
