"""``tasks create --audit-of``: the command body, kept out of tasks_cmds.py (one hook there)."""

from __future__ import annotations

import typer

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import open_session, print_summary


def create_audit_batch(batch: str, audit_of: str, *, scale: str, judge: str | None, budget: int | None, overlap: int,
                       graders: list[str], seed: int | None, depth: int | None, db: str | None,
                       fmt: OutputFormat) -> None:
    """Draw the audit and create its batch in one transaction; print the summary."""
    from ndcg_labeling.labels.tasks.audit import create_audit

    if judge is None:
        raise typer.BadParameter("--audit-of needs --judge GRADER (the judge that graded the batch)",
                                 param_hint="--judge")
    if budget is None:
        raise typer.BadParameter("--audit-of needs --budget N (the queries to audit)", param_hint="--budget")
    if depth is not None:
        raise typer.BadParameter("--audit-of takes the pairs of the audited batch: no --depth", param_hint="--depth")
    with open_session(db) as session:
        result = create_audit(batch, audit_of=audit_of, judge=judge, budget=budget, overlap=overlap,
                              graders=graders, session=session, seed=seed, scale=scale)
    print_summary(result, fmt)
