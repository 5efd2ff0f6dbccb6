"""The judge gate: the endpoint of each judge label, the model and prompt a calibration verdict measured,
the judge's declared lineage (a model shared with a system under test) and the gate's checks (canary,
self-consistency)

Revision ID: 0016
Revises: 0014
Create Date: 2026-12-07

* ``judgment_provenance.base_url``: the endpoint (base URL, never the key) that answered a judge label; a
  label stored from the cache gets the base URL of the run that stores it (the cache key holds the URL,
  so it is the same endpoint). NULL for the labels stored before 0016 (their run's ``base_url`` says it).
* ``calibration_verdicts.model`` / ``template_sha256``: the model and prompt template hash of the judge
  labels a verdict measured (NULL when the labels carry no provenance: imported judgments); a verdict holds
  for that model and prompt only; ``kappa_ci_low`` / ``kappa_ci_high``: the 95 % query-bootstrap interval of
  its (quadratic) kappa, NULL below five queries.
* ``judge_lineage``: (judge, system) pairs declared to share a model; the judge is refused for comparisons
  involving the system.
* ``judge_checks``: each ``judge canary`` and ``judge recheck``, with its counts (``result``) and whether
  it passed; the newest canary of a judge gates ``calibrate`` and ``consensus --judge-fills``.

Plain ADD COLUMN and, on SQLite, DROP COLUMN in place (as 0013): no table copy.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_COLUMNS = {"judgment_provenance": ("base_url",),
            "calibration_verdicts": ("model", "template_sha256", "kappa_ci_low", "kappa_ci_high")}


def upgrade() -> None:
    op.add_column("judgment_provenance", sa.Column("base_url", sa.Text(), nullable=True))
    op.add_column("calibration_verdicts", sa.Column("model", sa.String(256), nullable=True))
    op.add_column("calibration_verdicts", sa.Column("template_sha256", sa.String(64), nullable=True))
    op.add_column("calibration_verdicts", sa.Column("kappa_ci_low", sa.Float(), nullable=True))
    op.add_column("calibration_verdicts", sa.Column("kappa_ci_high", sa.Float(), nullable=True))
    op.create_table(
        "judge_lineage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("system_id", sa.Integer(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_judge_lineage_grader_id_graders",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["system_id"], ["systems.id"], name="fk_judge_lineage_system_id_systems",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_judge_lineage"),
        sa.UniqueConstraint("grader_id", "system_id", name="uq_judge_lineage_grader_id_system_id"),
    )
    op.create_table(
        "judge_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("batch", sa.String(128), server_default="", nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=False),
        sa.Column("template_sha256", sa.String(64), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_judge_checks_grader_id_graders",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_judge_checks"),
    )
    op.create_index("ix_judge_checks_grader_id", "judge_checks", ["grader_id"])


def downgrade() -> None:
    op.drop_index("ix_judge_checks_grader_id", table_name="judge_checks")
    op.drop_table("judge_checks")
    op.drop_table("judge_lineage")
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, columns in _COLUMNS.items():
        for column in reversed(columns):
            if sqlite:  # SQLite >= 3.35 drops a plain column in place (no table copy that would trip foreign keys)
                op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
            else:
                op.drop_column(table, column)
