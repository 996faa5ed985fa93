"""A scheduler meeting faults of its stores: a far link, a Redis back empty."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import pytest
from proxy import Proxy
from servers import PrivateRedis
from services import require

from tickwheel import App, TaskContext
from tickwheel.config import Role, Settings
from tickwheel.models import Status
from tickwheel.node import Node


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
            database_url=to_pg.url_for(database_url),
            redis_url=to_redis.url_for(require("redis")),
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
