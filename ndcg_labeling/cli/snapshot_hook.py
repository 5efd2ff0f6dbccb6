"""``tasks create --from-snapshot``: the command body, kept out of tasks_cmds.py (one hook there)."""

from __future__ import annotations

from ndcg_labeling.choices import OutputFormat
from ndcg_labeling.cli.common import open_session, print_summary
from ndcg_labeling.reports.rows import summary_text


def create_from_snapshot(batch: str, snapshot: str, *, depth: int | None, scale: str, overlap: int,
                         graders: list[str], seed: int | None, gold_rate: float, gold_feedback: bool,
                         db: str | None, fmt: OutputFormat) -> None:
    """Pool the snapshot's unjudged pairs and create the batch in one transaction; print both summaries."""
    from ndcg_labeling.snapshots.pool import create_batch_from_snapshot

    with open_session(db) as session:
        result, found = create_batch_from_snapshot(batch, snapshot, depth=depth, scale=scale, overlap=overlap,
                                                   graders=graders, session=session, seed=seed,
                                                   gold_rate=gold_rate, gold_feedback=gold_feedback)
    print_summary(f"{summary_text(result)}\n{summary_text(found)}", fmt, {**result.as_dict(), "snapshot": found.as_dict()})
