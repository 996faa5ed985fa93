"""Opens the ready queue named by a URL: Redis, or none for one in this process."""

from __future__ import annotations

from collections.abc import Callable

from tickwheel.extras import REDIS, require
from tickwheel.queue.base import DEFAULT_STAGE_AHEAD_MS, ReadyQueue


def open_queue(
    redis_url: str | None, *, prefix: str = "tickwheel:", now_ms: Callable[[], int]
) -> ReadyQueue:
    """`now_ms` is the cluster's clock, by which the queue shows staged tasks."""
    if not redis_url:
        from tickwheel.queue.memory import MemoryReadyQueue

        return MemoryReadyQueue(stage_ahead_ms=DEFAULT_STAGE_AHEAD_MS, now_ms=now_ms)
    require(REDIS)
    from tickwheel.queue.redis import RedisReadyQueue

    return RedisReadyQueue.from_url(redis_url, prefix=prefix, now_ms=now_ms)
