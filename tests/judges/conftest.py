"""Fixtures of the judge tests: the world (judge_world.py) and the fake server (fake_llm_server.py).

The world is built once per backend and process (:func:`world_templates`) and copied into each test's
own database (issue 44: building it took 1-3 s a test, over a hundred tests): same rows, same ids, the
test's own fresh server secrets; a test that needs another world calls :func:`build_world` itself."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_server import FakeLLM, serving
from judge_world import World, build_world
from sqlalchemy import make_url, text


@pytest.fixture(scope="session")
def world_templates(tmp_path_factory) -> Iterator[dict[str, tuple[Any, World]]]:
    """backend -> (its database holding the default world, that world), filled on first use (a database
    of tests/conftest.py's ``Database``, made as the ``db`` fixture's type: that module is not importable here)."""
    built: dict[str, tuple[Any, World]] = {}
    yield built
    for database, _world in built.values():
        database.drop()


def _copy_rows(source: Any, target: Any) -> None:
    """Every row of ``source`` into ``target`` (both migrated, ``target`` empty), ids and sequences included;
    ``target`` keeps its own server secrets."""
    if target.backend == "sqlite":
        source.engine.dispose()
        target.engine.dispose()
        shutil.copyfile(make_url(source.url).database or "", make_url(target.url).database or "")
        target._new_secrets()
        return
    import ndcg_labeling.db.models  # noqa: F401
    from ndcg_labeling.db.base import Base

    src, dst = source.schema, target.schema
    with target.engine.begin() as conn:
        tables = [t.name for t in Base.metadata.sorted_tables if t.name != "server_secrets"]
        for name in reversed(tables):  # the rows the migrations seed (scales ...): the template has them too
            conn.execute(text(f'DELETE FROM "{dst}"."{name}"'))
        for name in tables:
            conn.execute(text(f'INSERT INTO "{dst}"."{name}" SELECT * FROM "{src}"."{name}"'))
        serials = conn.execute(text(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = :s "
            "AND (column_default LIKE 'nextval%' OR is_identity = 'YES')"), {"s": dst}).all()
        for table_name, column in serials:
            conn.execute(text(
                f"SELECT setval(pg_get_serial_sequence('\"{dst}\".\"{table_name}\"', '{column}'), "
                f'COALESCE(MAX("{column}"), 0) + 1, false) FROM "{dst}"."{table_name}"'))


@pytest.fixture
def world(db, world_templates, tmp_path_factory) -> World:
    if db.backend not in world_templates:
        folder = tmp_path_factory.mktemp(f"world-{db.backend}")
        template = type(db)(db.backend, folder, migrated=True)
        world_templates[db.backend] = (template, build_world(template, folder))
    template, built = world_templates[db.backend]
    _copy_rows(template, db)
    return dataclasses.replace(built, db=db)


@pytest.fixture
def fake(world) -> Iterator[FakeLLM]:
    with serving(FakeLLM(truth=world.truth, query_type=world.qtype)) as server:
        yield server
