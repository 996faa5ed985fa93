"""The trigger engine staging tasks ahead of their due time, on the real SQLite store
and a memory ready queue that stages by the same manual clock.

A staging queue receives what falls due within its `stage_ahead_ms` before it is due
and shows it only from the due time; cron instances are held in the engine until due,
since their schedule advances when they fire. The queue can be made to fail its pushes
or its stagings, as an unreachable Redis would: what was not handed over is handed over
by the next tick, once, and only that.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tickwheel.clock import ManualClock, to_datetime
from tickwheel.config import Settings
from tickwheel.core.cron import CronSpec
from tickwheel.engine.routing import Route
from tickwheel.engine.tasks import TaskService
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.models import ScheduleType, Status
from tickwheel.node import Node
from tickwheel.queue.base import ReadyItem
from tickwheel.queue.memory import MemoryReadyQueue
from tickwheel.storage.sqlite.store import SqliteStore
from tickwheel.wire.requests import ScheduleRequest, TaskRequest

pytestmark = pytest.mark.timeout(10)

PARTITIONS = 2
START_MS = 1_800_000_000_000  # a whole minute
STAGE_AHEAD_MS = 2000


class QueueDown(Exception):
    """The ready queue refused a call, as an unreachable Redis would."""


class FlakyQueue(MemoryReadyQueue):
    """A memory ready queue whose pushes or stagings fail while named in `failing`."""

    def __init__(self, *, stage_ahead_ms: int, now_ms: ManualClock) -> None:
        super().__init__(stage_ahead_ms=stage_ahead_ms, now_ms=now_ms.now_ms)
        self.failing: set[str] = set()

    async def push(self, items: Sequence[ReadyItem]) -> None:
        if "push" in self.failing:
            raise QueueDown("push")
        await super().push(items)

    async def stage(self, items: Sequence[ReadyItem]) -> None:
        if "stage" in self.failing:
            raise QueueDown("stage")
        await super().stage(items)


@dataclass
class Harness:
    store: SqliteStore
    clock: ManualClock
    queue: FlakyQueue
    service: TaskService
    trigger: TriggerEngine
    fired_cron: list[tuple[Route, int]]

    async def delayed(self, due_ms: int) -> int:
        schedule = ScheduleRequest(ScheduleType.DELAYED, due_ms=due_ms)
        submitted = await self.service.submit(TaskRequest("noop", None, schedule))
        task = await self.store.get_task(submitted.task_id)
        assert task is not None
        return task.seq

    async def every_minute(self) -> int:
        """A cron schedule; returns the seq of its first instance."""
        schedule = ScheduleRequest(ScheduleType.CRON, cron=CronSpec("* * * * *"))
        submitted = await self.service.submit(TaskRequest("noop", None, schedule))
        assert submitted.schedule_id is not None
        record = await self.store.get_schedule(submitted.schedule_id)
        assert record is not None and record.current_seq is not None
        return record.current_seq

    async def tick_at(self, now_ms: int) -> None:
        self.clock.advance((now_ms - self.clock.now_ms()) / 1000)
        await self.trigger.load_once()
        await self.trigger.tick(now_ms)
        await asyncio.sleep(0)  # fired cron instances are resolved in a task of their own

    async def visible(self) -> list[int]:
        return [i.seq for i in await self.queue.pull(["default"], limit=100, wait_seconds=0)]


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    store = SqliteStore(str(tmp_path / "s.db"), partitions=PARTITIONS)
    await store.open()
    clock = ManualClock(START_MS)
    queue = FlakyQueue(stage_ahead_ms=STAGE_AHEAD_MS, now_ms=clock)
    fired: list[tuple[Route, int]] = []

    async def on_cron(batch: list[tuple[Route, int]], now_ms: int) -> None:
        fired.extend(batch)

    trigger = TriggerEngine(store=store, queue=queue, clock=clock, on_cron=on_cron)
    await trigger.start()
    await trigger.gain(range(PARTITIONS))
    try:
        service = TaskService(
            store=store,
            clock=clock,
            partitions=PARTITIONS,
            local_watermark=lambda _: trigger.triggered_until,
        )
        yield Harness(store, clock, queue, service, trigger, fired)
    finally:
        await trigger.close()
        await store.close()


async def test_tasks_due_within_the_stage_window_are_handed_over_but_hidden_until_due(
    h: Harness,
) -> None:
    soon = await h.delayed(START_MS + 1500)
    later = await h.delayed(START_MS + 5000)
    await h.tick_at(START_MS)
    assert h.queue.depth() == {"default": 1}  # `soon` is staged; `later` is not yet
    assert await h.visible() == []
    h.clock.advance(1.499)
    assert await h.visible() == []
    h.clock.advance(0.001)
    assert await h.visible() == [soon]
    await h.tick_at(START_MS + 3000)
    assert h.queue.depth() == {"default": 1}  # `later` staged at its due time - 2 s
    h.clock.advance(2)
    assert await h.visible() == [later]


async def test_a_staged_task_is_stamped_with_its_due_time_and_a_due_one_with_the_tick(
    h: Harness,
) -> None:
    overdue = await h.delayed(START_MS - 10)
    ahead = await h.delayed(START_MS + 700)
    await h.tick_at(START_MS)
    h.clock.advance(1)
    pulled = await h.queue.pull(["default"], limit=10, wait_seconds=0)
    stamps = {i.seq: i.triggered_ms for i in pulled}
    assert stamps == {overdue: START_MS, ahead: START_MS + 700}


async def test_a_cron_instance_is_held_until_due_then_fired(h: Harness) -> None:
    seq = await h.every_minute()
    first_due = START_MS + 60_000
    await h.tick_at(first_due - 1500)  # inside the stage window
    assert h.fired_cron == []
    assert h.queue.depth() == {}  # a cron instance is never staged
    await h.tick_at(first_due - 1)
    assert h.fired_cron == []
    await h.tick_at(first_due)
    assert [(route.seq, due) for route, due in h.fired_cron] == [(seq, first_due)]


async def test_losing_a_partition_drops_its_held_cron_instances(h: Harness) -> None:
    await h.every_minute()
    first_due = START_MS + 60_000
    await h.tick_at(first_due - 1000)
    for partition in range(PARTITIONS):
        h.trigger.lose(partition)
    await h.tick_at(first_due + 10)
    assert h.fired_cron == []  # the next owner fires it from the store


async def test_a_task_offered_and_then_found_by_its_mark_is_on_the_wheel_once(
    h: Harness,
) -> None:
    """A retry is offered to the wheel at once and also shows up in the loader's scan
    of new marks: it must be released once, not twice."""
    first = await h.delayed(START_MS + 10_000)
    await h.trigger.load_once()
    assert h.trigger.size() == 1
    seq = await h.delayed(START_MS + 20_000)
    (entry,) = [
        e
        for e in await h.store.load_pending(
            range(PARTITIONS), due_after=None, due_until=START_MS + 60_000, mark_after=0
        )
        if e.seq == seq
    ]
    h.trigger.offer([entry])
    await h.trigger.load_once()
    assert h.trigger.size() == 2
    await h.tick_at(START_MS + 20_000)
    assert sorted(await h.visible()) == sorted([first, seq])  # each released once


async def test_a_failed_push_leaves_its_tasks_pending_and_the_next_tick_pushes_them(
    h: Harness,
) -> None:
    seq = await h.delayed(START_MS + 100)
    (record,) = await h.store.get_tasks([seq])
    h.queue.failing.add("push")
    with pytest.raises(QueueDown):
        await h.tick_at(START_MS + 500)
    assert h.trigger.triggered_until < START_MS + 100  # the watermark stops before it
    assert h.trigger.handed_until < START_MS + 100
    assert (await h.service.get(record.task_id)).status is Status.PENDING  # not `ready`
    h.queue.failing.clear()
    await h.tick_at(START_MS + 600)
    assert h.trigger.triggered_until == START_MS + 600
    assert (await h.service.get(record.task_id)).status is Status.READY
    assert await h.visible() == [seq]


async def test_a_push_that_succeeded_is_not_pushed_again_when_the_staging_fails(
    h: Harness,
) -> None:
    overdue = await h.delayed(START_MS - 10)
    ahead = await h.delayed(START_MS + 700)
    h.queue.failing.add("stage")
    with pytest.raises(QueueDown):
        await h.tick_at(START_MS)
    assert h.trigger.triggered_until == START_MS  # `overdue` was handed over
    assert h.trigger.handed_until < START_MS + 700  # `ahead` was not
    h.queue.failing.clear()
    await h.tick_at(START_MS + 1)
    h.clock.advance(1)
    assert await h.visible() == [overdue, ahead]  # each once


async def test_a_cron_instance_beside_a_failed_push_fires_once(h: Harness) -> None:
    seq = await h.every_minute()
    due = START_MS + 60_000
    task = await h.delayed(due)
    h.queue.failing.add("push")
    with pytest.raises(QueueDown):
        await h.tick_at(due)
    h.queue.failing.clear()
    await h.tick_at(due + 1)
    assert [route.seq for route, _ in h.fired_cron] == [seq]
    assert await h.visible() == [task]


async def test_a_node_in_one_process_stages_a_burst_before_it_is_due(tmp_path: Path) -> None:
    """`tickwheel up` stages too, by its engine's clock: at the due time nothing is left
    to do but the claim, so the first task of a burst starts right at its due time."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'early.db'}")
    async with Node(settings=settings, run_worker=False) as node:
        due_ms = node.clock.now_ms() + 2500
        request = node.request_of("noop", None, {"due_time": to_datetime(due_ms)})
        await node.service.submit_many([request] * 500)
        deadline = time.monotonic() + 5
        while node.queue.depth().get("default", 0) < 500:
            assert time.monotonic() < deadline, node.queue.depth()
            await asyncio.sleep(0.05)
        assert node.clock.now_ms() < due_ms  # in the queue ahead of time
        assert node.trigger.size() == 0
        assert await node.queue.pull(["default"], limit=10, wait_seconds=0) == []
        pulled = await node.queue.pull(["default"], limit=10, wait_seconds=5)
        assert len(pulled) == 10
        assert node.clock.now_ms() >= due_ms  # shown from the due time, not before
