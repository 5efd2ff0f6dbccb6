"""The ``status`` use case: row counts of the main tables (Core reads: no ORM, no pandas; issue 17)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndcg_labeling.db.tables import table_counts

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session


def database_status(*, session: Connection | Session) -> dict[str, int]:
    """Counts keyed ``queries, documents, graders, systems, rankings, judgments, consensus``."""
    return table_counts(session=session)
