"""rankings straight from search engines: search configurations and the snapshots taken with them

Revision ID: 0017
Revises: 0014
Create Date: 2026-12-07

``search_configs``: a name, the engine kind, base URL, index, request template and its sha256, where the id
and score are in a response, the NAME of the environment variable holding the credential (never the
credential) and the header it goes in where not the usual one, timeout, concurrency and rate limit. ``search_snapshots``: one row per ``snapshot take``,
linking the stored run it wrote (``systems`` + ``ranking_entries``, named ``CONFIG@TIMESTAMP``) to its
configuration and the template hash. Two new tables only: the downgrade drops them (the stored runs of
the snapshots stay, as runs).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "search_configs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(96), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("index_name", sa.String(256), nullable=True),
        sa.Column("template", sa.Text(), nullable=False),
        sa.Column("template_sha256", sa.String(64), nullable=False),
        sa.Column("id_path", sa.Text(), nullable=False),
        sa.Column("score_path", sa.Text(), nullable=True),
        sa.Column("key_env", sa.String(128), nullable=True),
        sa.Column("key_header", sa.String(128), nullable=True),
        sa.Column("timeout", sa.Float(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("rate", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_search_configs"),
        sa.UniqueConstraint("name", name="uq_search_configs_name"),
    )
    op.create_table(
        "search_snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("system_id", sa.Integer(), nullable=False),
        sa.Column("config_id", sa.Integer(), nullable=False),
        sa.Column("template_sha256", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("n_queries", sa.Integer(), nullable=False),
        sa.Column("n_hits", sa.Integer(), nullable=False),
        sa.Column("notes", sa.JSON(), nullable=True),
        sa.Column("taken_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["system_id"], ["systems.id"], name="fk_search_snapshots_system_id_systems",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["config_id"], ["search_configs.id"],
                                name="fk_search_snapshots_config_id_search_configs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_search_snapshots"),
        sa.UniqueConstraint("system_id", name="uq_search_snapshots_system_id"),
    )
    op.create_index("ix_search_snapshots_config_id", "search_snapshots", ["config_id"])


def downgrade() -> None:
    op.drop_index("ix_search_snapshots_config_id", table_name="search_snapshots")
    op.drop_table("search_snapshots")
    op.drop_table("search_configs")
