"""adjudications: final grades set by a person, with their history

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adjudications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("grade", sa.Float(), nullable=False),
        sa.Column("adjudicator", sa.String(128), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], name="fk_adjudications_document_id_documents"),
        sa.ForeignKeyConstraint(["query_id"], ["queries.id"], name="fk_adjudications_query_id_queries"),
        sa.PrimaryKeyConstraint("id", name="pk_adjudications"),
    )
    op.create_index("ix_adjudications_query_id_document_id", "adjudications", ["query_id", "document_id"])


def downgrade() -> None:
    op.drop_table("adjudications")
