"""web workspace: grader roles, sign-in tokens and browser sessions (both stored as sha256)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03

Skip reasons already live in ``assignments.skip_reason`` (revision 0002).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("graders", sa.Column("role", sa.String(16), server_default="grader", nullable=False))
    op.create_table(
        "grader_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_grader_tokens_grader_id_graders",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_grader_tokens"),
        sa.UniqueConstraint("token_sha256", name="uq_grader_tokens_token_sha256"),
    )
    op.create_index("ix_grader_tokens_grader_id", "grader_tokens", ["grader_id"])
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.Column("session_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_web_sessions_grader_id_graders",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["token_id"], ["grader_tokens.id"], name="fk_web_sessions_token_id_grader_tokens",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_web_sessions"),
        sa.UniqueConstraint("session_sha256", name="uq_web_sessions_session_sha256"),
    )
    op.create_index("ix_web_sessions_grader_id", "web_sessions", ["grader_id"])
    op.create_index("ix_web_sessions_token_id", "web_sessions", ["token_id"])


def downgrade() -> None:
    op.drop_table("web_sessions")
    op.drop_table("grader_tokens")
    if op.get_bind().dialect.name == "sqlite":
        # SQLite >= 3.35 drops a column in place; alembic's batch mode would copy the table, and dropping
        # the old graders table trips the foreign keys of judgments and assignments.
        op.execute("ALTER TABLE graders DROP COLUMN role")
    else:
        op.drop_column("graders", "role")
