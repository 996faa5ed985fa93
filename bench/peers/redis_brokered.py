"""What the peers brokered by Redis (Celery, RQ, Huey) share: their broker is the sink's
Redis database, cleared by deleting their keys; their clients are synchronous, so they
submit and close in a thread; their ETAs are timezone-aware UTC datetimes; their worker
commands are the console scripts installed beside this interpreter."""

from __future__ import annotations

import asyncio
import os
import sys
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path

from bench.peers.shared import InSinkRedis, eta

CORES = os.cpu_count() or 1


def script(name: str) -> str:
    """A console script of this environment (`celery`, `rq`, `huey_consumer`)."""
    return str(Path(sys.executable).parent / name)


class RedisBrokered(InSinkRedis, ABC):
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

    async def submit(self, run: str, indexes: range, due_ms: int | None) -> None:
        await asyncio.to_thread(self.enqueue, run, indexes, eta(due_ms))

    async def close(self) -> None:
        await asyncio.to_thread(self.release)
