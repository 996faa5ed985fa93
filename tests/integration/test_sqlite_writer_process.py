"""The SQLite writer's connection in a process of its own (`writer_process.py`): what
crosses the processes arrives whole, and the child's death or a signal loses nothing
unsaid."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tickwheel.errors import IdempotencyConflict, InvalidRequest, OutcomeUnknown, StoreUnavailable
from tickwheel.outage import Outage
from tickwheel.storage.sqlite.connection import Connection

log = logging.getLogger(__name__)


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[Connection]:
    connection = Connection(
        str(tmp_path / "store.db"), name="writer", health=Outage("t", log), own_process=True
    )
    await connection.open()
    await connection.transaction(lambda db: db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)"))
    yield connection
    await connection.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too: only its parent's wait would clear it.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


async def test_works_run_in_another_process_and_rows_read_by_name_and_position(
    writer: Connection,
) -> None:
    await writer.transaction(lambda db: db.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)]))
    pid = await writer.run(lambda db: os.getpid())
    rows = await writer.run(lambda db: db.execute("SELECT n, n * 10 AS tens FROM t").fetchall())
    assert pid != os.getpid()
    assert [(r["n"], r["tens"], r[0], r[1]) for r in rows] == [(1, 10, 1, 1 * 10), (2, 20, 2, 20)]
    assert [dict(zip(r.keys(), r, strict=True)) for r in rows][1] == {"n": 2, "tens": 20}


async def test_an_error_a_work_raises_reaches_its_caller_whole_and_undoes_its_writes(
    writer: Connection, tmp_path: Path
) -> None:
    def conflict(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO t VALUES (7)")
        raise IdempotencyConflict("key used for another request", "task-1")

    def invalid(db: sqlite3.Connection) -> None:
        raise InvalidRequest("payload", "too large")

    with pytest.raises(IdempotencyConflict) as conflicted:
        await writer.transaction(conflict)
    with pytest.raises(InvalidRequest) as refused:
        await writer.transaction(invalid)
    assert conflicted.value.task_id == "task-1"
    assert (refused.value.field, refused.value.reason) == ("payload", "too large")
    with sqlite3.connect(tmp_path / "store.db") as db:
        assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 0


async def test_a_killed_writer_process_fails_its_call_unknown_and_the_next_starts_it_again(
    writer: Connection, tmp_path: Path
) -> None:
    await writer.transaction(lambda db: db.execute("INSERT INTO t VALUES (1)"))
    pid = await writer.run(lambda db: os.getpid())

    def slow(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO t VALUES (2)")
        time.sleep(5)

    asked = asyncio.create_task(writer.transaction(slow))
    await asyncio.sleep(0.3)  # the child is inside the transaction
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(OutcomeUnknown):
        await asyncio.wait_for(asked, timeout=3)
    await writer.transaction(lambda db: db.execute("INSERT INTO t VALUES (3)"))
    assert await writer.run(lambda db: os.getpid()) != pid
    with sqlite3.connect(tmp_path / "store.db") as db:  # the killed transaction undone
        assert [r[0] for r in db.execute("SELECT n FROM t ORDER BY n")] == [1, 3]


async def test_interrupt_stops_a_long_statement_in_the_writer_process(
    writer: Connection,
) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    asked = asyncio.create_task(writer.run(lambda db: db.execute(endless).fetchone()))
    await asyncio.sleep(0.3)
    began = time.monotonic()
    writer.interrupt()
    with pytest.raises(StoreUnavailable, match="interrupted"):
        await asyncio.wait_for(asked, timeout=5)
    assert time.monotonic() - began < 2
    assert await writer.run(lambda db: db.execute("SELECT 1").fetchone()[0]) == 1


async def test_the_writer_process_outlives_sigint_and_sigterm_sent_to_its_group(
    writer: Connection, tmp_path: Path
) -> None:
    """A terminal's Ctrl-C (or a supervisor's SIGTERM) reaches every process of the
    group: the writer stays for the graceful stop's last writes."""
    pid = await writer.run(lambda db: os.getpid())
    for stop in (signal.SIGINT, signal.SIGTERM):
        os.kill(pid, stop)
    await asyncio.sleep(0.2)
    await writer.transaction(lambda db: db.execute("INSERT INTO t VALUES (1)"))
    assert await writer.run(lambda db: os.getpid()) == pid


async def test_closing_ends_the_writer_process(tmp_path: Path) -> None:
    connection = Connection(
        str(tmp_path / "s.db"), name="writer", health=Outage("t", log), own_process=True
    )
    await connection.open()
    pid = await connection.run(lambda db: os.getpid())
    await connection.close()
    assert not alive(pid)


def test_the_writer_process_ends_when_its_parent_is_killed(tmp_path: Path) -> None:
    program = textwrap.dedent(f"""
        import asyncio, logging, os, time
        from tickwheel.outage import Outage
        from tickwheel.storage.sqlite.connection import Connection

        async def main():
            writer = Connection({str(tmp_path / "s.db")!r}, name="writer",
                                health=Outage("t", logging.getLogger()), own_process=True)
            await writer.open()
            print(await writer.run(lambda db: os.getpid()), flush=True)
            time.sleep(60)

        asyncio.run(main())
    """)
    parent = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child), "the writer's process outlived its parent"
    finally:
        parent.kill()
        parent.wait(10)
        if parent.stdout is not None:
            parent.stdout.close()
