"""The SQLite writer's commits: transactions asked for while its thread is busy commit
together, each work still undone alone when it raises; the WAL is checkpointed off the
writer's thread."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tickwheel.errors import StoreUnavailable
from tickwheel.outage import Outage
from tickwheel.storage.sqlite.checkpoints import INTERVAL_SECONDS, Checkpoints
from tickwheel.storage.sqlite.connection import Connection

log = logging.getLogger(__name__)
Work = Callable[[sqlite3.Connection], Any]


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[Connection]:
    connection = Connection(str(tmp_path / "store.db"), name="writer", health=Outage("t", log))
    await connection.open()
    await connection.transaction(lambda db: db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)"))
    yield connection
    await connection.close()


def rows(path: Path) -> list[int]:
    """What another connection sees committed."""
    with sqlite3.connect(path) as db:
        return [r[0] for r in db.execute("SELECT n FROM t ORDER BY n")]


def insert(n: int, then: Callable[[sqlite3.Connection], Any] = lambda db: None) -> Work:
    def work(db: sqlite3.Connection) -> Any:
        db.execute("INSERT INTO t VALUES (?)", (n,))
        return then(db)

    return work


async def while_busy(writer: Connection, works: list[Work]) -> list[Any]:
    """Ask for `works` while the writer's thread is held by a first transaction; the
    outcome of each (its value or what it raised)."""
    release = threading.Event()
    first = asyncio.create_task(writer.transaction(insert(0, lambda db: release.wait(5))))
    await asyncio.sleep(0.05)  # the first is on the thread
    asked = [asyncio.create_task(writer.transaction(work)) for work in works]
    await asyncio.sleep(0.05)  # every one is waiting for the thread
    release.set()
    await first
    return await asyncio.gather(*asked, return_exceptions=True)


async def test_works_asked_while_the_thread_is_busy_share_one_commit(
    writer: Connection, tmp_path: Path
) -> None:
    path = tmp_path / "store.db"
    # Each work reports what another connection sees: nothing of its group until the
    # group's one commit.
    seen = await while_busy(writer, [insert(n, lambda db: rows(path)) for n in range(1, 11)])
    assert seen == [[0]] * 10
    assert rows(path) == list(range(11))


async def test_a_work_that_raises_undoes_only_its_own_writes(
    writer: Connection, tmp_path: Path
) -> None:
    def fails(db: sqlite3.Connection) -> None:
        raise ValueError("this work's own fault")

    duplicate = insert(1)  # the primary key's second 1: an integrity error
    outcomes = await while_busy(writer, [insert(1), insert(2, fails), duplicate, insert(3)])
    assert outcomes[0] is None and outcomes[3] is None
    assert isinstance(outcomes[1], ValueError) and isinstance(outcomes[2], sqlite3.IntegrityError)
    assert rows(tmp_path / "store.db") == [0, 1, 3]


async def test_a_failure_of_the_store_fails_the_whole_group(
    writer: Connection, tmp_path: Path
) -> None:
    def operational(db: sqlite3.Connection) -> None:
        db.execute("SELECT * FROM no_such_table")

    outcomes = await while_busy(writer, [insert(1), insert(2, operational), insert(3)])
    assert all(isinstance(o, StoreUnavailable) for o in outcomes)
    assert rows(tmp_path / "store.db") == [0]
    assert await writer.transaction(insert(4)) is None  # the writer goes on
    assert rows(tmp_path / "store.db") == [0, 4]


async def test_the_wal_is_checkpointed_off_the_writers_thread(
    writer: Connection, tmp_path: Path
) -> None:
    path = tmp_path / "store.db"
    pad = "x" * 3000  # about a page a row
    await writer.transaction(lambda db: db.execute("CREATE TABLE pad (p TEXT)"))
    await writer.transaction(
        lambda db: db.executemany("INSERT INTO pad VALUES (?)", [(pad,)] * 2000)
    )
    assert path.stat().st_size < 1_000_000  # all in the WAL: the writer did not checkpoint
    checkpoints = Checkpoints(str(path))
    await checkpoints.start()
    try:
        for _ in range(round(10 / INTERVAL_SECONDS)):
            if path.stat().st_size > 2000 * 3000:
                break
            await asyncio.sleep(INTERVAL_SECONDS)
    finally:
        await checkpoints.stop()
    assert path.stat().st_size > 2000 * 3000
