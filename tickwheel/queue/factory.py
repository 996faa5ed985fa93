"""Opens the ready queue named by a URL: Redis, or none for one in this process."""

from __future__ import annotations

from tickwheel.queue.base import ReadyQueue


def open_queue(redis_url: str | None, *, prefix: str = "tickwheel:") -> ReadyQueue:
    if not redis_url:
        from tickwheel.queue.memory import MemoryReadyQueue

        return MemoryReadyQueue()
    from tickwheel.queue.redis import RedisReadyQueue

    return RedisReadyQueue.from_url(redis_url, prefix=prefix)
