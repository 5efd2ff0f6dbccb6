"""``plan``: how many queries a paired comparison needs to detect a difference (and what the queries
at hand detect)."""

from __future__ import annotations

from typing import Annotated

import typer

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import (
    DbOption,
    FormatOption,
    console,
    handle_errors,
    open_session,
    refuse_given,
    row_progress,
    write_output,
)
from ndcg_labeling.reports.rows import render_rows

# plan's options that only one of its two modes uses: each is refused in the other rather than ignored
QUERIES_ONLY = ("mde", "metric", "power", "alpha", "baseline", "system", "sd")
BUDGET_ONLY = ("batch", "depth")


def plan(
    ctx: typer.Context,
    mde: Annotated[float | None, typer.Option("--mde", help="The smallest true difference to detect (e.g. 0.02); needed unless --budget.")] = None,
    metric: Annotated[str, typer.Option("--metric", help="The metric the difference is in.")] = "ndcg@10",
    power: Annotated[float, typer.Option("--power", help="Probability of detecting a true difference of --mde.")] = 0.8,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided significance level of the paired t-test.")] = 0.05,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Measure the sd against this system; default: the report's baseline.")] = None,
    system: Annotated[str | None, typer.Option("--system", help="Measure the sd for this system; default: every other system.")] = None,
    sd: Annotated[float | None, typer.Option("--sd", help="Standard deviation of per-query differences (no database needed).")] = None,
    budget: Annotated[list[int] | None, typer.Option("--budget", help="Instead: the expected 95% interval widths of infNDCG@10 for this many judgments of a sampled pool (repeat; docs/budget.md).")] = None,
    batch: Annotated[str | None, typer.Option("--batch", help="With --budget: the batch whose pool and grades so far to plan from.")] = None,
    depth: Annotated[int, typer.Option("--depth", help="With --budget and no --batch: the pool depth (1 to 1000).")] = 20,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Instead: the PPI interval widths audits of --audit queries should give this judge's numbers (docs/judges.md).")] = None,
    audit: Annotated[list[int] | None, typer.Option("--audit", help="With --judge: an audit size in queries (repeat).")] = None,
) -> None:
    """Queries needed for a paired two-sided t-test to detect --mde, from the sd of per-query differences;
    with --budget, the interval widths a sampled batch of that many judgments should give."""
    if judge is not None:  # the third mode: plan an audit (cli/audit_plan_cmd.py)
        from ndcg_labeling.cli.audit_plan_cmd import plan_audit_cmd

        plan_audit_cmd(ctx, judge=judge, audit=audit, metric=metric, baseline=baseline, fmt=fmt, db=db)
        return
    refuse_given(ctx, ("audit",), "--mde or --budget (it plans an audit with --judge)")
    # one job per mode, each refusing the options of the other
    (_plan_budget if budget else _plan_queries)(ctx, mde=mde, metric=metric, power=power, alpha=alpha,
                                                baseline=baseline, system=system, sd=sd, budget=budget, batch=batch,
                                                depth=depth, fmt=fmt, db=db)


def _plan_budget(ctx: typer.Context, *, budget: list[int] | None, batch: str | None, depth: int, fmt: OutputFormat,
                 db: str | None, **_: object) -> None:
    """``plan --budget``: :func:`~ndcg_labeling.scoring.inferred.plan_budget`, the expected interval widths."""
    from ndcg_labeling.scoring.inferred import plan_budget

    refuse_given(ctx, QUERIES_ONLY, "--budget")
    if batch is not None:
        refuse_given(ctx, ("depth",), "--batch (the batch's own depth is used)")

    with open_session(db, read_only=True) as session, row_progress("simulating samples", "samples") as progress:
        rows = plan_budget(list(budget or ()), session=session, batch=batch, depth=depth, progress=progress)
    columns = ["budget", "share", "pool_pairs", "queries", "system", "halfwidth", "baseline", "diff_halfwidth"]
    if fmt is not OutputFormat.table:
        write_output(render_rows(rows, fmt, columns=columns) or "", None)
        return
    few = "n/a: < 2 pairs per query"
    shown = [{"judgments": f"{r['budget']:,} ({r['share']:.0%} of {r['pool_pairs']:,})", "system": r["system"],
              "infndcg@10 95% ±": few if r["halfwidth"] is None else f"{r['halfwidth']:.3f}",
              f"diff vs {r['baseline']} 95% ±": "" if r["diff_halfwidth"] is None else f"{r['diff_halfwidth']:.3f}"}
             for r in rows]
    render_rows(shown, fmt, title="expected interval widths (simulated, docs/budget.md)")


def _plan_queries(ctx: typer.Context, *, mde: float | None, metric: str, power: float, alpha: float,
                  baseline: str | None, system: str | None, sd: float | None, fmt: OutputFormat, db: str | None,
                  **_: object) -> None:
    """``plan --mde``: :func:`~ndcg_labeling.scoring.plan.plan_queries`, the queries a comparison needs."""
    refuse_given(ctx, BUDGET_ONLY, "--mde (they plan judgments: pass --budget)")
    if mde is None:
        raise typer.BadParameter("--mde is required (or plan judgments with --budget)", param_hint="--mde")
    from ndcg_labeling.scoring.plan import PLAN_COLUMNS, PlanOptions, plan_queries, plan_sentence

    options = PlanOptions(mde=mde, metric=metric, power=power, alpha=alpha, baseline=baseline, system=system, sd=sd)
    if sd is not None:
        with handle_errors():
            rows = plan_queries(session=None, options=options)
    else:
        with open_session(db) as session:
            rows = plan_queries(session=session, options=options)
    if fmt is not OutputFormat.table:
        write_output(render_rows(rows, fmt, columns=PLAN_COLUMNS) or "", None)
        return
    from ndcg_labeling.reports.plan import render_plan_table

    render_plan_table(rows, console)
    for row in rows:
        if row["query_type"] == "all":
            console.print(plan_sentence(row), markup=False, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``plan`` to ``app``."""
    app.command("plan")(plan)
