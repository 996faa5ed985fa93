"""The worker claims ahead of its free slots: never more handlers at once than its
concurrency, and a stop runs or gives back what it claimed, so no task is stranded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tickwheel.config import Settings
from tickwheel.models import Outcome, Status
from tickwheel.node import Node
from tickwheel.storage.base import TaskFilter
from tickwheel.worker.ahead import ClaimAhead
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App

CONCURRENCY = 3


class Counting:
    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.ran: list[int] = []


@pytest.fixture
def counting() -> Counting:
    return Counting()


@pytest.fixture
async def node(tmp_path: Path, counting: Counting) -> AsyncIterator[Node]:
    app = App()

    @app.task("slow")
    async def slow(ctx: TaskContext, payload: Any) -> None:
        counting.now += 1
        counting.most = max(counting.most, counting.now)
        try:
            await asyncio.sleep(payload["seconds"])
        finally:
            counting.now -= 1
        counting.ran.append(payload["i"])

    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'w.db'}",
        concurrency=CONCURRENCY,
        prefetch=CONCURRENCY,
        lease_seconds=2,
        shutdown_grace_seconds=0.5,
    )
    async with Node(settings=settings, app=app) as started:
        yield started


async def _statuses(node: Node) -> list[Status]:
    records = await node.store.list_tasks(TaskFilter(), before_seq=None, limit=500)
    return [r.status for r in records]


async def test_handlers_never_outnumber_the_concurrency(node: Node, counting: Counting) -> None:
    for i in range(30):
        await node.submit("slow", {"i": i, "seconds": 0.02})
    deadline = time.monotonic() + 20
    while set(await _statuses(node)) != {Status.SUCCEEDED}:
        assert time.monotonic() < deadline, await _statuses(node)
        await asyncio.sleep(0.05)
    assert sorted(counting.ran) == list(range(30))
    assert counting.most == CONCURRENCY  # prefetched tasks waited for a slot


class AlwaysAhead(ClaimAhead):
    """Claims as far ahead as it may, whatever the start rate: long tasks waiting."""

    def amount(self) -> int:
        return self.most


async def test_a_stop_gives_back_what_it_claimed_but_could_not_run(
    node: Node, counting: Counting
) -> None:
    node.worker._ahead = AlwaysAhead(CONCURRENCY)  # by rate it would not, for 5 s tasks
    for i in range(12):
        await node.submit("slow", {"i": i, "seconds": 5})
    deadline = time.monotonic() + 10
    while counting.now < CONCURRENCY or node.worker.inflight <= CONCURRENCY:
        assert time.monotonic() < deadline, node.worker.inflight
        await asyncio.sleep(0.02)
    await node.worker.stop(grace_seconds=0.2)
    statuses = await _statuses(node)
    # Nothing is left running under a lease nobody renews: every claimed task went back.
    assert Status.RUNNING not in statuses
    assert statuses.count(Status.PENDING) == 12


async def test_a_task_claimed_ahead_past_its_expiry_ends_expired_without_running(
    node: Node, counting: Counting
) -> None:
    node.worker._ahead = AlwaysAhead(CONCURRENCY)  # the expiring ones wait, claimed
    for i in range(CONCURRENCY):
        await node.submit("slow", {"i": i, "seconds": 1.0})
    deadline = time.monotonic() + 10
    while counting.now < CONCURRENCY:
        assert time.monotonic() < deadline, counting.now
        await asyncio.sleep(0.02)
    late = [
        await node.submit("slow", {"i": 100 + i, "seconds": 0}, expires_after_seconds=0.3)
        for i in range(CONCURRENCY)
    ]
    while node.worker.inflight <= CONCURRENCY:  # claimed ahead, waiting for a slot
        assert time.monotonic() < deadline, node.worker.inflight
        await asyncio.sleep(0.02)
    for submitted in late:
        while (await node.service.get(submitted.task_id)).status is not Status.EXPIRED:
            assert time.monotonic() < deadline, await node.service.get(submitted.task_id)
            await asyncio.sleep(0.05)
    assert sorted(counting.ran) == list(range(CONCURRENCY))  # none of the late ones ran
    record = await node.store.get_task(late[0].task_id)
    assert record is not None and record.attempts == 1  # claimed, ended before it ran
    history = await node.store.history(
        task_seq=record.seq, schedule_id=None, before_id=None, limit=9
    )
    assert [e.outcome for e in history] == [Outcome.EXPIRED]
