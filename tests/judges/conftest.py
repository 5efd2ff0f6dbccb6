"""Fixtures of the judge tests: the world (judge_world.py) and the fake server (fake_llm_server.py).

The world is built once per backend and process (:func:`world_templates`) and copied into each test's
own database (judge_world.copied_world; issue 44: building it took 1-3 s a test, over a hundred tests):
same rows, same ids, the test's own fresh server secrets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm_server import FakeLLM, serving
from judge_world import World, copied_world


@pytest.fixture(scope="session")
def world_templates(tmp_path_factory) -> Iterator[dict[tuple[str, str | None], tuple[Any, World]]]:
    """(backend, leave_open) -> (a database holding that world, the world), filled on first use (a
    tests/conftest.py ``Database``, made as the ``db`` fixture's type: that module is not importable here)."""
    built: dict[tuple[str, str | None], tuple[Any, World]] = {}
    yield built
    for database, _world in built.values():
        database.drop()


@pytest.fixture
def world(db, world_templates, tmp_path_factory) -> World:
    return copied_world(db, world_templates, tmp_path_factory)


@pytest.fixture
def fake(world) -> Iterator[FakeLLM]:
    with serving(FakeLLM(truth=world.truth, query_type=world.qtype)) as server:
        yield server
