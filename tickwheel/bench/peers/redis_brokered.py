"""What the peers brokered by Redis (Celery, RQ, Huey) share: their broker is the sink's
Redis database, so clearing it is one FLUSHDB; their clients are synchronous, so they
submit and close in a thread; their ETAs are timezone-aware UTC datetimes; their worker
commands are the console scripts installed beside this interpreter."""

from __future__ import annotations

import asyncio
import os
import sys
from abc import ABC, abstractmethod
from datetime import UTC, datetime
from pathlib import Path

import redis.asyncio

from tickwheel.bench.peers.sink import sink_url

CORES = os.cpu_count() or 1


def script(name: str) -> str:
    """A console script of this environment (`celery`, `rq`, `huey_consumer`)."""
    return str(Path(sys.executable).parent / name)


class RedisBrokered(ABC):
    """A `Peer` whose broker is the sink's database, driven by a synchronous client: a
    subclass says how to enqueue a chunk and how to let go of its connections."""

    name: str
    distribution: str

    @abstractmethod
    def worker_commands(self) -> list[list[str]]: ...

    @abstractmethod
    def enqueue(self, run: str, indexes: range, eta: datetime | None) -> None:
        """One task per index, due now when `eta` is None (runs in a thread)."""

    @abstractmethod
    def release(self) -> None:
        """Close the client's connections (runs in a thread)."""

    def worker_env(self) -> dict[str, str]:
        return {}  # the sink's URL, which the harness passes, is the broker's

    async def reset(self) -> None:
        client = redis.asyncio.Redis.from_url(sink_url())
        try:
            await client.flushdb()
        finally:
            await client.aclose()

    async def submit(self, run: str, indexes: range, due_ms: int | None) -> None:
        eta = None if due_ms is None else datetime.fromtimestamp(due_ms / 1000, UTC)
        await asyncio.to_thread(self.enqueue, run, indexes, eta)

    async def close(self) -> None:
        await asyncio.to_thread(self.release)
