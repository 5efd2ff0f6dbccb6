"""The ``status`` use case: row counts of the main tables."""

from __future__ import annotations

from sqlalchemy.orm import Session

from ndcg_labeling.db import repository as repo


def database_status(*, session: Session) -> dict[str, int]:
    """Counts keyed ``queries, documents, graders, systems, rankings, judgments, consensus``."""
    return repo.table_counts(session=session)
