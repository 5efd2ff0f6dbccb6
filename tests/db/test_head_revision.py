"""The at-head check reads ``alembic_version`` with plain SQL against ``migrate.HEAD_REVISION``, so a
command need not import alembic (issue 17). These tests keep both equal to what alembic says."""

from __future__ import annotations

import pytest
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from ndcg_labeling.db import migrate
from ndcg_labeling.errors import DatabaseNotAtHead, NdcgLabelingError


def alembic_current(engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def test_head_constant_is_the_head_of_the_migration_scripts():
    # A new migration must move HEAD_REVISION too; this fails until it does.
    scripts = ScriptDirectory(str(migrate.migrations_dir()))
    assert scripts.get_heads() == [migrate.HEAD_REVISION]
    assert migrate.head_revision() == migrate.HEAD_REVISION


def test_current_revision_reads_what_alembic_reads(empty_db):
    engine = empty_db.engine
    assert migrate.current_revision(engine) is None
    assert alembic_current(engine) is None
    revisions = [s.revision for s in ScriptDirectory(str(migrate.migrations_dir())).walk_revisions()][::-1]
    for revision in revisions:
        migrate.upgrade(engine, revision)
        assert migrate.current_revision(engine) == alembic_current(engine) == revision
    migrate.ensure_at_head(engine)
    migrate.downgrade(engine, revisions[-2])
    with pytest.raises(DatabaseNotAtHead, match=f"is at revision {revisions[-2]}, not at head {revisions[-1]}"):
        migrate.ensure_at_head(engine)
    migrate.downgrade(engine, "base")
    assert migrate.current_revision(engine) is None
    assert alembic_current(engine) is None
    with pytest.raises(DatabaseNotAtHead, match="is at revision empty"):
        migrate.ensure_at_head(engine)


def test_two_revisions_at_once_is_an_error(empty_db):
    engine = empty_db.engine
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0004')"))
    with pytest.raises(NdcgLabelingError, match="several revisions at once"):
        migrate.current_revision(engine)
