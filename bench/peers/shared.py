"""What several peers do alike: one worker process per core for the single-process ones,
a broker in the sink's Redis database, and an ETA as a datetime."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime

import redis.asyncio

from bench.peers.sink import sink_url


def per_core(*arguments: str) -> list[list[str]]:
    """`python -m <arguments>` once per core, for a peer whose worker is one process."""
    return [[sys.executable, "-m", *arguments] for _ in range(os.cpu_count() or 1)]


class InSinkRedis:
    """A peer whose broker is the sink's Redis database (the sink URL is all its workers
    need), reset by deleting its broker's keys (`broker_keys`, glob patterns), never the
    database's others: the harness resets before it records a run. Its harness side
    submits one chunk at a time, and its broker is up before its workers start."""

    in_flight = 1
    broker_keys: tuple[str, ...]

    def worker_env(self) -> dict[str, str]:
        return {}

    async def ready(self) -> bool:
        return True

    async def reset(self) -> None:
        client = redis.asyncio.Redis.from_url(sink_url())
        try:
            for pattern in self.broker_keys:
                async for found in client.scan_iter(match=pattern, count=1000):
                    await client.delete(found)
        finally:
            await client.aclose()


def eta(due_ms: int | None) -> datetime | None:
    """`due_ms` (epoch milliseconds) as an aware datetime; None for "now"."""
    return None if due_ms is None else datetime.fromtimestamp(due_ms / 1000, UTC)
