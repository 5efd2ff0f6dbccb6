"""Alembic environment. The URL comes from the engine the tool passes in (``cfg.attributes``), else
from ``sqlalchemy.url``, else from the tool's one source (``--db`` / ``NDCG_LABELING_DB`` / default)."""

from __future__ import annotations

from alembic import context

from ndcg_labeling.db import models  # noqa: F401  (registers the tables on Base.metadata)
from ndcg_labeling.db.base import Base
from ndcg_labeling.db.session import make_engine

config = context.config
target_metadata = Base.metadata


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = config.attributes.get("engine") or make_engine(config.get_main_option("sqlalchemy.url"))
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            transaction_per_migration=True,
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
