"""Admission control on real stores: a backed-up ready queue answers 429 to submissions,
not to reads; in a cluster the API node judges by the workers' drain, wherever they run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from roles_apart import roles_apart
from services import require

from tickwheel.api.app import create_app
from tickwheel.config import Settings
from tickwheel.metrics.recorder import Event
from tickwheel.node import Node
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App


@pytest.fixture
async def backed_up(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A node with no worker and room for three ready tasks."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'adm.db'}", max_ready_depth=3)
    async with Node(settings=settings, run_worker=False) as node:
        transport = httpx.ASGITransport(app=create_app(node, manage_node=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client


async def test_a_full_ready_queue_answers_429_with_retry_after(
    backed_up: httpx.AsyncClient,
) -> None:
    for _ in range(4):
        assert (await backed_up.post("/api/tasks", json={"task_type": "noop"})).status_code == 201
    for _ in range(100):
        if (await backed_up.get("/api/queues")).json()["backlog"] == 4:
            break
        await asyncio.sleep(0.02)
    queues = (await backed_up.get("/api/queues")).json()
    assert queues["depth"] == {"default": 4}
    assert queues["admitting"] is False

    refused = await backed_up.post("/api/tasks", json={"task_type": "noop"})
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    batch = await backed_up.post("/api/tasks/batch", json={"tasks": [{"task_type": "noop"}]})
    assert batch.status_code == 429
    # Reads keep working, and nothing was stored by the refused submissions.
    listed = (await backed_up.get("/api/tasks", params={"limit": 50})).json()["tasks"]
    assert len(listed) == 4


async def test_the_cluster_api_node_sees_the_workers_drain(
    database_url: str, redis_prefix: str
) -> None:
    """The API node runs no worker, so it ends nothing itself: its drain rate is the
    workers', read from the metrics every node flushes to Redis."""
    app = App()

    @app.task("step")
    async def step(ctx: TaskContext, payload: Any) -> None:
        await asyncio.sleep(0.02)

    base = Settings(
        database_url=database_url,
        redis_url=require("redis"),
        redis_prefix=redis_prefix,
        partitions=4,
        concurrency=4,  # about 200 tasks a second: a backlog for a few seconds
    )
    async with roles_apart(base, app) as (api, _, _):
        await api.service.submit_many([api.request_of("step", i, {}) for i in range(2000)])
        deadline = time.monotonic() + 30
        while True:
            state = api.admission.state()
            if state.drain_per_second > 0 and state.backlog > 0:
                break
            assert time.monotonic() < deadline, state
            await asyncio.sleep(0.2)
    assert 20 < state.drain_per_second < 2000, state
    assert state.seconds_to_drain is not None
    # Every end was counted elsewhere; the API node only released the tasks due now.
    assert api.metrics.lifetime.events == {Event.TRIGGERED: 2000}
