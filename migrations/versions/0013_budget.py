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


_COLUMNS = ("strategy", "budget", "strata_edges")


def upgrade() -> None:
    # plain ADD COLUMN (no batch mode): SQLite's table copy would drop grading_batches under the ON DELETE
    # CASCADE of batch_items and assignments, and take their rows with it
    op.add_column("grading_batches", sa.Column("strategy", sa.String(16), nullable=True))
    op.add_column("grading_batches", sa.Column("budget", sa.Integer(), nullable=True))
    op.add_column("grading_batches", sa.Column("strata_edges", sa.JSON(), nullable=True))
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
    if op.get_bind().dialect.name == "sqlite":
        # as in 0005: SQLite >= 3.35 drops a plain column in place (no table copy that would trip foreign keys)
        for column in reversed(_COLUMNS):
            op.execute(f"ALTER TABLE grading_batches DROP COLUMN {column}")
    else:
        for column in reversed(_COLUMNS):
            op.drop_column("grading_batches", column)
