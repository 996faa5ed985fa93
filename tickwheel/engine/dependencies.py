"""The dependency resolver: when a task ends, tell the tasks that wait on it: its
dependents, and the next task of its ordering key.

The news is queued in the store by the very transaction that ends a task, so it cannot
be lost: a crash after the end and before the news is told just leaves it queued, and
the resolver tells it when the node starts again (seed 002 "DAG resolver misses a
completion event"). Telling is idempotent, so telling twice is harmless.

A dependent freed by its last predecessor, or a task whose turn on its ordering key
came, becomes pending, due now, and the loader takes it to the wheel like any new
task: the dispatch path does not change. Tasks a rate or concurrency limit held back
are let go the same way, when a wake of their limit comes due (`plans.limits`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from tickwheel.clock import Clock
from tickwheel.periodic import Periodic
from tickwheel.storage.base import LimitStore, TaskStore

log = logging.getLogger(__name__)


class ResolverStore(TaskStore, LimitStore, Protocol):
    """The news queued in the store: ends to tell, and limits to wake."""


# Without a nudge, the resolver still looks this often (a task ended by another
# process on the same store, say).
IDLE_SECONDS = 1.0
BATCH = 1000
SWEEP_SECONDS = 1


class DependencyResolver:
    def __init__(
        self,
        *,
        store: ResolverStore,
        clock: Clock,
        on_unblocked: Callable[[], None],
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self._store = store
        self._clock = clock
        self._on_unblocked = on_unblocked
        self._next_sweep_ms = 0
        self._idle_seconds = idle_seconds
        self._timer: asyncio.TimerHandle | None = None
        self._loop = Periodic(
            "dependency resolution", self.resolve, clock=clock, every_seconds=idle_seconds, log=log
        )

    def nudge(self) -> None:
        """Tasks ended here: some may have dependents."""
        self._loop.wake()

    async def run(self) -> None:
        await self._loop.run()

    async def resolve(self) -> int:
        """Propagate everything queued, and wake the limits whose wake is due; return how
        many tasks changed."""
        changed = await self._wake_limits()
        if not await self._store.has_propagations(self._clock.now_ms()):
            return changed
        while True:
            done = await self._store.propagate(self._clock.now_ms(), limit=BATCH)
            changed += done.unblocked + done.upstream_failed
            if done.unblocked:
                self._on_unblocked()
            if not done.more:
                return changed

    async def _wake_limits(self) -> int:
        """Let go what limits hold, where they have room again (`plans.limits.wake`).
        Every second, a limit holding tasks with no wake queued is given one, in case
        a wake was missed."""
        now = self._clock.now_ms()
        sweep = now >= self._next_sweep_ms
        first = await self._store.first_wake_ms()
        if not sweep and (first is None or first > now):
            self._wake_at(first)
            return 0
        if sweep:
            self._next_sweep_ms = now + SWEEP_SECONDS * 1000
        woken = await self._store.wake_held(now, sweep=sweep)
        if woken:
            self._on_unblocked()
        self._wake_at(await self._store.first_wake_ms())
        return woken

    def _wake_at(self, at_ms: int | None) -> None:
        """Look again when the first wake is due, if that comes before the next look."""
        if at_ms is None or self._timer is not None:
            return
        delay = max(0.0, (at_ms - self._clock.now_ms()) / 1000)
        if delay < self._idle_seconds:
            self._timer = asyncio.get_running_loop().call_later(delay, self._timer_fired)

    def _timer_fired(self) -> None:
        self._timer = None
        self._loop.wake()
