"""server secrets: random keys the server keeps in the database (the sign-in form's HMAC key)

Revision ID: 0008
Revises: 0006
Create Date: 2026-12-04

One row per purpose (``name``). The upgrade creates the ``login`` key: 32 random bytes, URL-safe text;
every server process of the workspace reads the same key, so a sign-in page served by one process can
be posted to another. Downgrade drops the table (a new key is made at the next upgrade: open sign-in
pages must be reloaded, nothing else is lost).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "server_secrets",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("secret", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_server_secrets"),
    )
    op.bulk_insert(table, [{"name": "login", "secret": secrets.token_urlsafe(32),
                            "created_at": datetime.now(UTC).replace(tzinfo=None)}])


def downgrade() -> None:
    op.drop_table("server_secrets")
