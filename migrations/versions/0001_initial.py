"""initial schema: scales, queries, documents, graders, systems, rankings, judgments, consensus

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The scales as they were when this revision was written (a migration never imports app code that
# may change later).
SCALES = {
    "0-3": ["Irrelevant", "Somewhat relevant", "Highly relevant", "Perfect"],
    "0-4": ["Bad", "Fair", "Good", "Excellent", "Perfect"],
}


def upgrade() -> None:
    scales = op.create_table(
        "scales",
        sa.Column("name", sa.String(16), nullable=False),
        sa.Column("min_grade", sa.Integer(), nullable=False),
        sa.Column("max_grade", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_scales"),
    )
    scale_grades = op.create_table(
        "scale_grades",
        sa.Column("scale", sa.String(16), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["scale"], ["scales.name"], name="fk_scale_grades_scale_scales", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("scale", "grade", name="pk_scale_grades"),
    )
    op.bulk_insert(scales, [{"name": n, "min_grade": 0, "max_grade": len(g) - 1} for n, g in SCALES.items()])
    op.bulk_insert(
        scale_grades,
        [{"scale": n, "grade": i, "label": label} for n, g in SCALES.items() for i, label in enumerate(g)],
    )
    op.create_table(
        "queries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(512), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("query_type", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_queries"),
        sa.UniqueConstraint("external_id", name="uq_queries_external_id"),
    )
    op.create_index("ix_queries_query_type", "queries", ["query_type"])
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("external_id", sa.String(512), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("meta", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_documents"),
        sa.UniqueConstraint("external_id", name="uq_documents_external_id"),
    )
    op.create_table(
        "graders",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("display_name", sa.String(256), nullable=True),
        sa.Column("active", sa.Boolean(), server_default="1", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_graders"),
        sa.UniqueConstraint("name", name="uq_graders_name"),
    )
    op.create_table(
        "systems",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_systems"),
        sa.UniqueConstraint("name", name="uq_systems_name"),
    )
    op.create_table(
        "ranking_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("system_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.CheckConstraint("rank >= 1", name="ck_ranking_entries_rank_positive"),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], name="fk_ranking_entries_document_id_documents"),
        sa.ForeignKeyConstraint(["query_id"], ["queries.id"], name="fk_ranking_entries_query_id_queries"),
        sa.ForeignKeyConstraint(["system_id"], ["systems.id"], name="fk_ranking_entries_system_id_systems", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_ranking_entries"),
        sa.UniqueConstraint("system_id", "query_id", "document_id", name="uq_ranking_entries_system_id_query_id_document_id"),
        sa.UniqueConstraint("system_id", "query_id", "rank", name="uq_ranking_entries_system_id_query_id_rank"),
    )
    op.create_index("ix_ranking_entries_query_id", "ranking_entries", ["query_id"])
    op.create_table(
        "judgments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=False),
        sa.Column("scale", sa.String(16), nullable=False),
        sa.Column("batch", sa.String(128), server_default="", nullable=False),
        sa.Column("source_file", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], name="fk_judgments_document_id_documents"),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_judgments_grader_id_graders"),
        sa.ForeignKeyConstraint(["query_id"], ["queries.id"], name="fk_judgments_query_id_queries"),
        sa.ForeignKeyConstraint(["scale"], ["scales.name"], name="fk_judgments_scale_scales"),
        sa.PrimaryKeyConstraint("id", name="pk_judgments"),
        sa.UniqueConstraint("grader_id", "query_id", "document_id", "batch", name="uq_judgments_grader_id_query_id_document_id_batch"),
    )
    op.create_index("ix_judgments_batch", "judgments", ["batch"])
    op.create_index("ix_judgments_query_id_document_id", "judgments", ["query_id", "document_id"])
    op.create_table(
        "consensus_labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("method", sa.String(32), nullable=False),
        sa.Column("scale", sa.String(16), nullable=True),
        sa.Column("batch", sa.String(128), server_default="", nullable=False),
        sa.Column("n_graders", sa.Integer(), nullable=False),
        sa.Column("spread", sa.Float(), nullable=True),
        sa.Column("needs_adjudication", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("reason", sa.String(128), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], name="fk_consensus_labels_document_id_documents"),
        sa.ForeignKeyConstraint(["query_id"], ["queries.id"], name="fk_consensus_labels_query_id_queries"),
        sa.ForeignKeyConstraint(["scale"], ["scales.name"], name="fk_consensus_labels_scale_scales"),
        sa.PrimaryKeyConstraint("id", name="pk_consensus_labels"),
        sa.UniqueConstraint("query_id", "document_id", name="uq_consensus_labels_query_id_document_id"),
    )
    op.create_index("ix_consensus_labels_batch", "consensus_labels", ["batch"])


def downgrade() -> None:
    op.drop_table("consensus_labels")
    op.drop_table("judgments")
    op.drop_table("ranking_entries")
    op.drop_table("systems")
    op.drop_table("graders")
    op.drop_table("documents")
    op.drop_table("queries")
    op.drop_table("scale_grades")
    op.drop_table("scales")
