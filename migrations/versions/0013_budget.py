"""label less: the pooling strategy of a batch and each item's inclusion probability

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04

``grading_batches.strategy`` (NULL: depth-k pooling, as before), ``budget`` (pairs asked for, over all
rounds) and ``strata_edges`` (the best-rank bands of a ``sample`` batch's strata, fixed by its first round); ``batch_item_designs``, one row per item of a batch made with ``--strategy``: ``round`` (1 for the
items of ``tasks create``, 2, 3, ... for each ``tasks extend``), ``stratum`` (the sampling stratum of a
``sample`` batch) and ``inclusion`` (the item's inclusion probability under the design, kept current when
the batch grows; NULL where the strategy has none). A table of its own, not columns of ``batch_items``: what
a grader's items are read from carries no trace of the strategy (position-blindness).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("grading_batches") as batch:
        batch.add_column(sa.Column("strategy", sa.String(16), nullable=True))
        batch.add_column(sa.Column("budget", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("strata_edges", sa.JSON(), nullable=True))
    op.create_table(
        "batch_item_designs",
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("stratum", sa.Integer(), nullable=True),
        sa.Column("inclusion", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["item_id"], ["batch_items.id"], name="fk_batch_item_designs_item_id_batch_items",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("item_id", name="pk_batch_item_designs"),
    )


def downgrade() -> None:
    op.drop_table("batch_item_designs")
    with op.batch_alter_table("grading_batches") as batch:
        batch.drop_column("strata_edges")
        batch.drop_column("budget")
        batch.drop_column("strategy")
