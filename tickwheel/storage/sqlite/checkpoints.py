"""The WAL's checkpoints, off the writer's thread.

By default SQLite checkpoints inside the COMMIT that takes the WAL past 1,000 pages:
that commit copies the pages into the database file and syncs it while every other
write waits behind it. Here a loop runs a PASSIVE checkpoint every `INTERVAL_SECONDS`
on a connection and thread of its own: it copies what no reader still needs without
taking the write lock, so writes go on meanwhile. A writer still checkpoints itself
past `session.BACKSTOP_PAGES`, should this loop fall behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3

from tickwheel.errors import StoreUnavailable
from tickwheel.outage import Outage
from tickwheel.storage.sqlite.connection import Connection

INTERVAL_SECONDS = 0.5

log = logging.getLogger(__name__)


class Checkpoints:
    """Checkpoints a database file's WAL every `INTERVAL_SECONDS` while started."""

    def __init__(self, path: str) -> None:
        self._connection = Connection(path, name="checkpoints", health=Outage("checkpoints", log))
        self._loop: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._connection.open()
        self._loop = asyncio.create_task(self._checkpoint_every_interval())

    async def stop(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
            self._loop = None
        await self._connection.close()

    async def _checkpoint_every_interval(self) -> None:
        while True:
            await asyncio.sleep(INTERVAL_SECONDS)
            with contextlib.suppress(StoreUnavailable):  # its outage logs it; try again
                await self._connection.run(checkpoint)


def checkpoint(db: sqlite3.Connection) -> tuple[int, int, int]:
    """A PASSIVE checkpoint: (busy, frames in the WAL, frames checkpointed)."""
    busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return int(busy), int(frames), int(copied)
