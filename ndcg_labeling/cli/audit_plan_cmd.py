"""``plan --judge GRADER --audit N``: the command body, kept out of plan_cmd.py (one hook there)."""

from __future__ import annotations

import typer

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import open_session, refuse_given, write_output
from ndcg_labeling.reports.rows import render_rows

# plan's options of its other two modes: refused here rather than ignored
OTHER_MODES = ("mde", "power", "alpha", "system", "sd", "budget", "batch", "depth")


def plan_audit_cmd(ctx: typer.Context, *, judge: str, audit: list[int] | None, metric: str, baseline: str | None,
                   fmt: OutputFormat, db: str | None) -> None:
    """:func:`~ndcg_labeling.scoring.audit_plan.plan_audit`, rendered."""
    from ndcg_labeling.scoring.audit_plan import AUDIT_PLAN_COLUMNS, plan_audit

    refuse_given(ctx, OTHER_MODES, "--judge (it plans an audit)")
    if not audit:
        raise typer.BadParameter("--judge needs --audit N (repeat for several sizes)", param_hint="--audit")
    with open_session(db, read_only=True) as session:
        rows = plan_audit(list(audit), session=session, judge=judge, metric=metric, baseline=baseline)
    if fmt is not OutputFormat.table:
        write_output(render_rows(rows, fmt, columns=list(AUDIT_PLAN_COLUMNS)) or "", None)
        return
    shown = [{"target": r["system"] if r["baseline"] is None else f"{r['system']} - {r['baseline']}",
              "audit": f"{r['audit']} of {r['queries']}", f"PPI {r['metric']} 95% ±": f"{r['ppi_halfwidth']:.3f}",
              "people alone ±": f"{r['human_halfwidth']:.3f}",
              "ratio": "" if r["width_ratio"] is None else f"{r['width_ratio']:.2f}x"} for r in rows]
    so_far = rows[0]["audited_so_far"] if rows else 0
    render_rows(shown, fmt, title=f"predicted PPI interval widths from {so_far} audited queries (docs/judges.md)")
