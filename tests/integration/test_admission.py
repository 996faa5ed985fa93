"""Admission control: a backed-up ready queue answers 429 to submissions, not to reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tickwheel.api.app import create_app
from tickwheel.clock import ManualClock
from tickwheel.config import Settings
from tickwheel.engine.admission import Admission
from tickwheel.engine.node import Node
from tickwheel.errors import Overloaded


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


def test_a_slow_drain_closes_admission_before_the_depth_limit() -> None:
    clock = ManualClock(1_000_000)
    depth = {"default": 0}
    ended = [0]
    admission = Admission(
        clock=clock,
        depth=lambda: dict(depth),
        ended=lambda: ended[0],
        max_depth=10**6,
        max_drain_seconds=10,
    )
    for _ in range(20):  # workers finish 10 tasks a second
        clock.advance(1)
        ended[0] += 10
        admission.check()
    depth["default"] = 70  # about 8 s to drain at the averaged rate: still admitted
    admission.check()
    depth["default"] = 500  # 50 s to drain: refused, with a hint of the wait
    with pytest.raises(Overloaded) as refused:
        admission.check()
    assert 30 <= refused.value.retry_after_seconds <= 60
    assert admission.state().open is False
