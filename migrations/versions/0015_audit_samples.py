"""judge everything, audit a little: the queries an audit batch drew and their inclusion probabilities

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07

``audit_samples``, one row per query that ``tasks create NAME --audit-of BATCH --judge GRADER --budget N``
drew for people: the audit batch, the query, the batch the judge graded in full (``source_batch_id``), the
judge, the sampling stratum (query type and the judge's grade band, as text) with its size in queries
(``stratum_size``) and the query's inclusion probability under the stratified design. ``report --estimator
ppi --judge GRADER`` weights the audited queries by the inverse of it (docs/judges.md). A new table only: no
table copy, nothing else changes.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_samples",
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("source_batch_id", sa.Integer(), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=False),
        sa.Column("stratum", sa.String(200), nullable=False),
        sa.Column("stratum_size", sa.Integer(), nullable=False),
        sa.Column("inclusion", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["grading_batches.id"],
                                name="fk_audit_samples_batch_id_grading_batches", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["query_id"], ["queries.id"], name="fk_audit_samples_query_id_queries"),
        sa.ForeignKeyConstraint(["source_batch_id"], ["grading_batches.id"],
                                name="fk_audit_samples_source_batch_id_grading_batches", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["judge_id"], ["graders.id"], name="fk_audit_samples_judge_id_graders"),
        sa.PrimaryKeyConstraint("batch_id", "query_id", name="pk_audit_samples"),
    )
    op.create_index("ix_audit_samples_judge_id", "audit_samples", ["judge_id"])


def downgrade() -> None:
    op.drop_index("ix_audit_samples_judge_id", table_name="audit_samples")
    op.drop_table("audit_samples")
