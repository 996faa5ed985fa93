"""A scheduler meeting faults of its stores: a far link, a Redis back empty."""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from acceptance.proxy import Proxy
from services import require

from tickwheel import App, TaskContext
from tickwheel.config import Role, Settings
from tickwheel.engine.node import Node
from tickwheel.models import Status


def through(url: str, proxy: Proxy) -> str:
    """`url` with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}"))


def proxy_to(url: str, default_port: int) -> Proxy:
    parts = urlsplit(url)
    return Proxy(parts.hostname or "127.0.0.1", parts.port or default_port)


def at(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def timed(ran: dict[Any, float]) -> App:
    """Handlers of the type `step` that record when each payload ran (wall clock)."""
    handlers = App()

    @handlers.task("step")
    async def step(ctx: TaskContext, payload: Any) -> None:
        ran.setdefault(payload, time.time())

    return handlers


async def test_fifty_ms_each_way_slows_triggering_but_never_stops_it(
    database_url: str, redis_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """50 ms (+ up to 10 ms) each way between a scheduler and both its stores, with a
    3 s partition lease: the leases are renewed in time all along, and tasks due
    meanwhile start late by a few round trips, not never."""
    caplog.set_level(logging.WARNING)
    ran: dict[Any, float] = {}
    with (
        proxy_to(require("postgres"), 5432) as to_pg,
        proxy_to(require("redis"), 6379) as to_redis,
    ):
        settings = Settings(
            database_url=through(database_url, to_pg),
            redis_url=through(require("redis"), to_redis),
            redis_prefix=redis_prefix,
            partitions=16,
            partition_lease_seconds=3,
            balance_partitions=True,
            node_id="far",
            concurrency=8,
        )
        async with Node(settings=settings, app=timed(ran)) as node:
            due = {i: time.time() + 2 + i * 0.5 for i in range(16)}
            for i, at in due.items():
                await node.submit("step", i, delay_seconds=at - time.time())
            to_pg.slow(0.05, 0.01)
            to_redis.slow(0.05, 0.01)
            held = []
            deadline = time.monotonic() + 12
            while time.monotonic() < deadline and len(ran) < len(due):
                held.append(len(node.leases.held))
                await asyncio.sleep(0.1)
            to_pg.slow(0)
            to_redis.slow(0)
    assert "could not be renewed" not in caplog.text
    assert min(held) == 16, "a renewal failed: the scheduler let its partitions go"
    assert sorted(ran) == list(due)
    late = {i: round(ran[i] - due[i], 2) for i in due}
    assert max(late.values()) < 2.0, late


class PrivateRedis:
    """A redis-server of this test's own, on a free port in a temporary folder, that
    keeps nothing on disk: restarting it empties it. The machine's Redis is untouched."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(self.folder)),
            *("--daemonize", "no"),
        ]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("the private redis-server did not start")

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait(10)
            self._process = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("!!! no redis-server on PATH: the Redis restart tests did NOT run !!!")
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_tasks_due_while_redis_came_back_empty_start_at_once(
    database_url: str, private_redis: PrivateRedis
) -> None:
    """Staged in Redis ahead of their due time, then Redis restarts with no data: the
    scheduler sees its marker gone and releases them again at once, not after the
    reconciler's grace period (30 s here). Each runs once, within 2 s of Redis back or
    of its due time, whichever is later."""
    ran: dict[Any, float] = {}
    settings = Settings(
        database_url=database_url, redis_url=private_redis.url, partitions=8, concurrency=16
    )
    scheduler = Node(settings=settings, roles=frozenset({Role.API, Role.SCHEDULER}))
    worker = Node(settings=settings, app=timed(ran), roles=frozenset({Role.WORKER}))
    await scheduler.start()
    started = [scheduler]
    try:
        due = {i: time.time() + 1.5 + i * 0.1 for i in range(20)}
        ids = [(await scheduler.submit("step", i, due_time=at(due[i]))).task_id for i in due]
        deadline = time.monotonic() + 5
        while (await scheduler.queue.fresh_depth()).get("default", 0) < len(due):
            assert time.monotonic() < deadline, "the tasks were never staged"
            await asyncio.sleep(0.05)
        private_redis.stop()
        await asyncio.sleep(1.0)
        private_redis.start()
        back = time.time()
        await worker.start()
        started.append(worker)
        deadline = time.monotonic() + 10
        while len(ran) < len(due) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        views = [await scheduler.service.get(t) for t in ids]
    finally:
        for node in reversed(started):
            await node.stop()
    assert sorted(ran) == list(due), "tasks were lost with Redis"
    assert {v.status for v in views} == {Status.SUCCEEDED}
    assert {v.record.attempts for v in views if v.record} == {1}
    late = {i: round(ran[i] - max(due[i], back), 2) for i in due}
    assert max(late.values()) < 2.0, late
