"""Opens the metrics store that matches the ready queue: Redis, or this process."""

from __future__ import annotations

from tickwheel.extras import REDIS, require
from tickwheel.metrics.base import MetricsStore
from tickwheel.metrics.recorder import Recorder


def open_metrics(recorder: Recorder, redis_url: str | None, *, prefix: str) -> MetricsStore:
    if not redis_url:
        from tickwheel.metrics.memory import MemoryMetrics

        return MemoryMetrics(recorder)
    require(REDIS)
    from tickwheel.metrics.redis import RedisMetrics

    return RedisMetrics.from_url(recorder, redis_url, prefix=prefix)
