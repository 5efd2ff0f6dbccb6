"""The ``xdist_group`` marks reach pytest-xdist's scheduler (tests/conftest.py): under ``--dist loadgroup``
(``make test``) a marked test's id ends with ``@group``, the name the scheduler keeps a group together by."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xdist_group("xdist-group-check")


def test_a_marked_test_carries_its_group_under_loadgroup(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not a worker of --dist loadgroup")
    assert request.node.nodeid.endswith("@xdist-group-check"), request.node.nodeid
