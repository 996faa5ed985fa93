"""The reconciler: due tasks that nobody claimed for too long are released again.

The wheel and the ready queue are caches of the store. A task released to a ready
queue that then lost it (Redis restarted empty, a pull cancelled at the wrong moment
with Redis down) is still `pending` in the store, and nothing would ever look at it
again. Every interval the reconciler reads the owned partitions' tasks overdue by more
than a grace period, oldest first and a bounded batch, and hands them back to the
trigger engine, which releases them like any due task (a cron instance through the
cron resolver). A task still waiting in a long queue may be released twice: the claim
is a compare-and-set, so it runs once.
"""

from __future__ import annotations

import asyncio
import logging

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
        grace_seconds: float = 30.0,
        interval_seconds: float = 5.0,
        batch: int = 10_000,
    ) -> None:
        self._store = store
        self._trigger = trigger
        self._clock = clock
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
        # Not again within the grace period: a long queue may simply not have got to it.
        again = [e for e in overdue if now - self._released.get(e.seq, 0) > self._grace_ms]
        self._released = {e.seq: self._released.get(e.seq, 0) for e in overdue}
        for entry in again:
            self._released[entry.seq] = now
        if again:
            log.warning("releasing %d overdue tasks nobody claimed", len(again))
            self._trigger.offer(again)
        return len(again)
