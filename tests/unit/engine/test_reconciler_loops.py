"""The reconciler's two loops, driven by a `ManualClock`: the watch asks the queue twice
a second whether it lost what it held and releases it again at once when it did; a
queue that cannot be asked is said once, without a traceback, and so is its return;
the reconciliation waits its interval before its first look."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from typing import cast

import pytest
from looping import running, settle

from tickwheel.clock import ManualClock
from tickwheel.engine.reconciler import Reconciler
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.errors import QueueUnavailable
from tickwheel.models import WheelEntry
from tickwheel.storage.base import DispatchStore

T0_MS = 1_700_000_000_000
HANDED = WheelEntry(seq=1, partition=0, due_ms=T0_MS - 10_000, queue="q", priority=0, is_cron=False)


class Trigger:
    """What the reconciler asks of the trigger engine."""

    partitions = frozenset({0})
    handed_until = T0_MS

    def __init__(self) -> None:
        self.offered: list[WheelEntry] = []

    def offer(self, entries: Collection[WheelEntry]) -> None:
        self.offered.extend(entries)


@dataclass
class Queue:
    """A ready queue that may be down, or may have restarted empty."""

    down: bool = False
    lost: bool = False

    async def wiped(self) -> bool:
        if self.down:
            raise QueueUnavailable("the ready queue failed: ConnectionError: Connection refused")
        lost, self.lost = self.lost, False
        return lost

    async def oldest_release(self, queues: Collection[str]) -> dict[str, int]:
        return {}


class Store:
    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.reads: list[int] = []  # when overdue tasks were read, by the clock

    async def overdue(
        self, partitions: Collection[int], *, due_before: int, limit: int
    ) -> list[WheelEntry]:
        self.reads.append(self.clock.now_ms())
        return [HANDED] if HANDED.due_ms < due_before else []


@dataclass
class Reconciling:
    clock: ManualClock
    queue: Queue
    store: Store
    trigger: Trigger


@pytest.fixture
async def reconciling() -> AsyncIterator[Reconciling]:
    clock = ManualClock(T0_MS)
    queue, store, trigger = Queue(), Store(clock), Trigger()
    reconciler = Reconciler(
        store=cast(DispatchStore, store),
        trigger=cast(TriggerEngine, trigger),
        clock=clock,
        oldest_release=queue.oldest_release,
        wiped=queue.wiped,
        grace_seconds=30,
        interval_seconds=5,
        watch_seconds=0.5,
    )
    async with running(reconciler.run()):
        yield Reconciling(clock, queue, store, trigger)


async def test_what_the_queue_lost_is_released_again_within_half_a_second(
    reconciling: Reconciling,
) -> None:
    r = reconciling
    r.queue.lost = True
    await settle()
    assert r.trigger.offered == []
    r.clock.advance(0.5)
    await settle()
    assert r.trigger.offered == [HANDED]


async def test_the_reconciliation_looks_first_after_its_interval(
    reconciling: Reconciling,
) -> None:
    r = reconciling
    assert r.store.reads == []
    for _ in range(10):
        r.clock.advance(0.5)
        await settle()
    assert r.store.reads == [T0_MS + 5_000]


async def test_a_queue_that_cannot_be_asked_is_left_to_the_queue_to_tell(
    reconciling: Reconciling, caplog: pytest.LogCaptureFixture
) -> None:
    r = reconciling
    with caplog.at_level(logging.INFO, logger="tickwheel.engine.reconciler"):
        r.queue.down = True
        for _ in range(20):
            r.clock.advance(0.5)
            await settle()
        r.queue.down = False
        r.clock.advance(0.5)
        await settle()
    assert caplog.records == []  # the queue's Outage tells it
