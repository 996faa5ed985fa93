"""The peers' tests run against the tests' Redis database, never a benchmark's."""

from __future__ import annotations

import pytest
import services

from tickwheel.bench.peers.sink import SINK_URL_ENV


@pytest.fixture(autouse=True)
def sink_in_test_db(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sink, and the Redis brokers that share its database, on the tests' Redis."""
    monkeypatch.setenv(SINK_URL_ENV, services.require("redis"))
