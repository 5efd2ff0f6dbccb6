"""labels from behavior: the provenance of each ``implicit derive`` run and its graded pairs

Revision ID: 0010
Revises: 0006
Create Date: 2026-12-04

A behavior grader's grades are ordinary ``judgments`` (of a grader of kind ``behavior``); these two tables
say where they came from: the model, its parameters, the window, the half-life, the fitted position bias
(``behavior_derivations``) and the impressions, clicks and score of every graded pair (``behavior_pairs``).
Raw log rows are never stored.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "behavior_derivations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(16), nullable=False),
        sa.Column("scale", sa.String(16), nullable=False),
        sa.Column("batch", sa.String(128), server_default="", nullable=False),
        sa.Column("sources", sa.JSON(), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column("since", sa.Float(), nullable=True),
        sa.Column("until", sa.Float(), nullable=True),
        sa.Column("as_of", sa.Float(), nullable=True),
        sa.Column("half_life_s", sa.Float(), nullable=True),
        sa.Column("min_impressions", sa.Integer(), nullable=False),
        sa.Column("thresholds", sa.JSON(), nullable=False),
        sa.Column("fit_to", sa.String(128), nullable=True),
        sa.Column("held_out_kappa", sa.Float(), nullable=True),
        sa.Column("position_bias", sa.JSON(), nullable=False),
        sa.Column("position_bias_kind", sa.String(64), nullable=False),
        sa.Column("n_impressions", sa.BigInteger(), nullable=False),
        sa.Column("n_pairs_graded", sa.Integer(), nullable=False),
        sa.Column("n_pairs_left_out", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_behavior_derivations_grader_id_graders"),
        sa.ForeignKeyConstraint(["scale"], ["scales.name"], name="fk_behavior_derivations_scale_scales"),
        sa.PrimaryKeyConstraint("id", name="pk_behavior_derivations"),
    )
    op.create_index("ix_behavior_derivations_grader_id", "behavior_derivations", ["grader_id"])
    op.create_table(
        "behavior_pairs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("derivation_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("impressions", sa.BigInteger(), nullable=False),
        sa.Column("clicks", sa.BigInteger(), nullable=False),
        sa.Column("weighted_impressions", sa.Float(), nullable=False),
        sa.Column("weighted_clicks", sa.Float(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["derivation_id"], ["behavior_derivations.id"],
                                name="fk_behavior_pairs_derivation_id_behavior_derivations", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["query_id"], ["queries.id"], name="fk_behavior_pairs_query_id_queries"),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], name="fk_behavior_pairs_document_id_documents"),
        sa.PrimaryKeyConstraint("id", name="pk_behavior_pairs"),
        sa.UniqueConstraint("derivation_id", "query_id", "document_id",
                            name="uq_behavior_pairs_derivation_id_query_id_document_id"),
    )


def downgrade() -> None:
    op.drop_table("behavior_pairs")
    op.drop_index("ix_behavior_derivations_grader_id", table_name="behavior_derivations")
    op.drop_table("behavior_derivations")
