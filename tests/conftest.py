"""Settings shared by every test."""

from __future__ import annotations

import pytest

from dpaudit._core import heartbeat


@pytest.fixture(autouse=True)
def _no_heartbeat_unless_tested(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """A heartbeat line arrives after some seconds of quiet, so on a loaded machine it could
    slip between the lines a test expects; only the tests of the heartbeat keep it."""
    if request.node.get_closest_marker("heartbeat") is None:
        monkeypatch.setattr(heartbeat, "HEARTBEAT_SECONDS", 3600.0)
