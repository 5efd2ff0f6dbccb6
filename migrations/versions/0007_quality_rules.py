"""quality rules: the first answer to a gold item counts (later ones kept for the record), and a recorded
exclusion setting of consensus per scope

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04

``gold_answers.later_grade`` / ``n_later``: a grade given again to a gold item never replaces the first
(with ``--gold-feedback`` a grader would copy the reference grade); the newest later grade and how many
there were are kept. ``consensus_settings``: ``consensus --exclude-untrusted`` records its rule for the
scope (a batch name, or ``""`` for every judgment), so that later runs honour it until it is changed.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("gold_answers", sa.Column("later_grade", sa.Integer(), nullable=True))
    op.add_column("gold_answers", sa.Column("n_later", sa.Integer(), server_default="0", nullable=False))
    op.create_table(
        "consensus_settings",
        sa.Column("scope", sa.String(128), nullable=False),
        sa.Column("exclude_untrusted", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("exclude_undecided", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("min_accuracy", sa.Float(), server_default="0.7", nullable=False),
        sa.Column("excluded", sa.JSON(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("scope", name="pk_consensus_settings"),
    )


def downgrade() -> None:
    op.drop_table("consensus_settings")
    if op.get_bind().dialect.name == "sqlite":
        for column in ("n_later", "later_grade"):
            op.execute(f"ALTER TABLE gold_answers DROP COLUMN {column}")
    else:
        op.drop_column("gold_answers", "n_later")
        op.drop_column("gold_answers", "later_grade")
