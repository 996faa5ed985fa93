"""The SQLite store's plumbing: its two connections (one writer, one reader), opening
and closing, and the store's clock. The roles (`tasks`, `dispatch`, `schedules`,
`cluster`) build on it.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import time
from typing import Any

from tickwheel.outage import Outage
from tickwheel.storage.base import Page
from tickwheel.storage.limit_names import LimitNames
from tickwheel.storage.sqlite.checkpoints import Checkpoints
from tickwheel.storage.sqlite.connection import Connection, migrate
from tickwheel.storage.sqlite.holder import HolderLock
from tickwheel.storage.sqlite.queries import DB_NOW_MS, NEVER, q

log = logging.getLogger(__name__)


def read_now(db: sqlite3.Connection, name: str) -> list[Any]:
    """A query of what is alive by the database's clock (its `:now`)."""
    now = db.execute(f"SELECT {DB_NOW_MS}").fetchone()[0]
    return db.execute(q(name), {"now": now}).fetchall()


def first_seq_created(db: sqlite3.Connection, at_ms: int | None) -> int | None:
    if at_ms is None:
        return None
    return int(db.execute(q("first_seq_created"), {"at": at_ms}).fetchone()[0])


def init_cluster(db: sqlite3.Connection, *, partitions: int) -> int:
    """The file's partition count: `partitions` if the file is new."""
    row = db.execute("SELECT value FROM cluster WHERE key = 'partitions'").fetchone()
    if row:
        return int(row[0])
    db.execute("INSERT INTO cluster (key, value) VALUES ('partitions', ?)", (str(partitions),))
    db.execute("INSERT INTO cluster (key, value) VALUES ('mark', '0')")
    db.executemany(
        "INSERT INTO partition_leases (partition) VALUES (?)", [(p,) for p in range(partitions)]
    )
    return partitions


def below(before: Page | None) -> dict[str, Any]:
    """The bound of a newest-first page by (created time, id)."""
    if before is None:
        return {"before_created": NEVER, "before_id": ""}
    return {"before_created": before.created_ms, "before_id": before.key}


class SqliteBase:
    """What every role of the store shares: the file's connections."""

    def __init__(
        self,
        path: str,
        *,
        partitions: int = 16,
        health: Outage | None = None,
        writer_process: bool = False,
    ) -> None:
        """`health`: where the store's failures and answers are told (its own if None);
        `writer_process`: the writer's connection in a process of its own
        (`writer_process.py`), as `tickwheel up` runs it, or on a thread."""
        self.path = path
        self.health = health or Outage("the store", log)
        self._wanted_partitions = partitions
        self._writer = Connection(
            path, name="writer", health=self.health, own_process=writer_process
        )
        self._reader = Connection(path, name="reader", health=self.health)
        self._checkpoints = Checkpoints(path)
        self._partitions = partitions
        self._holder = HolderLock(path)
        self._told_held = False
        self._limit_names = LimitNames(self._limited_names)

    async def open(self) -> None:
        try:
            await self._writer.open()
            await self._writer.run(migrate)
            self._partitions = await self._writer.transaction(
                functools.partial(init_cluster, partitions=self._wanted_partitions)
            )
            await self._reader.open()
            await self._checkpoints.start()
        except BaseException:
            await self.close()  # the writer's process, if it started, ends with it
            raise

    def interrupt(self) -> None:
        self._writer.interrupt()
        self._reader.interrupt()

    async def close(self) -> None:
        await self._checkpoints.stop()
        await self._reader.close()
        await self._writer.close()
        self._holder.release()

    async def _limited_names(self) -> list[tuple[str, str]]:
        rows = await self._reader.run(lambda db: db.execute(q("limited_names")).fetchall())
        return [(r[0], r[1]) for r in rows]

    async def partitions(self) -> int:
        return self._partitions

    async def now_ms(self) -> int:
        return time.time_ns() // 1_000_000  # the file is on this host: its clock is ours
