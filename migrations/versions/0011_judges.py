"""LLM judges that run: the cache of responses, runs with token usage and cost, judgment provenance,
stored calibration verdicts, and the judge that filled a consensus label

Revision ID: 0011
Revises: 0006
Create Date: 2026-12-04

``judge_responses`` is the cache (one final answer per request key); each answer is stored with its
judgment in a transaction of its own, so an interrupted run loses nothing already answered.
``calibration_verdicts`` keeps every verdict of ``calibrate --judge``; the newest per (judge, query
type) gates ``consensus --judge-fills``. ``consensus_labels.filled_by`` names the judge whose grades
filled a label's item.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def _counts() -> list[sa.Column]:
    names = ("n_items", "n_cached", "n_sent", "n_graded", "n_skipped", "prompt_tokens", "completion_tokens")
    return [sa.Column(n, sa.Integer(), server_default="0", nullable=False) for n in names]


def upgrade() -> None:
    op.add_column("consensus_labels", sa.Column("filled_by", sa.String(128), nullable=True))
    op.create_table(
        "judge_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=False),
        sa.Column("template_name", sa.String(256), nullable=False),
        sa.Column("template_version", sa.String(64), nullable=False),
        sa.Column("template_sha256", sa.String(64), nullable=False),
        sa.Column("temperature", sa.Float(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=True),
        *_counts(),
        sa.Column("price_in", sa.Float(), nullable=True),
        sa.Column("price_out", sa.Float(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["batch_id"], ["grading_batches.id"], name="fk_judge_runs_batch_id_grading_batches",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_judge_runs_grader_id_graders"),
        sa.PrimaryKeyConstraint("id", name="pk_judge_runs"),
    )
    op.create_index("ix_judge_runs_batch_id", "judge_runs", ["batch_id"])
    op.create_table(
        "judge_responses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cache_key", sa.String(64), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=False),
        sa.Column("prompt_sha256", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=True),
        sa.Column("raw", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("completion_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["judge_runs.id"], name="fk_judge_responses_run_id_judge_runs",
                                ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name="pk_judge_responses"),
        sa.UniqueConstraint("cache_key", name="uq_judge_responses_cache_key"),
    )
    op.create_index("ix_judge_responses_run_id", "judge_responses", ["run_id"])
    op.create_table(
        "judgment_provenance",
        sa.Column("judgment_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("response_id", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("prompt_sha256", sa.String(64), nullable=False),
        sa.Column("template_version", sa.String(64), nullable=False),
        sa.Column("template_sha256", sa.String(64), nullable=False),
        sa.Column("temperature", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["judgment_id"], ["judgments.id"], name="fk_judgment_provenance_judgment_id_judgments",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["judge_runs.id"], name="fk_judgment_provenance_run_id_judge_runs",
                                ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["response_id"], ["judge_responses.id"],
                                name="fk_judgment_provenance_response_id_judge_responses", ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("judgment_id", name="pk_judgment_provenance"),
    )
    op.create_index("ix_judgment_provenance_run_id", "judgment_provenance", ["run_id"])
    op.create_table(
        "calibration_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("batch", sa.String(128), server_default="", nullable=False),
        sa.Column("scope", sa.String(128), nullable=False),
        sa.Column("agrees", sa.Boolean(), nullable=False),
        sa.Column("kappa", sa.Float(), nullable=True),
        sa.Column("tau", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["grader_id"], ["graders.id"], name="fk_calibration_verdicts_grader_id_graders",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_calibration_verdicts"),
    )
    op.create_index("ix_calibration_verdicts_grader_id", "calibration_verdicts", ["grader_id"])


def downgrade() -> None:
    op.drop_table("calibration_verdicts")
    op.drop_table("judgment_provenance")
    op.drop_table("judge_responses")
    op.drop_table("judge_runs")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE consensus_labels DROP COLUMN filled_by")  # in place, as in 0004/0005
    else:
        op.drop_column("consensus_labels", "filled_by")
