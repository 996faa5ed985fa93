"""Where every system's task records that it ran: one Redis list per run, one
"index start_ms" entry per execution. The same record for every system, Tickwheel
included, so each is checked (every index ran, none twice) and timed (start minus due)
alike.

The worker side writes through `recorder.record`, the task's whole body; the harness
reads the lists back with `Sink`.
"""

from __future__ import annotations

import os

import redis.asyncio

SINK_URL_ENV = "TICKWHEEL_BENCH_SINK_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/2"


def sink_url() -> str:
    return os.environ.get(SINK_URL_ENV, DEFAULT_URL)


def key(run: str) -> str:
    return f"tickwheel-bench:ran:{run}"


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
