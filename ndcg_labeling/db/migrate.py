"""Alembic as functions: upgrade, downgrade, current revision, and the at-head check.

The migration scripts live in the top-level ``migrations/`` folder of the repository, which the
wheel ships as the package ``ndcg_labeling.migrations``; so an installed tool can migrate.

Every command checks that the database is at head before it starts (:func:`ensure_at_head`). That
check reads the ``alembic_version`` table with one plain query and compares it with
:data:`HEAD_REVISION`, without importing alembic (about 60 ms of start-up, issue 17); a test keeps
:data:`HEAD_REVISION` equal to the head of the migration scripts. Alembic loads only to migrate.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ndcg_labeling.errors import DatabaseNotAtHead, NdcgLabelingError

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Engine

#: the newest revision in migrations/versions. A new migration changes it (the test
#: tests/db/test_head_revision.py compares it with alembic's head, so the two cannot drift apart).
HEAD_REVISION = "0017"
#: alembic's table of the applied revision (alembic's default name; migrations/env.py keeps it)
VERSION_TABLE = "alembic_version"


def migrations_dir() -> Path:
    return Path(str(resources.files("ndcg_labeling.migrations")))


def _scripts_config() -> Config:
    """An alembic config naming the migration scripts (enough to read them; no database)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    return cfg


def alembic_config(engine: Engine) -> Config:
    cfg = _scripts_config()
    # A literal URL (password included) for env.py when it runs without a connection; '%' escaped
    # because alembic's config is a ConfigParser.
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    cfg.attributes["engine"] = engine
    return cfg


def head_revision(engine: Engine | None = None) -> str | None:
    """The newest revision of the migration scripts, as alembic finds it (no database needed; the
    commands use :data:`HEAD_REVISION`, which a test keeps equal to this)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_scripts_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None: no schema), read from ``alembic_version`` with plain
    SQL as alembic's ``MigrationContext.get_current_revision`` reads it (a test compares the two)."""
    from sqlalchemy import inspect, text

    from ndcg_labeling.db.session import read_only

    with read_only(engine).connect() as conn:  # every command reads it first: no wait for a writer
        if not inspect(conn).has_table(VERSION_TABLE):
            return None
        revisions = [str(r) for r in conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars()]
    if len(revisions) > 1:  # branches: this project's migrations are one line, so never made by the tool
        raise NdcgLabelingError(f"the database is at several revisions at once ({', '.join(sorted(revisions))}); "
                                f"the migrations of this tool are one line")
    return revisions[0] if revisions else None


def _alembic_error(action: str, revision: str, exc: Exception) -> NdcgLabelingError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return NdcgLabelingError(f"cannot {action} to {revision[:80]!r}: {first[:300]}")


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to ``revision`` (each migration in its own transaction)."""
    _migrate("upgrade", engine, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Downgrade the schema to ``revision`` (``base`` removes every table)."""
    _migrate("downgrade", engine, revision)


def _migrate(action: str, engine: Engine, revision: str) -> None:
    from alembic import command

    try:
        getattr(command, action)(alembic_config(engine), revision)
    except Exception as exc:  # alembic raises CommandError / ResolutionError for unknown revisions
        if exc.__class__.__module__.startswith("alembic"):
            raise _alembic_error(action, revision, exc) from exc
        raise


def tables_at(revision: str | None) -> dict[str, int]:
    """The tables of a fresh database at ``revision`` and the rows the migrations themselves put there
    (the scales), found by migrating a scratch in-memory SQLite database (the migrations create the
    same tables on every backend)."""
    from sqlalchemy import create_engine, func, inspect, select, table

    scratch = create_engine("sqlite://")
    try:
        if revision not in (None, "base"):
            upgrade(scratch, revision)
        with scratch.connect() as conn:
            names = set(inspect(conn).get_table_names()) - {"alembic_version"}
            return {n: int(conn.execute(select(func.count()).select_from(table(n))).scalar_one()) for n in names}
    finally:
        scratch.dispose()


def _resolve_relative(engine: Engine, revision: str) -> str:
    """``-N`` as the revision N steps below the current one (``base`` below the first)."""
    if not (revision.startswith("-") and revision[1:].isdigit()):
        return revision
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config(engine))
    rev: str | None = current_revision(engine)
    for _ in range(int(revision[1:])):
        down = script.get_revision(rev).down_revision if rev else None
        rev = down if isinstance(down, str) or down is None else down[0]
    return rev or "base"


def tables_losing_data(engine: Engine, revision: str) -> dict[str, int]:
    """Tables that a downgrade to ``revision`` would drop while they hold rows of the user's (more
    rows than the migrations seed): name -> row count."""
    from sqlalchemy import func, inspect, select, table

    with engine.connect() as conn:
        current = set(inspect(conn).get_table_names()) - {"alembic_version"}
    try:
        target = tables_at(_resolve_relative(engine, revision))
        seeded = tables_at(current_revision(engine))
    except NdcgLabelingError:
        return {}  # an unknown revision: the downgrade itself reports it
    out: dict[str, int] = {}
    with engine.connect() as conn:
        for name in sorted(current - set(target)):
            n = int(conn.execute(select(func.count()).select_from(table(name))).scalar_one())
            if n > seeded.get(name, 0):
                out[name] = n
    return out


def ensure_at_head(engine: Engine) -> None:
    """Raise :class:`DatabaseNotAtHead` unless the schema is at the newest revision."""
    current = current_revision(engine)
    head = HEAD_REVISION
    if current != head:
        shown = current or "empty (no schema)"
        raise DatabaseNotAtHead(
            f"the database {engine.url.render_as_string(hide_password=True)} is at revision {shown}, "
            f"not at head {head}; run `ndcg-labeling db upgrade`"
        )
