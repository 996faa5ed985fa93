"""The reconciler: due tasks that nobody claimed for too long are released again.

The wheel and the ready queue are caches of the store. A task released to a ready
queue that then lost it (Redis restarted empty, a pull cancelled at the wrong moment
with Redis down) is still `pending` in the store, and nothing would ever look at it
again. Every interval the reconciler reads the owned partitions' tasks overdue by more
than a grace period, oldest first and a bounded batch, and hands them back to the
trigger engine, which releases them like any due task (a cron instance through the
cron resolver). A queue that holds at least as many items as it has overdue tasks is
left alone: a long backlog (a burst draining) is not a loss, and releasing it again
would only add work. A task released twice still runs once: the claim is a
compare-and-set.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable

from tickwheel.clock import Clock
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.storage.base import DispatchStore

log = logging.getLogger(__name__)


class Reconciler:
    def __init__(
        self,
        *,
        store: DispatchStore,
        trigger: TriggerEngine,
        clock: Clock,
        depth: Callable[[], Awaitable[dict[str, int]]],
        grace_seconds: float = 30.0,
        interval_seconds: float = 5.0,
        batch: int = 10_000,
    ) -> None:
        self._store = store
        self._trigger = trigger
        self._clock = clock
        self._depth = depth
        self._grace_ms = round(grace_seconds * 1000)
        self._interval = interval_seconds
        self._batch = batch
        self._released: dict[int, int] = {}  # seq -> when this reconciler released it

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.reconcile_once()
            except Exception:
                log.exception("reconciling overdue tasks failed")

    async def reconcile_once(self) -> int:
        partitions = self._trigger.partitions
        if not partitions:
            return 0
        now = self._clock.now_ms()
        overdue = await self._store.overdue(
            partitions, due_before=now - self._grace_ms, limit=self._batch
        )
        waiting = await self._depth() if overdue else {}
        overdue_by_queue = Counter(e.queue for e in overdue)
        lost = {q for q, n in overdue_by_queue.items() if waiting.get(q, 0) < n}
        # Not again within the grace period: a long queue may simply not have got to it.
        again = [
            e
            for e in overdue
            if e.queue in lost and now - self._released.get(e.seq, 0) > self._grace_ms
        ]
        self._released = {e.seq: self._released.get(e.seq, 0) for e in overdue}
        for entry in again:
            self._released[entry.seq] = now
        if again:
            log.warning("releasing %d overdue tasks nobody claimed", len(again))
            self._trigger.offer(again)
        return len(again)
