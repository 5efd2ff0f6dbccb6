"""online experiments: ingest keys and the impression events posted to ``serve``

Revision ID: 0012
Revises: 0010
Create Date: 2026-12-04

``ingest_keys`` holds the sha256 of each key allowed to ``POST /api/events`` (revocable);
``online_events`` the posted impression rows, stored before they are acknowledged, replayed into the
live sums when the server starts.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_ID = 512


def upgrade() -> None:
    op.create_table(
        "ingest_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_ingest_keys"),
        sa.UniqueConstraint("name", name="uq_ingest_keys_name"),
        sa.UniqueConstraint("key_hash", name="uq_ingest_keys_key_hash"),
    )
    op.create_table(
        "online_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("request_id", sa.String(_ID), nullable=False),
        sa.Column("query_id", sa.String(_ID), nullable=False),
        sa.Column("doc_id", sa.String(_ID), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("clicked", sa.Integer(), nullable=False),
        sa.Column("ts", sa.Float(), nullable=False),
        sa.Column("arm", sa.String(128), nullable=False),
        sa.Column("converted", sa.Float(), nullable=True),
        sa.Column("watch_ratio", sa.Float(), nullable=True),
        sa.Column("dwell_ms", sa.Float(), nullable=True),
        sa.Column("session_id", sa.String(_ID), nullable=True),
        sa.Column("user_id", sa.String(_ID), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_online_events"),
    )
    op.create_index("ix_online_events_request_id", "online_events", ["request_id"])


def downgrade() -> None:
    op.drop_index("ix_online_events_request_id", table_name="online_events")
    op.drop_table("online_events")
    op.drop_table("ingest_keys")
