"""The reconciler: due tasks that nobody claimed for too long are released again.

The wheel and the ready queue are caches of the store. A task released to a ready
queue that then lost it (Redis restarted empty, a pull cancelled at the wrong moment
with Redis down) is still `pending` in the store, and nothing would ever look at it
again. Every interval the reconciler reads the owned partitions' tasks overdue by more
than a grace period, oldest first and a bounded batch, and hands them back to the
trigger engine, which releases them like any due task (a cron instance through the
cron resolver).

A long backlog (a burst draining) is not a loss, and releasing it again would only add
work. The evidence is the queue's oldest release still waiting: everything released
before it has left the queue, and a task is released at or after its due time, so a
task due more than a grace period before that oldest release cannot still be queued.
A task released twice still runs once: the claim is a compare-and-set.

When the queue can tell that it lost everything (Redis restarted empty: its
incarnation marker is gone), no grace period is needed: twice a second the reconciler
asks, and on a loss it releases again at once every pending task of the owned
partitions that the trigger engine had already handed over (due up to its watermark
plus the staging window), so tasks due meanwhile start within moments of the queue
coming back instead of a grace period later.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection

from tickwheel.clock import Clock
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.periodic import Periodic
from tickwheel.storage.base import DispatchStore

log = logging.getLogger(__name__)
NEVER = 2**62  # an empty queue holds nothing: its overdue tasks are lost


class Reconciler:
    def __init__(
        self,
        *,
        store: DispatchStore,
        trigger: TriggerEngine,
        clock: Clock,
        oldest_release: Callable[[Collection[str]], Awaitable[dict[str, int]]],
        wiped: Callable[[], Awaitable[bool]],
        grace_seconds: float = 30.0,
        interval_seconds: float = 5.0,
        watch_seconds: float = 0.5,
        batch: int = 10_000,
    ) -> None:
        self._store = store
        self._trigger = trigger
        self._clock = clock
        self._oldest_release = oldest_release
        self._wiped = wiped
        self._grace_ms = round(grace_seconds * 1000)
        self._batch = batch
        self._released: dict[int, int] = {}  # seq -> when this reconciler released it
        self._reconciling = Periodic(
            "reconciling overdue tasks",
            self.reconcile_once,
            clock=clock,
            every_seconds=interval_seconds,
            log=log,
            wait_first=True,
        )
        self._watching = Periodic(
            "telling whether the ready queue kept its tasks",
            self.watch_once,
            clock=clock,
            every_seconds=watch_seconds,
            log=log,
        )

    async def run(self) -> None:
        await asyncio.gather(self._watching.run(), self._reconciling.run())

    async def watch_once(self) -> int:
        """Ask the queue whether it lost what it held; if it did, release it again."""
        return await self.release_wiped() if await self._wiped() else 0

    async def release_wiped(self) -> int:
        """The queue lost what it held: release again every pending task of the owned
        partitions already handed to it, oldest first and a bounded batch (a longer
        backlog is left to the grace period)."""
        partitions = self._trigger.partitions
        if not partitions:
            return 0
        now = self._clock.now_ms()
        handed = await self._store.overdue(
            partitions, due_before=self._trigger.handed_until + 1, limit=self._batch
        )
        # Cron instances wait on the trigger engine until due: not in the queue yet.
        again = [e for e in handed if not (e.is_cron and e.due_ms > now)]
        for entry in again:
            self._released[entry.seq] = now
        level = logging.WARNING if again else logging.INFO
        log.log(level, "the ready queue lost its tasks: releasing %d again at once", len(again))
        self._trigger.offer(again)
        return len(again)

    async def reconcile_once(self) -> int:
        partitions = self._trigger.partitions
        if not partitions:
            return 0
        now = self._clock.now_ms()
        overdue = await self._store.overdue(
            partitions, due_before=now - self._grace_ms, limit=self._batch
        )
        oldest = await self._oldest_release({e.queue for e in overdue}) if overdue else {}
        lost = [e for e in overdue if e.due_ms < oldest.get(e.queue, NEVER) - self._grace_ms]
        # Not again within the grace period: the claim may simply not have landed yet.
        again = [e for e in lost if now - self._released.get(e.seq, 0) > self._grace_ms]
        self._released = {e.seq: self._released.get(e.seq, 0) for e in overdue}
        for entry in again:
            self._released[entry.seq] = now
        if again:
            log.warning("releasing %d overdue tasks nobody claimed", len(again))
            self._trigger.offer(again)
        return len(again)
