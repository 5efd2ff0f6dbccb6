"""``tasks create --from-traffic``: the command body, kept out of tasks_cmds.py (one hook there)."""

from __future__ import annotations

import typer

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import open_session, print_summary
from ndcg_labeling.reports.rows import summary_text


def create_from_traffic(batch: str, logs: list[str], *, budget: int | None, by: str, half_life: str, scale: str,
                        overlap: int, graders: list[str], seed: int | None, gold_rate: float, gold_feedback: bool,
                        depth: int | None, db: str | None, fmt: OutputFormat) -> None:
    """Pool by traffic and create the batch in one transaction; print both summaries."""
    from ndcg_labeling.experiments.traffic_pool import create_batch_from_traffic

    if budget is None:
        raise typer.BadParameter("--from-traffic needs --budget N", param_hint="--budget")
    if depth is not None:
        raise typer.BadParameter("--depth pools the systems' top-k, --from-traffic the logs: give one of them",
                                 param_hint="--depth")
    with open_session(db) as session:
        result, found = create_batch_from_traffic(batch, logs, budget=budget, by=by, half_life=half_life, scale=scale,
                                                  overlap=overlap, graders=graders, session=session, seed=seed,
                                                  gold_rate=gold_rate, gold_feedback=gold_feedback)
    print_summary(f"{summary_text(result)}\n{summary_text(found)}", fmt, {**result.as_dict(), "traffic": found.as_dict()})
