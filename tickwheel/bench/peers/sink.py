"""Where a peer's task records that it ran: one Redis list per run, one "index start_ms"
entry per execution. The same record for every peer, so each is checked (every index
ran, none twice) and timed (start minus due) alike.

The worker side calls `record` (sync) or `arecord` (async) as the task's whole body; the
harness reads the list back with `Sink`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable
from functools import cache
from typing import cast

import redis
import redis.asyncio

SINK_URL_ENV = "TICKWHEEL_BENCH_SINK_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/2"


def sink_url() -> str:
    return os.environ.get(SINK_URL_ENV, DEFAULT_URL)


def key(run: str) -> str:
    return f"tickwheel-bench:ran:{run}"


@cache
def _client() -> redis.Redis:
    return redis.Redis.from_url(sink_url())


def record(run: str, index: int) -> None:
    """Record that task `index` of `run` started now (called from inside a peer's task)."""
    _client().rpush(key(run), f"{index} {time.time() * 1000:.3f}")


_async_clients: dict[int, redis.asyncio.Redis] = {}


async def arecord(run: str, index: int) -> None:
    """`record` for a task that runs on an event loop (one client per process)."""
    client = _async_clients.get(os.getpid())
    if client is None:
        client = _async_clients[os.getpid()] = redis.asyncio.Redis.from_url(sink_url())
    pushed = client.rpush(key(run), f"{index} {time.time() * 1000:.3f}")
    await cast("Awaitable[int]", pushed)  # redis-py 5 types it as maybe-not-awaitable


class Sink:
    """The harness's view of the records."""

    def __init__(self, url: str | None = None) -> None:
        self.redis = redis.asyncio.Redis.from_url(url or sink_url())

    async def count(self, run: str) -> int:
        return int(await self.redis.llen(key(run)))

    async def starts(self, run: str) -> list[tuple[int, float]]:
        """(index, start_ms) of every execution recorded, repeats included."""
        found: list[tuple[int, float]] = []
        total = await self.count(run)
        for offset in range(0, total, 50_000):
            for entry in await self.redis.lrange(key(run), offset, offset + 49_999):
                index, at = entry.split()
                found.append((int(index), float(at)))
        return found

    async def forget(self, run: str) -> None:
        await self.redis.delete(key(run))

    async def aclose(self) -> None:
        await self.redis.aclose()
