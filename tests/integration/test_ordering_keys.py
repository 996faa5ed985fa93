"""Ordering keys: tasks sharing a key run one at a time in due order, keys in parallel."""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tickwheel import App, InvalidRequest, PermanentFailure, TaskContext
from tickwheel.config import Settings
from tickwheel.models import FINAL_STATUSES, Status
from tickwheel.node import Node


class Log:
    """Each run of a keyed task: (key, index) in start order, and how many keys ran
    at the same moment at most."""

    def __init__(self) -> None:
        self.started: dict[str, list[int]] = defaultdict(list)
        self.running: dict[str, int] = defaultdict(int)
        self.overlaps = 0
        self.busy_keys = 0
        self.most_keys_at_once = 0
        self.started_at: dict[tuple[str, int], float] = {}
        self.ended_at: dict[tuple[str, int], float] = {}


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
async def node(tmp_path: Path, log: Log) -> AsyncIterator[Node]:
    app = App()

    async def record(payload: dict[str, Any]) -> None:
        key = payload["key"]
        log.started[key].append(payload["index"])
        log.started_at[key, payload["index"]] = time.monotonic()
        log.running[key] += 1
        log.overlaps += log.running[key] > 1
        log.busy_keys += log.running[key] == 1
        log.most_keys_at_once = max(log.most_keys_at_once, log.busy_keys)
        await asyncio.sleep(0.01)
        log.running[key] -= 1
        log.busy_keys -= log.running[key] == 0

    @app.task("step")
    async def step(ctx: TaskContext, payload: dict[str, Any]) -> None:
        await record(payload)

    @app.task("flaky", max_retries=3, retry_backoff=(0.2, 0.2))
    async def flaky(ctx: TaskContext, payload: dict[str, Any]) -> None:
        await record(payload)
        if ctx.attempt < 3:
            raise RuntimeError(f"attempt {ctx.attempt} fails")

    @app.task("boom", max_retries=0)
    async def boom(ctx: TaskContext, payload: dict[str, Any]) -> None:
        await record(payload)
        raise PermanentFailure("it broke")

    @app.task("slow")
    async def slow(ctx: TaskContext, payload: dict[str, Any]) -> None:
        log.started[payload["key"]].append(payload["index"])
        try:
            await asyncio.sleep(30)
        finally:
            log.ended_at[payload["key"], payload["index"]] = time.monotonic()

    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'keys.db'}", concurrency=32, lease_seconds=2
    )
    async with Node(settings=settings, app=app) as started:
        yield started


async def settle(node: Node, task_ids: list[str], timeout: float = 60) -> list[Status]:
    deadline = time.monotonic() + timeout
    while True:
        found = [(await node.service.get(t)).status for t in task_ids]
        if all(s in FINAL_STATUSES for s in found) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.05)


async def test_many_keys_keep_their_own_order_and_run_in_parallel(node: Node, log: Log) -> None:
    keys, per_key = 20, 15
    # Each key's tasks are due 5 ms apart (each runs 10 ms) from 2 s ahead, submitted in a shuffled
    # order, so submission order is not due order.
    entries = [(k, i) for k in range(keys) for i in range(per_key)]
    random.Random(7).shuffle(entries)
    start = datetime.now(UTC) + timedelta(seconds=2)
    ids = []
    for k, i in entries:
        submitted = await node.submit(
            "step",
            {"key": f"k{k}", "index": i},
            due_time=start + timedelta(milliseconds=5 * i),
            ordering_key=f"k{k}",
        )
        ids.append(submitted.task_id)

    assert set(await settle(node, ids)) == {Status.SUCCEEDED}
    assert log.overlaps == 0  # never two tasks of one key at once
    assert {key: order for key, order in log.started.items()} == {
        f"k{k}": list(range(per_key)) for k in range(keys)
    }
    assert log.most_keys_at_once > 1  # different keys did run side by side


async def test_tasks_due_at_the_same_instant_run_in_submission_order(node: Node, log: Log) -> None:
    ids = [
        (await node.submit("step", {"key": "k", "index": i}, ordering_key="k")).task_id
        for i in range(50)
    ]
    assert set(await settle(node, ids)) == {Status.SUCCEEDED}
    assert log.started["k"] == list(range(50))


