"""The dependency resolver's loop, driven by a `ManualClock`: a nudge tells the news at
once, news queued by another process is told within the idle interval of the clock, and
a store outage is logged when it starts and when it ends."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import cast

import pytest
from looping import running, settle

from tickwheel.clock import ManualClock
from tickwheel.engine.dependencies import BATCH, SWEEP_SECONDS, DependencyResolver
from tickwheel.errors import StoreUnavailable
from tickwheel.storage.base import Propagated, TaskStore

T0_MS = 1_700_000_000_000


class Outbox:
    """The store's queue of news: `queued` ended tasks wait to be told."""

    def __init__(self) -> None:
        self.queued = 0
        self.down = False
        self.wakes_due = 0  # held tasks that limits' due wakes let go
        self.sweeps: list[int] = []

    async def first_wake_ms(self) -> int | None:
        self._reach()
        return 0 if self.wakes_due > 0 else None

    async def wake_held(self, now_ms: int, *, sweep: bool = False) -> int:
        self._reach()
        if sweep:
            self.sweeps.append(now_ms)
        woken, self.wakes_due = self.wakes_due, 0
        return woken

    async def has_propagations(self, now_ms: int) -> bool:
        self._reach()
        return self.queued > 0

    async def propagate(self, now_ms: int, *, limit: int = 1000) -> Propagated:
        self._reach()
        told = min(limit, self.queued)
        self.queued -= told
        return Propagated(unblocked=told, upstream_failed=0, more=self.queued > 0)

    def _reach(self) -> None:
        if self.down:
            raise StoreUnavailable("connection refused")


@dataclass
class Resolving:
    clock: ManualClock
    outbox: Outbox
    resolver: DependencyResolver
    pokes: list[None] = field(default_factory=list)  # the loader poked: tasks were freed


@pytest.fixture
async def resolving() -> AsyncIterator[Resolving]:
    clock, outbox = ManualClock(T0_MS), Outbox()
    pokes: list[None] = []
    resolver = DependencyResolver(
        store=cast(TaskStore, outbox),
        clock=clock,
        on_unblocked=lambda: pokes.append(None),
        idle_seconds=1.0,
    )
    async with running(resolver.run()):
        yield Resolving(clock, outbox, resolver, pokes)


async def test_a_nudge_tells_the_news_at_once_in_batches(resolving: Resolving) -> None:
    resolving.outbox.queued = 2 * BATCH + 1
    resolving.resolver.nudge()
    await settle()  # the clock never moved
    assert resolving.outbox.queued == 0
    assert len(resolving.pokes) == 3  # each batch that freed tasks pokes the loader


async def test_a_limits_wake_lets_held_tasks_go_and_pokes_the_loader(
    resolving: Resolving,
) -> None:
    resolving.outbox.wakes_due = 3
    resolving.resolver.nudge()
    await settle()
    assert resolving.outbox.wakes_due == 0
    assert len(resolving.pokes) == 1


async def test_every_limit_holding_tasks_is_swept_every_few_seconds(
    resolving: Resolving,
) -> None:
    clock, outbox = resolving.clock, resolving.outbox
    await settle()
    for _ in range(2 * SWEEP_SECONDS):
        clock.advance(1.0)
        await settle()
    assert outbox.sweeps == [T0_MS + n * SWEEP_SECONDS * 1000 for n in range(3)]


async def test_news_of_another_process_is_told_within_the_idle_interval(
    resolving: Resolving,
) -> None:
    clock, outbox = resolving.clock, resolving.outbox
    outbox.queued = 5
    clock.advance(0.5)
    await settle()
    assert outbox.queued == 5
    clock.advance(0.5)
    await settle()
    assert outbox.queued == 0


async def test_a_store_outage_is_left_to_the_store_to_tell_and_resolving_resumes(
    resolving: Resolving, caplog: pytest.LogCaptureFixture
) -> None:
    clock, outbox = resolving.clock, resolving.outbox
    with caplog.at_level(logging.INFO, logger="tickwheel.engine.dependencies"):
        outbox.down = True
        for _ in range(30):
            clock.advance(1)
            await settle()
        outbox.down = False
        outbox.queued = 1
        clock.advance(1)
        await settle()
    assert outbox.queued == 0
    assert caplog.records == []  # the store's Outage tells it, once for every loop
