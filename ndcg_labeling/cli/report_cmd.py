"""``report``: score the stored rankings against the effective labels, per query type and overall."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ndcg_labeling import choices
from ndcg_labeling.cli.common import (
    DbOption,
    ForceOption,
    OutOption,
    check_out,
    console,
    err_console,
    fail,
    format_option,
    handle_errors,
    open_session,
    printed_to,
    refuse_given,
    write_output,
)

# The vocabularies live in ndcg_labeling.choices; these names keep the signature below short.
By = choices.ReportGrouping
Gain = choices.Gain
Empty = choices.EmptyQueries
Missing = choices.MissingRuns
OutputFormat = choices.OutputFormat
REPORT_FORMATS = (OutputFormat.table, OutputFormat.csv, OutputFormat.json, OutputFormat.md, OutputFormat.html)
Estimator = choices.Estimator


def report(
    ctx: typer.Context,
    system: Annotated[list[str] | None, typer.Option("--system", help="A system to score (repeat); default: all.")] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="The system the others are compared with; default: the first by name.")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", help="A metric such as ndcg@10 (repeat); default: ndcg@5 ndcg@10 mrr@10 map@10 p@10 judged@10.")] = None,
    by: Annotated[By | None, typer.Option("--by", help="Group rows by query type (and overall; the default), by query, or overall only. With --gate, --by query-type gates every query type too (Holm across them).")] = None,
    per_query: Annotated[bool, typer.Option("--per-query", help="One row per (system, query, metric).")] = False,
    gain: Annotated[Gain, typer.Option("--gain", help="NDCG gain: 2^rel-1 (exponential), rel (linear, as trec_eval), or binary: implicit-feedback NDCG, a label >= --relevant-threshold is 1, any other 0, then linear.")] = Gain.exponential,
    relevant_threshold: Annotated[float, typer.Option("--relevant-threshold", help="A label >= this is relevant (mrr, map, p, and empty queries).")] = 1.0,
    empty: Annotated[Empty, typer.Option("--empty", help="Queries without a relevant document: leave out (skip) or score as 0.")] = Empty.skip,
    missing: Annotated[Missing, typer.Option("--missing", help="Judged queries a system returned nothing for: 0 or leave out (trec_eval).")] = Missing.zero,
    fmt: Annotated[OutputFormat, format_option(*REPORT_FORMATS)] = OutputFormat.table,
    gate: Annotated[str | None, typer.Option("--gate", help="CI gate on this metric (e.g. ndcg@10): exit 3 when a system is significantly worse than the baseline by more than --max-drop.")] = None,
    max_drop: Annotated[float, typer.Option("--max-drop", help="With --gate: the largest drop (system - baseline) allowed; the gate fails when the drop is significantly larger (one-sided).")] = 0.0,
    quiet: Annotated[bool, typer.Option("--quiet", help="With --gate: print only the verdict, not the report.")] = False,
    estimator: Annotated[Estimator, typer.Option("--estimator", help="plain: unjudged = not relevant (the report below); inferred: infNDCG@10 (--metric ndcg@K) or xinfAP (--metric map[@K]) with sampling intervals from a batch made with --strategy sample (needs --batch; docs/budget.md); ppi: a judge's labels on every query corrected by people's on the audited ones, PPI++ intervals (needs --judge; docs/judges.md).")] = Estimator.plain,
    batch: Annotated[str | None, typer.Option("--batch", help="With --estimator inferred: the sampled batch.")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="With --estimator ppi: the grader (an LLM judge) whose labels cover every query.")] = None,
    out: OutOption = None,
    force: ForceOption = False,
    db: DbOption = None,
) -> None:
    """Score systems against the consensus labels: a headline, means with 95% bootstrap intervals, paired
    tests, label-quality caveats and the queries that moved; with --gate, exit 3 on a significant drop."""
    # one job per estimator, each refusing the options it does not implement
    ESTIMATORS[estimator](ctx, system=system, baseline=baseline, metric=metric, by=by, per_query=per_query,
                          gain=gain, relevant_threshold=relevant_threshold, empty=empty, missing=missing, fmt=fmt,
                          gate=gate, max_drop=max_drop, quiet=quiet, batch=batch, judge=judge, out=out, force=force, db=db)


def _plain(ctx: typer.Context, *, system: list[str] | None, baseline: str | None, metric: list[str] | None,
           by: By | None, per_query: bool, gain: Gain, relevant_threshold: float, empty: Empty, missing: Missing,
           fmt: OutputFormat, gate: str | None, max_drop: float, quiet: bool, out: str | None, force: bool,
           db: str | None, **_: object) -> None:
    """``report`` (plain): :func:`~ndcg_labeling.scoring.report.build_report`, the gate, the renderers."""
    refuse_given(ctx, ("batch", "judge"), "--estimator plain")
    from ndcg_labeling.reports.headline import gate_line
    from ndcg_labeling.results import DEFAULT_METRICS, ReportOptions
    from ndcg_labeling.scoring.gate import decide_gate
    from ndcg_labeling.scoring.report import build_report, gate_metrics

    check_out(out, force)
    with handle_errors():
        metrics, gate = gate_metrics(tuple(metric or DEFAULT_METRICS), gate)
    grouping = by or By.query_type
    options = ReportOptions(systems=tuple(system or ()), baseline=baseline, metrics=metrics, by=grouping.value,
                            per_query=per_query, gain=gain.value, relevant_threshold=relevant_threshold,
                            empty=empty.value, missing=missing.value, headline_metric=gate,
                            compare_single=gate is not None)
    with open_session(db, read_only=True) as session:  # seconds of reads: graders keep grading meanwhile
        result = build_report(session=session, options=options)
        named = system[0] if system and len(system) == 1 else None
        decision = (decide_gate(result, gate, max_drop, named, by_group=by is By.query_type)
                    if gate is not None else None)
    if not (quiet and decision is not None):
        _render(result, fmt, out, force)
    if decision is not None:
        err_console.print(gate_line(decision), markup=False, highlight=False)
        if decision.failed:
            raise typer.Exit(3)


# report options the inferred estimator does not implement: each is refused rather than ignored
INFERRED_REFUSES = ("by", "per_query", "empty", "missing", "gate", "max_drop", "quiet")


def _inferred(ctx: typer.Context, *, system: list[str] | None, baseline: str | None, metric: list[str] | None,
              gain: Gain, relevant_threshold: float, fmt: OutputFormat, batch: str | None, out: str | None,
              force: bool, db: str | None, **_: object) -> None:
    """``report --estimator inferred``: :func:`~ndcg_labeling.scoring.inferred.inferred_report` of a sampled
    batch (infNDCG@K or xinfAP with sampling intervals), rendered as rows."""
    import re

    from ndcg_labeling.scoring.inferred import inferred_report

    refuse_given(ctx, (*INFERRED_REFUSES, "judge"), "--estimator inferred")
    if any(m.strip().lower().startswith("map") for m in metric or ()):
        refuse_given(ctx, ("gain",), "--estimator inferred --metric map")
    else:
        refuse_given(ctx, ("relevant_threshold",), "--estimator inferred --metric ndcg@K")
    if gain is Gain.binary:
        raise typer.BadParameter("--estimator inferred takes exponential or linear gain, not binary", param_hint="--gain")
    if batch is None:
        raise typer.BadParameter("--estimator inferred needs --batch NAME (a batch made with --strategy sample)",
                                 param_hint="--batch")
    if fmt not in (OutputFormat.table, OutputFormat.csv, OutputFormat.json):
        raise typer.BadParameter("--estimator inferred prints table, csv or json", param_hint="--format")
    given = metric[0].strip().lower() if metric and len(metric) == 1 else ""
    cut = re.fullmatch(r"ndcg@(\d{1,4})|map(?:@(\d{1,4}))?", given)
    if metric and cut is None:
        raise fail(f"--metric: --estimator inferred estimates one ndcg@K or map[@K], got {', '.join(metric)}")
    measure = "map" if given.startswith("map") else "ndcg"
    digits = (cut.group(1) or cut.group(2)) if cut else "10"
    k = int(digits) if digits else None  # map alone: each list to the batch's depth
    check_out(out, force)
    with open_session(db, read_only=True) as session:
        result = inferred_report(batch, session=session, gain=gain.value, k=k,
                                 baseline=baseline, systems=list(system) if system else None, measure=measure,
                                 relevant=relevant_threshold)
    for warning in result.warnings:
        err_console.print(f"Warning: {warning}", markup=False, highlight=False)
    if fmt is OutputFormat.json:
        write_output(json.dumps(result.as_dict()) + "\n", out, force)
        return
    m = result.metric
    rows = [{"system": r.system, f"inf{m}": f"{r.inferred:.3f}", "95% ±": f"{r.half_width:.3f}",
             f"plain {m}": f"{r.plain:.3f}", "diff": "" if r.diff is None else f"{r.diff:+.3f}",
             "diff 95% ±": "" if r.diff_half_width is None else f"{r.diff_half_width:.3f}"} for r in result.rows]
    _header_and_rows(result.header(), rows, rows, f"batch {result.batch}", fmt, out, force)


# report options the ppi estimator does not implement (it scores empty queries and missing lists as 0)
PPI_REFUSES = ("per_query", "empty", "missing", "gate", "max_drop", "quiet", "batch")


def _ppi(ctx: typer.Context, *, system: list[str] | None, baseline: str | None, metric: list[str] | None,
         by: By | None, gain: Gain, relevant_threshold: float, fmt: OutputFormat, judge: str | None,
         out: str | None, force: bool, db: str | None, **_: object) -> None:
    """``report --estimator ppi --judge GRADER``: :func:`~ndcg_labeling.scoring.ppi.ppi_report`, as rows."""
    from ndcg_labeling.results import ReportOptions
    from ndcg_labeling.scoring.ppi import ppi_report
    from ndcg_labeling.sources.judge_gate import check_judge_use

    refuse_given(ctx, PPI_REFUSES, "--estimator ppi")
    if judge is None:
        raise typer.BadParameter("--estimator ppi needs --judge GRADER (the grader whose labels cover every query)",
                                 param_hint="--judge")
    if by is By.query:
        raise typer.BadParameter("--estimator ppi groups by query-type or overall, not by query", param_hint="--by")
    if fmt not in (OutputFormat.table, OutputFormat.csv, OutputFormat.json):
        raise typer.BadParameter("--estimator ppi prints table, csv or json", param_hint="--format")
    metrics = tuple(metric or ("ndcg@10",))
    options = ReportOptions(systems=tuple(system or ()), baseline=baseline, metrics=metrics,
                            by=(by or By.query_type).value, gain=gain.value, relevant_threshold=relevant_threshold)
    check_out(out, force)
    with open_session(db, read_only=True) as session:
        # the judge gate (issue 47): lineage and the calibrated model and prompt. Called here because
        # scoring/ppi.py belongs to the PPI work of the same issue; it can move into ppi_report at merge.
        named = [*options.systems, *([options.baseline] if options.baseline else [])]
        check_judge_use(judge, named or None, use="report --estimator ppi", session=session)
        result = ppi_report(session=session, judge=judge, options=options)
    for warning in result.warnings:
        err_console.print(f"Warning: {warning}", markup=False, highlight=False)
    if fmt is OutputFormat.json:
        write_output(json.dumps(result.as_dict()) + "\n", out, force)
        return

    def num(v: float | None, spec: str = ".3f") -> str:
        return "" if v is None else format(v, spec)

    rows = [{"system": r.system if r.baseline is None else f"{r.system} - {r.baseline}", "query_type": r.query_type,
             "metric": r.metric, "ppi": num(r.estimate, "+.3f" if r.baseline else ".3f"),
             "95% low": num(r.ci_low), "95% high": num(r.ci_high), "human": num(r.human),
             "human low": num(r.human_ci_low), "human high": num(r.human_ci_high),
             "judge only": num(r.judge_only), "judge bias": num(r.judge_bias, "+.3f"), "lambda": num(r.lam, ".2f"),
             "audited": r.audited, "queries": r.queries, "effective n": num(r.effective_n, ".1f")}
            for r in result.rows]
    _header_and_rows(result.header(), rows, result.as_dict()["rows"], f"judge {result.judge}", fmt, out, force)


def _header_and_rows(header: str, rows: list[dict[str, Any]], csv_rows: list[dict[str, Any]], title: str,
                     fmt: OutputFormat, out: str | None, force: bool) -> None:
    """An estimator's header and table (inferred, ppi): csv on stdout with the header on stderr, or both as text."""
    from ndcg_labeling.reports.rows import render_rows

    if fmt is OutputFormat.csv:
        err_console.print(header, markup=False, highlight=False)
        write_output(render_rows(csv_rows, "csv") or "", out, force)
        return
    with printed_to(out, force):  # with -o: the same header and table, plain, into the file
        typer.echo(header)
        render_rows(rows, "table", title=title)
    if out:
        err_console.print(f"report written to {out}", markup=False)


