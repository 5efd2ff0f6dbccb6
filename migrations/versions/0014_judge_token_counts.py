"""64-bit token counts of LLM judge runs: ``judge_runs.prompt_tokens`` / ``completion_tokens`` and
``judge_responses.prompt_tokens`` / ``completion_tokens`` become BIGINT on PostgreSQL

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05

A run's usage is the sum over its answers; at 0011 it was stored in a 32-bit INTEGER, so a run totalling
more than 2,147,483,647 prompt tokens (ten million items of 215 tokens) failed at its end, when the sums
were written. The other counts of a run (items, from the cache, sent, graded, skipped) count batch items,
whose ids are 32-bit themselves, and the cost is a float: they stay as they are.

SQLite is left alone: its INTEGER already holds any signed 64-bit value, whatever the declared type, and
changing the declared type would mean a table copy of ``judge_runs`` whose drop fires the ``ON DELETE SET
NULL`` of ``judge_responses.run_id`` and ``judgment_provenance.run_id`` (the trap 0013 avoids); the models
say ``BigInteger().with_variant(Integer(), "sqlite")``, as 0012's event ids do.

The downgrade refuses, changing nothing, while a count above 2,147,483,647 is stored (PostgreSQL would
stop at the first such row with ``integer out of range``; this names the column and the value).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from alembic.util import CommandError

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_COLUMNS = {"judge_runs": ("prompt_tokens", "completion_tokens"),
            "judge_responses": ("prompt_tokens", "completion_tokens")}
_INT32_MAX = 2**31 - 1


def _retype(old: sa.types.TypeEngine[int], new: sa.types.TypeEngine[int]) -> None:
    for table, columns in _COLUMNS.items():
        for column in columns:
            op.alter_column(table, column, type_=new, existing_type=old, existing_nullable=False,
                            existing_server_default="0")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return  # 64-bit already (see the docstring)
    _retype(sa.Integer(), sa.BigInteger())


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        return
    for table, columns in _COLUMNS.items():
        for column in columns:
            largest = bind.execute(sa.text(f"SELECT max({column}) FROM {table}")).scalar()
            if largest is not None and largest > _INT32_MAX:
                raise CommandError(f"{table}.{column} holds {largest:,}, more than the {_INT32_MAX:,} that its "
                                   f"INTEGER holds at revision 0013; nothing was changed")
    _retype(sa.BigInteger(), sa.Integer())
