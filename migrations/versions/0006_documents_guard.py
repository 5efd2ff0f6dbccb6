"""documents guard (PostgreSQL): a delete of documents, or a change of their ids, waits for the bulk imports
in flight that name documents

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

A statement trigger on ``documents`` takes an exclusive transaction-level advisory lock keyed by the table
(:data:`ndcg_labeling.db.references.GUARD_KEY` in the high 32 bits, the table's oid in the low ones);
an import takes the same lock shared (:func:`ndcg_labeling.db.references.hold_guarded`) before it reads
or checks documents, instead of locking every document row ``FOR KEY SHARE`` (1.2M rows: 0.43 s of the
server's time and a WAL record each). Imports do not wait for each other, nor for inserts or updates of
other columns; a delete that waits makes the imports that start after it wait behind it. SQLite needs
none: its writers run one at a time (``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# The same key as ndcg_labeling.db.references.GUARD_KEY (tests/db/test_guard.py holds them together).
GUARD_KEY = 1313096519  # b"NDCG"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"""CREATE FUNCTION ndcg_labeling_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(({GUARD_KEY}::bigint << 32) | TG_RELID::bigint);
    RETURN NULL;
END $$""")
    op.execute("CREATE TRIGGER documents_guard BEFORE DELETE OR TRUNCATE OR UPDATE OF id ON documents "
               "FOR EACH STATEMENT EXECUTE FUNCTION ndcg_labeling_guard()")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER documents_guard ON documents")
    op.execute("DROP FUNCTION ndcg_labeling_guard()")
