"""CronResolver on the real SQLite store and memory ready queue, driven by a manual clock.

Each test builds a schedule through TaskService.submit, then plays the trigger engine:
it hands the current instance to `on_triggered` as the wheel would when the instance
is released, and checks what reached the queue and what the store holds afterwards.
The resolver's node holds every partition's lease in the store, as a scheduler would.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, cast

import pytest

from tickwheel.clock import ManualClock, to_ms
from tickwheel.core.cron import CronSpec, MisfirePolicy, OverlapPolicy, jitter_offset
from tickwheel.engine.routing import Route
from tickwheel.engine.schedules import MISFIRE_GRACE_MS, CronResolver
from tickwheel.engine.tasks import TaskService
from tickwheel.models import (
    ScheduleRecord,
    ScheduleType,
    Status,
    TaskOptions,
    TaskRecord,
)
from tickwheel.queue.base import ReadyItem
from tickwheel.queue.memory import MemoryReadyQueue
from tickwheel.storage.base import Advance, Fence, ScheduleStore, Store, TaskFilter
from tickwheel.storage.sqlite.store import SqliteStore
from tickwheel.wire.requests import ScheduleRequest, TaskRequest

pytestmark = pytest.mark.timeout(10)

PARTITIONS = 4
MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
# 10 s past a minute, so the first instance of "* * * * *" is due at 12:01:00.
START_MS = to_ms(datetime(2026, 1, 5, 12, 0, 10, tzinfo=UTC))
FIRST_DUE_MS = to_ms(datetime(2026, 1, 5, 12, 1, tzinfo=UTC))
QUEUE, PRIORITY = "cron", 7
LEASE_MS = 30_000
NODE = "node-1"


def next_minute_after(ms: int, offset_ms: int = 0) -> int:
    """The first minute boundary (shifted by `offset_ms`) strictly after `ms`."""
    return ((ms - offset_ms) // MINUTE_MS + 1) * MINUTE_MS + offset_ms


@dataclass
class Harness:
    store: SqliteStore
    queue: MemoryReadyQueue
    clock: ManualClock
    service: TaskService
    resolver: CronResolver
    caplog: pytest.LogCaptureFixture
    held: dict[int, int]  # partition -> epoch, as the node's leases hold them
    created: list[int] = field(default_factory=list)

    async def schedule(
        self,
        *,
        misfire: MisfirePolicy = MisfirePolicy.RUN_ONCE,
        overlap: OverlapPolicy = OverlapPolicy.ALLOW,
        jitter_seconds: int = 0,
    ) -> str:
        request = TaskRequest(
            "tick",
            {"n": 1},
            ScheduleRequest(
                ScheduleType.CRON,
                cron=CronSpec("* * * * *", jitter_seconds=jitter_seconds),
                misfire=misfire,
                overlap=overlap,
            ),
            TaskOptions(queue=QUEUE, priority=PRIORITY),
        )
        submitted = await self.service.submit(request)
        assert submitted.schedule_id is not None
        return submitted.schedule_id

    async def schedule_record(self, schedule_id: str) -> ScheduleRecord:
        schedule = await self.store.get_schedule(schedule_id)
        assert schedule is not None
        return schedule

    async def current(self, schedule_id: str) -> TaskRecord:
        schedule = await self.schedule_record(schedule_id)
        assert schedule.current_seq is not None
        (task,) = await self.store.get_tasks([schedule.current_seq])
        return task

    async def task(self, seq: int) -> TaskRecord:
        (task,) = await self.store.get_tasks([seq])
        return task

    async def instances(self, schedule_id: str) -> list[TaskRecord]:
        """Every instance of the schedule, oldest first."""
        found = await self.store.list_tasks(
            TaskFilter(schedule_id=schedule_id), before_seq=None, limit=10_000
        )
        return found[::-1]

    async def release(self, *tasks: TaskRecord, now_ms: int) -> None:
        """What the trigger engine does when cron instances leave the wheel."""
        self.clock.advance((now_ms - self.clock.now_ms()) / 1000)
        batch = [(Route(t.seq, t.options.queue, t.options.priority, True), t.due_ms) for t in tasks]
        await self.resolver.on_triggered(batch, now_ms)
        # on_triggered logs and swallows failures: a swallowed one fails the test here.
        errors = [r.getMessage() for r in self.caplog.records if r.levelno >= logging.ERROR]
        assert not errors, errors

    async def pulled(self) -> list[ReadyItem]:
        return await self.queue.pull([QUEUE], limit=1000, wait_seconds=0)

    async def claim(self, task: TaskRecord, now_ms: int) -> bool:
        claimed = await self.store.claim(
            [(task.seq, now_ms)], now_ms=now_ms, lease_ms=LEASE_MS, worker_id="w1"
        )
        return bool(claimed)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = SqliteStore(str(tmp_path / "c.db"), partitions=PARTITIONS)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def fences(node_id: str, held: Mapping[int, int]) -> Callable[[int], Fence | None]:
    """What `PartitionLeases.fence` answers for a node holding `held`."""

    def fence(partition: int) -> Fence | None:
        epoch = held.get(partition)
        return None if epoch is None else Fence(node_id, partition, epoch)

    return fence


def make_resolver(
    store: SqliteStore,
    queue: MemoryReadyQueue,
    clock: ManualClock,
    created: list[int],
    fence: Callable[[int], Fence | None],
) -> CronResolver:
    return CronResolver(
        store=store,
        tasks=store,
        queue=queue,
        clock=clock,
        partitions=PARTITIONS,
        fence=fence,
        on_created=lambda: created.append(clock.now_ms()),
    )


@pytest.fixture
async def h(store: SqliteStore, caplog: pytest.LogCaptureFixture) -> Harness:
    clock = ManualClock(START_MS)
    queue = MemoryReadyQueue()
    created: list[int] = []
    service = TaskService(store=store, clock=clock, partitions=PARTITIONS)
    held = (await store.renew(NODE, {}, range(PARTITIONS), ttl_ms=HOUR_MS, beat=False)).held
    resolver = make_resolver(store, queue, clock, created, fences(NODE, held))
    return Harness(store, queue, clock, service, resolver, caplog, held, created)


# --- on time ------------------------------------------------------------------------


async def test_on_time_release_is_pushed_and_the_next_instance_is_one_period_later(
    h: Harness,
) -> None:
    schedule_id = await h.schedule()
    first = await h.current(schedule_id)
    assert first.due_ms == FIRST_DUE_MS
    now = first.due_ms + 5

    await h.release(first, now_ms=now)

    assert await h.pulled() == [ReadyItem(first.seq, QUEUE, PRIORITY, first.due_ms, now)]
    instances = await h.instances(schedule_id)
    assert len(instances) == 2
    assert instances[0].seq == first.seq
    nxt = instances[1]
    assert nxt.due_ms == first.due_ms + MINUTE_MS
    assert nxt.status is Status.PENDING
    assert (nxt.schedule_type, nxt.task_type, nxt.payload) == (ScheduleType.CRON, "tick", {"n": 1})
    assert (nxt.options.queue, nxt.options.priority) == (QUEUE, PRIORITY)
    schedule = await h.schedule_record(schedule_id)
    assert (schedule.current_seq, schedule.previous_seq) == (nxt.seq, first.seq)
    assert (await h.task(first.seq)).status is Status.PENDING  # the worker's claim is next
    assert h.created == [now]


async def test_a_chain_of_on_time_releases_fires_every_minute(h: Harness) -> None:
    schedule_id = await h.schedule()
    dues = []
    for _ in range(4):
        task = await h.current(schedule_id)
        dues.append(task.due_ms)
        await h.release(task, now_ms=task.due_ms + 3)
        assert [i.seq for i in await h.pulled()] == [task.seq]
    assert dues == [FIRST_DUE_MS + k * MINUTE_MS for k in range(4)]
    assert len(await h.instances(schedule_id)) == 5
    assert len(h.created) == 4


# --- misfires -----------------------------------------------------------------------


async def test_run_once_pushes_the_late_instance_once_and_resumes_after_now(h: Harness) -> None:
    schedule_id = await h.schedule(misfire=MisfirePolicy.RUN_ONCE)
    first = await h.current(schedule_id)
    now = first.due_ms + 5 * HOUR_MS + 7_000

    await h.release(first, now_ms=now)

    assert [i.seq for i in await h.pulled()] == [first.seq]
    instances = await h.instances(schedule_id)
    assert len(instances) == 2
    nxt = instances[1]
    assert nxt.due_ms == next_minute_after(now)
    assert nxt.due_ms != first.due_ms + MINUTE_MS
    assert (await h.task(first.seq)).status is Status.PENDING
    assert (await h.schedule_record(schedule_id)).current_seq == nxt.seq


@pytest.mark.parametrize("late_ms", [MISFIRE_GRACE_MS + 1, 5 * HOUR_MS])
async def test_skip_cancels_the_late_instance_and_resumes_after_now(
    h: Harness, late_ms: int
) -> None:
    schedule_id = await h.schedule(misfire=MisfirePolicy.SKIP)
    first = await h.current(schedule_id)
    now = first.due_ms + late_ms

    await h.release(first, now_ms=now)

    assert await h.pulled() == []
    assert (await h.task(first.seq)).status is Status.CANCELLED
    assert not await h.claim(first, now)
    instances = await h.instances(schedule_id)
    assert len(instances) == 2
    assert instances[1].due_ms == next_minute_after(now)
    assert (await h.schedule_record(schedule_id)).current_seq == instances[1].seq


async def test_run_all_walks_through_every_missed_minute(h: Harness) -> None:
    schedule_id = await h.schedule(misfire=MisfirePolicy.RUN_ALL)
    first = await h.current(schedule_id)
    now = first.due_ms + 5 * HOUR_MS + 30_000

    await h.release(first, now_ms=now)
    nxt = await h.current(schedule_id)
    assert nxt.due_ms == first.due_ms + MINUTE_MS < now

    # The trigger engine releases a past due at once; keep going until caught up.
    task = nxt
    for _ in range(4):
        await h.release(task, now_ms=now)
        task = await h.current(schedule_id)
    assert task.due_ms == first.due_ms + 5 * MINUTE_MS
    assert [i.due_ms for i in await h.pulled()] == [first.due_ms + k * MINUTE_MS for k in range(5)]


async def test_run_all_catches_up_then_returns_to_the_live_minute(h: Harness) -> None:
    schedule_id = await h.schedule(misfire=MisfirePolicy.RUN_ALL)
    now = FIRST_DUE_MS + 5 * MINUTE_MS + 30_000  # 12:06:30: 12:01 ... 12:06 were missed
    releases = 0
    while (task := await h.current(schedule_id)).due_ms <= now:
        await h.release(task, now_ms=now)
        releases += 1
        assert releases <= 10, "the chain never caught up"
    assert releases == 6
    assert task.due_ms == next_minute_after(now)
    pushed = [i.due_ms for i in await h.pulled()]
    assert pushed == [FIRST_DUE_MS + k * MINUTE_MS for k in range(6)]


@pytest.mark.parametrize("late_ms", [30_000, MISFIRE_GRACE_MS])
@pytest.mark.parametrize("misfire", list(MisfirePolicy))
async def test_a_release_within_the_grace_is_on_time_for_every_policy(
    h: Harness, misfire: MisfirePolicy, late_ms: int
) -> None:
    schedule_id = await h.schedule(misfire=misfire)
    first = await h.current(schedule_id)

    await h.release(first, now_ms=first.due_ms + late_ms)

    assert [i.seq for i in await h.pulled()] == [first.seq]
    assert (await h.task(first.seq)).status is Status.PENDING
    nxt = await h.current(schedule_id)
    assert nxt.due_ms == first.due_ms + MINUTE_MS


# --- overlap ------------------------------------------------------------------------


async def _release_first_and_claim_it(h: Harness, schedule_id: str) -> TaskRecord:
    first = await h.current(schedule_id)
    await h.release(first, now_ms=first.due_ms + 5)
    assert [i.seq for i in await h.pulled()] == [first.seq]
    assert await h.claim(first, first.due_ms + 10)
    assert (await h.task(first.seq)).status is Status.RUNNING
    return first


async def test_overlap_skip_skips_a_release_while_the_previous_run_is_still_running(
    h: Harness,
) -> None:
    schedule_id = await h.schedule(overlap=OverlapPolicy.SKIP)
    await _release_first_and_claim_it(h, schedule_id)
    second = await h.current(schedule_id)

    await h.release(second, now_ms=second.due_ms + 5)

    assert await h.pulled() == []
    assert (await h.task(second.seq)).status is Status.CANCELLED
    third = await h.current(schedule_id)
    assert third.due_ms == second.due_ms + MINUTE_MS
    assert (await h.schedule_record(schedule_id)).current_seq == third.seq
    assert len(h.created) == 2


async def test_overlap_allow_pushes_a_release_while_the_previous_run_is_still_running(
    h: Harness,
) -> None:
    schedule_id = await h.schedule(overlap=OverlapPolicy.ALLOW)
    await _release_first_and_claim_it(h, schedule_id)
    second = await h.current(schedule_id)

    await h.release(second, now_ms=second.due_ms + 5)

    assert [i.seq for i in await h.pulled()] == [second.seq]
    assert (await h.task(second.seq)).status is Status.PENDING
    assert (await h.current(schedule_id)).due_ms == second.due_ms + MINUTE_MS


async def test_overlap_skip_keeps_skipping_while_a_run_lasts_several_periods(
    h: Harness,
) -> None:
    schedule_id = await h.schedule(overlap=OverlapPolicy.SKIP)
    first = await _release_first_and_claim_it(h, schedule_id)
    second = await h.current(schedule_id)
    await h.release(second, now_ms=second.due_ms + 5)
    assert (await h.task(second.seq)).status is Status.CANCELLED
    third = await h.current(schedule_id)

    await h.release(third, now_ms=third.due_ms + 5)

    assert (await h.task(first.seq)).status is Status.RUNNING  # 2 minutes in, still going
    assert await h.pulled() == [], "third instance released while the first still runs"
    assert (await h.task(third.seq)).status is Status.CANCELLED


# --- compare-and-set ----------------------------------------------------------------


async def test_releasing_the_same_instance_twice_creates_one_successor(h: Harness) -> None:
    schedule_id = await h.schedule()
    first = await h.current(schedule_id)
    version = (await h.schedule_record(schedule_id)).version

    await h.release(first, now_ms=first.due_ms + 5)
    await h.release(first, now_ms=first.due_ms + 9)  # a second node, after a lease handover

    instances = await h.instances(schedule_id)
    assert len(instances) == 2
    schedule = await h.schedule_record(schedule_id)
    assert schedule.version == version + 1
    assert (schedule.current_seq, schedule.previous_seq) == (instances[1].seq, first.seq)
    # The stale release may reach the queue again; the claim lets only one run.
    pulled = await h.pulled()
    assert 1 <= len(pulled) <= 2
    assert {i.seq for i in pulled} == {first.seq}
    claimed = [await h.claim(first, first.due_ms + 20) for _ in pulled]
    assert claimed.count(True) == 1
    assert len(h.created) == 1


class _MeetAfterRead:
    """A schedule store whose `schedules_of` waits until every node has read, so both
    nodes decide on the same schedule version before either writes."""

    def __init__(self, store: SqliteStore, barrier: asyncio.Barrier) -> None:
        self._store = store
        self._barrier = barrier

    async def schedules_of(self, seqs: Collection[int]) -> dict[int, ScheduleRecord]:
        found = await self._store.schedules_of(seqs)
        await self._barrier.wait()
        return found

    async def advance_schedules(self, advances: Sequence[Advance]) -> list[int | None]:
        return await self._store.advance_schedules(advances)


async def test_two_releases_racing_under_one_lease_create_one_successor_and_push_once(
    h: Harness,
) -> None:
    """The fence cannot tell them apart (a wheel holding an instance twice, or a node
    that lost and regained the lease): the schedule's compare-and-set does."""
    schedule_id = await h.schedule()
    first = await h.current(schedule_id)
    version = (await h.schedule_record(schedule_id)).version
    barrier = asyncio.Barrier(2)
    queues = [MemoryReadyQueue(), MemoryReadyQueue()]
    created: list[int] = []
    nodes = [
        CronResolver(
            store=cast(ScheduleStore, _MeetAfterRead(h.store, barrier)),
            tasks=h.store,
            queue=queue,
            clock=h.clock,
            partitions=PARTITIONS,
            fence=fences(NODE, h.held),
            on_created=lambda: created.append(1),
        )
        for queue in queues
    ]
    route = Route(first.seq, QUEUE, PRIORITY, True)
    now = first.due_ms + 5

    await asyncio.gather(*(node.on_triggered([(route, first.due_ms)], now) for node in nodes))

    errors = [r.getMessage() for r in h.caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors
    instances = await h.instances(schedule_id)
    assert len(instances) == 2
    assert instances[1].due_ms == first.due_ms + MINUTE_MS
    schedule = await h.schedule_record(schedule_id)
    assert schedule.version == version + 1
    assert schedule.current_seq == instances[1].seq
    pushed = [i for q in queues for i in await q.pull([QUEUE], limit=10, wait_seconds=0)]
    assert [i.seq for i in pushed] == [first.seq]


async def test_a_duplicate_in_one_batch_is_still_pushed_and_creates_one_successor(
    h: Harness,
) -> None:
    schedule_id = await h.schedule()
    first = await h.current(schedule_id)

    await h.release(first, first, now_ms=first.due_ms + 5)

    assert len(await h.instances(schedule_id)) == 2
    pulled = await h.pulled()
    assert {i.seq for i in pulled} == {first.seq}, "the instance never reached the queue"


# --- partition leases ---------------------------------------------------------------


async def take_over(h: Harness, partition: int) -> dict[int, int]:
    """Another node takes the partition under a new epoch; `h`'s node has not noticed."""
    await h.store.release(NODE, {partition: h.held[partition]})
    taken = (await h.store.renew("node-2", {}, [partition], ttl_ms=HOUR_MS, beat=False)).held
    assert taken[partition] > h.held[partition]
    return taken


async def assert_not_fired(h: Harness, schedule_id: str, before: ScheduleRecord) -> None:
    assert await h.schedule_record(schedule_id) == before
    assert [t.seq for t in await h.instances(schedule_id)] == [before.current_seq]
    assert await h.pulled() == []
    assert h.created == []


async def test_a_node_whose_lease_was_taken_over_neither_advances_nor_pushes(
    h: Harness,
) -> None:
    schedule_id = await h.schedule()
    first = await h.current(schedule_id)
    before = await h.schedule_record(schedule_id)
    taken = await take_over(h, first.partition)

    await h.release(first, now_ms=first.due_ms + 5)

    await assert_not_fired(h, schedule_id, before)
    # The new owner's release of the same instance goes through.
    created: list[int] = []
    owner = make_resolver(h.store, h.queue, h.clock, created, fences("node-2", taken))
    await owner.on_triggered(
        [(Route(first.seq, QUEUE, PRIORITY, True), first.due_ms)], h.clock.now_ms()
    )
    assert [i.seq for i in await h.pulled()] == [first.seq]
    assert len(await h.instances(schedule_id)) == 2
    assert created


async def test_a_node_no_longer_holding_the_partition_leaves_the_instance_to_its_owner(
    h: Harness,
) -> None:
    schedule_id = await h.schedule()
    first = await h.current(schedule_id)
    before = await h.schedule_record(schedule_id)
    await take_over(h, first.partition)
    del h.held[first.partition]  # the node has noticed since its wheel released the instance

    with h.caplog.at_level(logging.INFO, logger="tickwheel.engine.schedules"):
        await h.release(first, now_ms=first.due_ms + 5)

    await assert_not_fired(h, schedule_id, before)
    assert "next owner fires it" in h.caplog.text


# --- cancelled schedules ------------------------------------------------------------


async def test_a_cancelled_schedule_creates_no_successor(h: Harness) -> None:
    schedule_id = await h.schedule()
    first = await h.current(schedule_id)
    assert await h.service.cancel(schedule_id) == 1
    before = await h.schedule_record(schedule_id)

    await h.release(first, now_ms=first.due_ms + 5)

    assert [t.seq for t in await h.instances(schedule_id)] == [first.seq]
    after = await h.schedule_record(schedule_id)
    assert after.status == "cancelled"
    assert (after.current_seq, after.version) == (before.current_seq, before.version)
    assert h.created == []
    # Whatever reached the queue, the cancelled instance cannot be claimed.
    assert (await h.task(first.seq)).status is Status.CANCELLED
    for item in await h.pulled():
        assert item.seq == first.seq
        assert not await h.claim(first, first.due_ms + 10)


class _ReleaseDuringCancel:
    """The store as TaskService sees it; the trigger engine releases the schedule's
    instance right after `cancel` has read the schedule."""

    def __init__(self, h: Harness, instance: TaskRecord) -> None:
        self._h = h
        self._instance = instance

    async def get_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        found = await self._h.store.get_schedule(schedule_id)
        await self._h.release(self._instance, now_ms=self._instance.due_ms + 5)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._h.store, name)


