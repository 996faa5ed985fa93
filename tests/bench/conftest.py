"""The benchmarks' tests keep their Redis traffic on a private Redis: the peers' brokers
(Celery, RQ, Huey, Dramatiq, arq, SAQ) use fixed key names that the harness deletes
before each run, so on a shared server they would delete whatever another user keeps
under those names."""

from __future__ import annotations

import pytest
from servers import PrivateRedis

from bench.peers.sink import SINK_URL_ENV

BENCH_REDIS_URL_ENV = "TICKWHEEL_BENCH_REDIS_URL"


@pytest.fixture(autouse=True)
def redis_of_its_own(monkeypatch: pytest.MonkeyPatch, private_redis: PrivateRedis) -> None:
    """The sink, the brokers that share its database, and `tickwheel bench`'s own queue,
    on the session's private Redis."""
    monkeypatch.setenv(SINK_URL_ENV, private_redis.url)
    monkeypatch.setenv(BENCH_REDIS_URL_ENV, private_redis.url)
