"""Fixtures of the judge tests: the world (judge_world.py) and the fake server (fake_llm_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_llm_server import FakeLLM, serving
from judge_world import World, build_world


@pytest.fixture
def world(db, tmp_path) -> World:
    return build_world(db, tmp_path)


@pytest.fixture
def fake(world) -> Iterator[FakeLLM]:
    with serving(FakeLLM(truth=world.truth, query_type=world.qtype)) as server:
        yield server
