"""The tables as plain SQLAlchemy Core clauses, for the read-only overviews of the light commands.

``status``, ``graders list``, ``tasks status|list`` and ``adjudicate list`` query these instead of the
ORM models, so they start without importing ``sqlalchemy.orm`` or mapping the models (together about
as long as the whole of ``import pandas``; issue 17). Only the columns those reads need are named,
each with the type of its model column (the type turns SQLite's stored text and integers back into
datetimes and booleans). The schema's one owner stays :mod:`ndcg_labeling.db.models` (built by the
migrations): ``tests/db/test_tables.py`` checks every table and column here against the models'
metadata, names and types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Boolean, DateTime, Float, Integer, String, Text, column, func, select, table

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

queries = table("queries", column("id", Integer), column("external_id", String))
documents = table("documents", column("id", Integer), column("external_id", String))
graders = table("graders", column("id", Integer), column("name", String), column("display_name", String),
                column("active", Boolean), column("role", String), column("kind", String))
systems = table("systems", column("id", Integer))
ranking_entries = table("ranking_entries", column("id", Integer))
judgments = table("judgments", column("id", Integer), column("grader_id", Integer), column("query_id", Integer),
                  column("document_id", Integer), column("grade", Integer), column("batch", String))
consensus_labels = table(
    "consensus_labels", column("id", Integer), column("query_id", Integer), column("document_id", Integer),
    column("value", Float), column("method", String), column("batch", String), column("n_graders", Integer),
    column("spread", Float), column("needs_adjudication", Boolean), column("reason", String))
grading_batches = table(
    "grading_batches", column("id", Integer), column("name", String), column("scale", String),
    column("overlap", Integer), column("guideline_path", Text), column("guideline_version", String),
    column("guideline_sha256", String), column("created_at", DateTime))
batch_items = table("batch_items", column("id", Integer), column("batch_id", Integer))
assignments = table("assignments", column("id", Integer), column("batch_id", Integer), column("item_id", Integer),
                    column("grader_id", Integer), column("status", String))
adjudications = table("adjudications", column("id", Integer), column("query_id", Integer),
                      column("document_id", Integer), column("grade", Float), column("adjudicator", String),
                      column("note", Text))

ALL = (queries, documents, graders, systems, ranking_entries, judgments, consensus_labels, grading_batches,
       batch_items, assignments, adjudications)

#: the tables ``status`` counts, keyed as ``status --format json`` prints them
STATUS_TABLES = {"queries": queries, "documents": documents, "graders": graders, "systems": systems,
                 "rankings": ranking_entries, "judgments": judgments, "consensus": consensus_labels}


def flush_pending(session: Connection | Session) -> None:
    """Before a Core read: flush an ORM session's pending objects (Core statements do not autoflush it
    as queries on the models do), so a caller that has just added rows reads them; a connection as is."""
    if getattr(session, "autoflush", False):
        session.flush()  # type: ignore[union-attr]


def table_counts(*, session: Connection | Session) -> dict[str, int]:
    """Row counts of the main tables, keyed as ``status --format json`` prints them (``session``: an
    ORM session or a Core connection)."""
    flush_pending(session)
    return {key: int(session.execute(select(func.count()).select_from(clause)).scalar_one())
            for key, clause in STATUS_TABLES.items()}