async def test_a_task_with_retries_left_holds_its_key(node: Node, log: Log) -> None:
    first = await node.submit("flaky", {"key": "k", "index": 0}, ordering_key="k")
    second = await node.submit("step", {"key": "k", "index": 1}, ordering_key="k")
    other = await node.submit("step", {"key": "elsewhere", "index": 0}, ordering_key="j")
    assert set(await settle(node, [first.task_id, second.task_id, other.task_id])) == {
        Status.SUCCEEDED
    }
    assert log.started["k"] == [0, 0, 0, 1]  # three attempts, then the next task
    a = (await node.service.get(first.task_id)).record
    b = (await node.service.get(second.task_id)).record
    assert a and b and a.completed_ms and b.started_ms
    assert b.started_ms >= a.completed_ms


async def test_a_final_failure_or_a_cancel_passes_the_key_on(node: Node, log: Log) -> None:
    broken = await node.submit("boom", {"key": "k", "index": 0}, ordering_key="k")
    waits = await node.submit("step", {"key": "k", "index": 1}, delay_seconds=0.2, ordering_key="k")
    cancelled = await node.submit(
        "step", {"key": "k", "index": 2}, delay_seconds=3600, ordering_key="k"
    )
    last = await node.submit("step", {"key": "k", "index": 3}, delay_seconds=0.4, ordering_key="k")
    await node.service.cancel(cancelled.task_id)
    found = await settle(node, [broken.task_id, waits.task_id, cancelled.task_id, last.task_id])
    assert found == [Status.FAILED, Status.SUCCEEDED, Status.CANCELLED, Status.SUCCEEDED]
    assert log.started["k"] == [0, 1, 3]


async def test_a_waiting_task_can_be_cancelled(node: Node) -> None:
    holder = await node.submit("flaky", {"key": "k", "index": 0}, ordering_key="k")
    behind = await node.submit("step", {"key": "k", "index": 1}, ordering_key="k")
    deadline = time.monotonic() + 10
    while (await node.service.get(behind.task_id)).status is not Status.WAITING:
        assert time.monotonic() < deadline, "the second task never waited for its turn"
        await asyncio.sleep(0.02)
    await node.service.cancel(behind.task_id)
    assert await settle(node, [holder.task_id, behind.task_id]) == [
        Status.SUCCEEDED,
        Status.CANCELLED,
    ]


async def test_cancelling_a_running_task_passes_the_key_only_once_it_stopped(
    node: Node, log: Log
) -> None:
    running = await node.submit("slow", {"key": "k", "index": 0}, ordering_key="k")
    after = await node.submit("step", {"key": "k", "index": 1}, ordering_key="k")
    deadline = time.monotonic() + 10
    while (await node.service.get(running.task_id)).status is not Status.RUNNING:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    await node.service.cancel(running.task_id)
    assert await settle(node, [running.task_id, after.task_id]) == [
        Status.CANCELLED,
        Status.SUCCEEDED,
    ]
    assert log.started["k"] == [0, 1]
    # The cancelled attempt was stopped before the next task of its key started.
    assert log.ended_at["k", 0] < log.started_at["k", 1]


async def test_ordering_key_is_checked(node: Node) -> None:
    with pytest.raises(InvalidRequest) as too_long:
        await node.submit("step", ordering_key="k" * 257)
    assert too_long.value.field == "ordering_key"
    with pytest.raises(InvalidRequest) as cron:
        await node.submit("step", cron="* * * * *", ordering_key="k")
    assert cron.value.field == "ordering_key"


async def test_the_api_takes_and_shows_the_key(api: httpx.AsyncClient) -> None:
    bodies = [
        {"task_type": "flaky", "payload": {"key": "k", "index": 0}, "ordering_key": "order-42"},
        {"task_type": "step", "payload": {"key": "k", "index": 1}, "ordering_key": "order-42"},
    ]
    first, second = [(await api.post("/api/tasks", json=b)).json()["task_id"] for b in bodies]
    deadline = time.monotonic() + 10
    while (shown := (await api.get(f"/api/tasks/{second}")).json())["status"] != "waiting":
        assert time.monotonic() < deadline, "the second task never waited for its turn"
        await asyncio.sleep(0.02)
    assert shown["ordering_key"] == "order-42"
    waiting = (await api.get("/api/tasks", params={"status": "waiting"})).json()["tasks"]
    assert [t["task_id"] for t in waiting] == [second]
    while (await api.get(f"/api/tasks/{second}")).json()["status"] != "succeeded":
        assert time.monotonic() < deadline + 10
        await asyncio.sleep(0.05)
    assert (await api.get(f"/api/tasks/{first}")).json()["status"] == "succeeded"
