"""grader quality: gold items, the gold items mixed into a batch, graders' answers to them, grader kind,
and a batch's gold settings

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03

Whatever marks an item as gold lives in tables of its own (``batch_gold_items``, ``gold_answers``), never
in a column of ``batch_items`` or ``assignments``: nothing a grader's items are read from changes.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("graders", sa.Column("kind", sa.String(16), server_default="human", nullable=False))
    op.add_column("grading_batches", sa.Column("gold_rate", sa.Float(), server_default="0", nullable=False))
    op.add_column("grading_batches", sa.Column("gold_feedback", sa.Boolean(), server_default=sa.false(),
                                               nullable=False))
    op.create_table(
        "gold_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("scale", sa.String(16), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=False),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("source_file", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["query_id"], ["queries.id"], name="fk_gold_items_query_id_queries"),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], name="fk_gold_items_document_id_documents"),
        sa.ForeignKeyConstraint(["scale"], ["scales.name"], name="fk_gold_items_scale_scales"),
        sa.PrimaryKeyConstraint("id", name="pk_gold_items"),
        sa.UniqueConstraint("query_id", "document_id", "scale", name="uq_gold_items_query_id_document_id_scale"),
    )
    op.create_table(
        "batch_gold_items",
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("gold_item_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["item_id"], ["batch_items.id"], name="fk_batch_gold_items_item_id_batch_items",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["gold_item_id"], ["gold_items.id"],
                                name="fk_batch_gold_items_gold_item_id_gold_items"),
        sa.PrimaryKeyConstraint("item_id", name="pk_batch_gold_items"),
    )
    op.create_index("ix_batch_gold_items_gold_item_id", "batch_gold_items", ["gold_item_id"])
    op.create_table(
        "gold_answers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=False),
        sa.Column("source_file", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"],
                                name="fk_gold_answers_assignment_id_assignments", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_gold_answers"),
        sa.UniqueConstraint("assignment_id", name="uq_gold_answers_assignment_id"),
    )


def downgrade() -> None:
    op.drop_table("gold_answers")
    op.drop_index("ix_batch_gold_items_gold_item_id", table_name="batch_gold_items")
    op.drop_table("batch_gold_items")
    op.drop_table("gold_items")
    if op.get_bind().dialect.name == "sqlite":
        # as in 0004: SQLite >= 3.35 drops a plain column in place (no table copy that would trip foreign keys)
        for table, column in (("grading_batches", "gold_feedback"), ("grading_batches", "gold_rate"),
                              ("graders", "kind")):
            op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    else:
        op.drop_column("grading_batches", "gold_feedback")
        op.drop_column("grading_batches", "gold_rate")
        op.drop_column("graders", "kind")