def _render(result: Any, fmt: OutputFormat, out: str | None, force: bool) -> None:
    from ndcg_labeling.reports.render import TABLE_WIDTH, render_report

    if fmt is OutputFormat.table:
        from rich.console import Console

        if out:
            from ndcg_labeling.io.files import open_output

            with open_output(out, force=force) as fh:
                render_report(result, "table", console=Console(file=fh, width=TABLE_WIDTH))
        else:  # piped: wide enough for the metric columns
            render_report(result, "table", console=console if console.is_terminal else None)
        return
    if fmt in (OutputFormat.csv, OutputFormat.json):
        for warning in result.warnings:
            err_console.print(f"Warning: {warning}", markup=False)
        for n in result.notes:
            err_console.print(f"note: {n}", markup=False)
        from ndcg_labeling.reports.headline import caveat_advice, coverage_advice

        for advice in coverage_advice(result) + caveat_advice(result):
            err_console.print(f"hint: {advice}", markup=False, highlight=False)
    if fmt is OutputFormat.csv:  # json carries the headline in its data
        from ndcg_labeling.reports.headline import headline_items

        for item in headline_items(result):
            err_console.print(f"headline: {item['text']}", markup=False, highlight=False)
    write_output(render_report(result, fmt.value) or "", out, force)
    if out:
        err_console.print(f"report written to {out}", markup=False)


#: the job of each ``--estimator``
ESTIMATORS: dict[Estimator, Callable[..., None]] = {Estimator.plain: _plain, Estimator.inferred: _inferred,
                                                     Estimator.ppi: _ppi}


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report")(report)
