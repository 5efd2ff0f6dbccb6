"""Alembic as functions: upgrade, downgrade, current revision, and the at-head check.

The migration scripts live in the top-level ``migrations/`` folder of the repository, which the
wheel ships as the package ``ndcg_labeling.migrations``; so an installed tool can migrate.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from ndcg_labeling.errors import DatabaseNotAtHead, NdcgLabelingError


def migrations_dir() -> Path:
    return Path(str(resources.files("ndcg_labeling.migrations")))


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    # A literal URL (password included) for env.py when it runs without a connection; '%' escaped
    # because alembic's config is a ConfigParser.
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    cfg.attributes["engine"] = engine
    return cfg


def head_revision(engine: Engine) -> str | None:
    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to ``revision`` (each migration in its own transaction)."""
    command.upgrade(alembic_config(engine), revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Downgrade the schema to ``revision`` (``base`` removes every table)."""
    try:
        command.downgrade(alembic_config(engine), revision)
    except Exception as exc:  # alembic raises CommandError / ResolutionError for unknown revisions
        if exc.__class__.__module__.startswith("alembic"):
            raise NdcgLabelingError(f"cannot downgrade to {revision!r}: {exc}") from exc
        raise


def ensure_at_head(engine: Engine) -> None:
    """Raise :class:`DatabaseNotAtHead` unless the schema is at the newest revision."""
    current = current_revision(engine)
    head = head_revision(engine)
    if current != head:
        shown = current or "empty (no schema)"
        raise DatabaseNotAtHead(
            f"the database {engine.url.render_as_string(hide_password=True)} is at revision {shown}, "
            f"not at head {head}; run `ndcg-labeling db upgrade`"
        )
