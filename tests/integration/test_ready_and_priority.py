"""What a task looks like between its trigger and its claim, and the order workers see."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tickwheel.config import Settings
from tickwheel.models import Status
from tickwheel.node import Node
from tickwheel.storage.base import TaskFilter


@pytest.fixture
async def idle_node(tmp_path: Path) -> AsyncIterator[Node]:
    """A node that triggers but runs no worker, so due tasks wait on the ready queue."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'idle.db'}")
    async with Node(settings=settings, run_worker=False) as node:
        yield node


async def _released(node: Node, count: int) -> None:
    for _ in range(200):
        if sum(node.queue.depth().values()) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"only {node.queue.depth()} released")


async def test_a_due_unclaimed_task_is_ready_and_a_future_one_pending(idle_node: Node) -> None:
    due = await idle_node.submit("noop")
    later = await idle_node.submit("noop", delay_seconds=3600)
    await _released(idle_node, 1)
    assert (await idle_node.service.get(due.task_id)).status is Status.READY
    assert (await idle_node.service.get(later.task_id)).status is Status.PENDING
    ready, _ = await idle_node.service.list_tasks(
        TaskFilter(statuses=(Status.READY,)),
        before_seq=None,
        limit=10,
    )
    assert [v.task_id for v in ready] == [due.task_id]


async def test_workers_see_higher_priority_first_then_due_order(idle_node: Node) -> None:
    low = [await idle_node.submit("noop", priority=-5) for _ in range(3)]
    high = [await idle_node.submit("noop", priority=10) for _ in range(3)]
    await _released(idle_node, 6)
    pulled = await idle_node.queue.pull(["default"], limit=6, wait_seconds=0)
    records = await idle_node.store.get_tasks([i.seq for i in pulled])
    by_seq = {r.seq: r.task_id for r in records}
    order = [by_seq[i.seq] for i in pulled]
    assert order == [s.task_id for s in high] + [s.task_id for s in low]


async def test_a_task_for_another_queue_waits_for_a_worker_of_that_queue(idle_node: Node) -> None:
    await idle_node.submit("noop", queue="reports")
    await _released(idle_node, 1)
    assert await idle_node.queue.pull(["default"], limit=10, wait_seconds=0) == []
    assert len(await idle_node.queue.pull(["reports"], limit=10, wait_seconds=0)) == 1


async def test_a_cancelled_task_leaves_the_wheel_at_once(idle_node: Node) -> None:
    submitted = await idle_node.submit("noop", delay_seconds=30)
    for _ in range(200):
        if idle_node.trigger.size() == 1:
            break
        await asyncio.sleep(0.01)
    assert idle_node.trigger.size() == 1
    assert await idle_node.service.cancel(submitted.task_id) == 1
    assert idle_node.trigger.size() == 0