async def test_cancel_racing_a_release_leaves_no_future_instance_pending(h: Harness) -> None:
    schedule_id = await h.schedule()
    first = await h.current(schedule_id)
    service = TaskService(
        store=cast(Store, _ReleaseDuringCancel(h, first)), clock=h.clock, partitions=PARTITIONS
    )

    await service.cancel(schedule_id)

    assert (await h.schedule_record(schedule_id)).status == "cancelled"
    instances = await h.instances(schedule_id)
    assert len(instances) == 2  # the release won the race and created a successor
    successor = instances[1]
    assert successor.due_ms > h.clock.now_ms()
    assert successor.status is Status.CANCELLED, "the cancelled schedule will fire again"


# --- jitter -------------------------------------------------------------------------


async def test_jitter_keeps_the_period_and_the_same_offset(h: Harness) -> None:
    schedule_id = await h.schedule(jitter_seconds=30)
    offset_ms = jitter_offset(schedule_id, 30) * 1000
    assert 0 <= offset_ms < 30_000
    dues = []
    for _ in range(4):
        task = await h.current(schedule_id)
        dues.append(task.due_ms)
        await h.release(task, now_ms=task.due_ms + 2)
    assert dues[0] == next_minute_after(START_MS, offset_ms)
    assert [b - a for a, b in pairwise(dues)] == [MINUTE_MS] * 3
    assert {d % MINUTE_MS for d in dues} == {offset_ms}


async def test_jitter_offset_survives_a_misfire(h: Harness) -> None:
    schedule_id = await h.schedule(jitter_seconds=30)
    offset_ms = jitter_offset(schedule_id, 30) * 1000
    first = await h.current(schedule_id)
    now = first.due_ms + 3 * HOUR_MS + 45_000

    await h.release(first, now_ms=now)

    nxt = await h.current(schedule_id)
    assert nxt.due_ms == next_minute_after(now, offset_ms)
    assert nxt.due_ms % MINUTE_MS == offset_ms
