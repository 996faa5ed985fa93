"""Tickwheel running as its users run it, for the scenarios measured from outside:
embedded, one `tickwheel up` process on a fresh SQLite file; distributed, a
`tickwheel local-cluster` (scheduler, worker and API processes) on a fresh PostgreSQL
schema and Redis prefix. Either is read back through its store."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench import pythonpath
from bench.progress import steps
from bench.stores import POSTGRES, REDIS, Mode, fresh_schema
from tickwheel.config import Settings

TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))
STARTUP_SECONDS = 60.0
BATCH = 10_000

# The scenarios that push the trigger engine past any sane backlog (300,000 due in one
# second, 50,000 a second for a minute) lift the admission limits, which would shed
# that load by design. The comparison with the peers runs with the defaults.
LIFTED_ADMISSION = {
    "TICKWHEEL_MAX_READY_DEPTH": "100000000",
    "TICKWHEEL_MAX_DRAIN_SECONDS": "100000",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Target:
    """A running Tickwheel: its port, URL and environment, and reads of its tables."""

    def __init__(self, mode: Mode, port: int, env: dict[str, str]) -> None:
        self.mode, self.port, self.env = mode, port, env
        self.url = f"http://127.0.0.1:{port}"
        self.settings = Settings().from_env(env)  # what its processes run with
        self.database_url = self.settings.database_url
        self._postgres: asyncpg.Connection | None = None  # one for every poll

    async def rows(self, query: str) -> list[tuple[Any, ...]]:
        """The rows of a read-only query (written to run on SQLite and PostgreSQL)."""
        if self.mode is Mode.EMBEDDED:
            return await asyncio.to_thread(self._sqlite_rows, query)
        if self._postgres is None:
            schema = self.database_url.rsplit("search_path=", 1)[1]
            self._postgres = await asyncpg.connect(
                POSTGRES, server_settings={"search_path": schema}
            )
        return [tuple(r) for r in await self._postgres.fetch(query)]

    async def close(self) -> None:
        if self._postgres is not None:
            await self._postgres.close()
            self._postgres = None

    def _sqlite_rows(self, query: str) -> list[tuple[Any, ...]]:
        path = self.database_url.removeprefix("sqlite:///")
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
            return db.execute(query).fetchall()

    async def healthy(self) -> bool:
        try:
            async with httpx.AsyncClient() as http:
                return (await http.get(f"{self.url}/healthz")).status_code == 200
        except httpx.HTTPError:
            return False

    async def serving(self, schedulers: int) -> bool:
        """Healthy and, distributed, with every scheduler holding partitions, so that no
        measurement includes the share-out."""
        if not await self.healthy():
            return False
        if self.mode is Mode.EMBEDDED:
            return True
        query = (
            "SELECT count(DISTINCT owner) FROM partition_leases WHERE owner IS NOT NULL"
            " AND expires_at >= (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
        )
        return bool((await self.rows(query))[0][0] >= schedulers)

    async def succeeded(self) -> int:
        rows = await self.rows("SELECT count(*) FROM tasks WHERE status = 'succeeded'")
        return int(rows[0][0])

    async def row_writes(self) -> int | None:
        """Rows PostgreSQL has inserted, updated and deleted in this schema so far."""
        if self.mode is Mode.EMBEDDED:
            return None
        # A busy backend reports its counts at most every second and an idle one within
        # 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL): wait that out, or the counts lag.
        await asyncio.sleep(11)
        rows = await self.rows(
            "SELECT COALESCE(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)"
            " FROM pg_stat_user_tables WHERE schemaname = current_schema()"
        )
        return int(rows[0][0])


def environment(port: int, concurrency: int, *, lift_admission: bool = True) -> dict[str, str]:
    """What a benchmarked Tickwheel runs with, beyond its stores."""
    return {
        "TICKWHEEL_PORT": str(port),
        "TICKWHEEL_CONCURRENCY": str(concurrency),
        "TICKWHEEL_LOG_LEVEL": "warning",
        **(LIFTED_ADMISSION if lift_admission else {}),
    }


@asynccontextmanager
async def fresh_stores(mode: Mode, partitions: int = 64) -> AsyncIterator[dict[str, str]]:
    """The environment that points Tickwheel at stores of its own, removed afterwards:
    embedded, a SQLite file in a temporary folder; distributed, a fresh PostgreSQL
    schema and Redis prefix."""
    if mode is Mode.EMBEDDED:
        folder = Path(tempfile.mkdtemp(prefix="tickwheel-bench-"))
        try:
            yield {"TICKWHEEL_DATABASE_URL": f"sqlite:///{folder / 'bench.db'}"}
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    async with fresh_schema() as (database_url, prefix):
        yield {
            "TICKWHEEL_DATABASE_URL": database_url,
            "TICKWHEEL_REDIS_URL": REDIS,
            "TICKWHEEL_REDIS_PREFIX": prefix,
            "TICKWHEEL_PARTITIONS": str(partitions),
        }


def command(
    mode: Mode, port: int, *, schedulers: int, workers: int, app: str | None = None
) -> list[str]:
    """`tickwheel up` (its port from the environment), or a `tickwheel local-cluster` of
    one API, `schedulers` and `workers`; their handlers from `app` (MODULE:ATTR)."""
    handlers = ["--app", app] if app else []
    if mode is Mode.EMBEDDED:
        return [TICKWHEEL, "up", *handlers]
    sizes = ["--schedulers", str(schedulers), "--workers", str(workers)]
    return [TICKWHEEL, "local-cluster", *sizes, "--port", str(port), *handlers]


@asynccontextmanager
async def running(
    mode: Mode, *, concurrency: int, schedulers: int = 2, workers: int = 2, partitions: int = 64
) -> AsyncIterator[Target]:
    """Tickwheel in `mode` on fresh stores and a free port, stopped (SIGTERM) afterwards."""
    port = free_port()
    async with fresh_stores(mode, partitions) as stores:
        env = {**os.environ, "PYTHONPATH": pythonpath(), **environment(port, concurrency), **stores}
        process = await asyncio.create_subprocess_exec(
            *command(mode, port, schedulers=schedulers, workers=workers),
            env=env,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        target = Target(mode, port, env)
        try:
            await _wait_serving(target, process, schedulers)
            yield target
        finally:
            await target.close()
            os.killpg(process.pid, signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 120)


async def _wait_serving(
    target: Target, process: asyncio.subprocess.Process, schedulers: int
) -> None:
    async with asyncio.timeout(STARTUP_SECONDS):
        while process.returncode is None:
            if await target.serving(schedulers):
                return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"Tickwheel exited with {process.returncode} before it was healthy")


async def submit_batches(
    url: str, count: int, schedule: dict[str, Any], concurrency: int = 2
) -> None:
    """Submit `count` no-op tasks through the batch endpoint, `concurrency` batches of
    10,000 at a time, with a progress bar."""
    body = {"task_type": "noop", "schedule": schedule}
    sizes = [min(BATCH, count - start) for start in range(0, count, BATCH)]
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        with steps(f"submitting {count:,}", count) as done:
            sent = 0

            async def one(size: int) -> None:
                nonlocal sent
                async with gate:
                    answer = await http.post("/api/tasks/batch", json={"tasks": [body] * size})
                    answer.raise_for_status()
                sent += size
                done(sent)

            await asyncio.gather(*(one(size) for size in sizes))


async def wait_succeeded(
    target: Target, count: int, label: str, deadline: float = float("inf")
) -> int:
    """Until `count` tasks have succeeded or the monotonic `deadline` passes, with a
    progress bar; how many succeeded."""
    with steps(label, count) as done:
        while (found := await target.succeeded()) < count and time.monotonic() < deadline:
            done(found)
            await asyncio.sleep(0.25)
    return found
