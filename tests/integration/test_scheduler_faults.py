"""A scheduler meeting faults of its stores: a far link, a Redis back empty."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from acceptance.proxy import Proxy
from services import require

from tickwheel import App, TaskContext
from tickwheel.config import Settings
from tickwheel.engine.node import Node


def through(url: str, proxy: Proxy) -> str:
    """`url` with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}"))


def proxy_to(url: str, default_port: int) -> Proxy:
    parts = urlsplit(url)
    return Proxy(parts.hostname or "127.0.0.1", parts.port or default_port)


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
