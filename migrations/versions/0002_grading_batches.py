"""grading batches, batch items and per-grader assignments (position-blind grading)

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grading_batches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("scale", sa.String(16), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("overlap", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("systems", sa.JSON(), nullable=True),
        sa.Column("guideline_path", sa.Text(), nullable=False),
        sa.Column("guideline_version", sa.String(64), nullable=True),
        sa.Column("guideline_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["scale"], ["scales.name"], name="fk_grading_batches_scale_scales"),
        sa.PrimaryKeyConstraint("id", name="pk_grading_batches"),
        sa.UniqueConstraint("name", name="uq_grading_batches_name"),
    )
    op.create_table(
        "batch_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("item_key", sa.String(64), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["grading_batches.id"], name="fk_batch_items_batch_id_grading_batches", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], name="fk_batch_items_document_id_documents"),
        sa.ForeignKeyConstraint(["query_id"], ["queries.id"], name="fk_batch_items_query_id_queries"),
        sa.PrimaryKeyConstraint("id", name="pk_batch_items"),
        sa.UniqueConstraint("batch_id", "query_id", "document_id", name="uq_batch_items_batch_id_query_id_document_id"),
        sa.UniqueConstraint("item_key", name="uq_batch_items_item_key"),
    )
    op.create_index("ix_batch_items_batch_id", "batch_items", ["batch_id"])
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), server_default="open", nullable=False),
        sa.Column("skip_reason", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["batch_id"], ["grading_batches.id"], name="fk_assignments_batch_id_grading_batches", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_assignments_grader_id_graders"),
        sa.ForeignKeyConstraint(["item_id"], ["batch_items.id"], name="fk_assignments_item_id_batch_items", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_assignments"),
        sa.UniqueConstraint("batch_id", "grader_id", "position", name="uq_assignments_batch_id_grader_id_position"),
        sa.UniqueConstraint("item_id", "grader_id", name="uq_assignments_item_id_grader_id"),
    )
    op.create_index("ix_assignments_grader_id", "assignments", ["grader_id"])


def downgrade() -> None:
    op.drop_table("assignments")
    op.drop_table("batch_items")
    op.drop_table("grading_batches")
