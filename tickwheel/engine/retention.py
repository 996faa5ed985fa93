"""Retention: tasks live in ranges of seq, each a span of creation time; this rolls new
tasks on to a fresh range once the current one has been open for its period, and drops
whole ranges once they are older than the retention and every task in them has ended
(seed 002: drop old partitions instead of deleting rows).

Any node may run it: the store serialises the work and judges time by its own clock.
A range that still holds an unfinished task (a task delayed by a year) is kept.
"""

from __future__ import annotations

import logging

from tickwheel.clock import Clock
from tickwheel.periodic import Periodic
from tickwheel.storage.base import RangedTaskStore

log = logging.getLogger(__name__)


class Retention:
    def __init__(
        self,
        *,
        store: RangedTaskStore,
        clock: Clock,
        range_seconds: float,
        retention_seconds: float | None,
        interval_seconds: float = 60.0,
    ) -> None:
        self._store = store
        self._period_ms = round(range_seconds * 1000)
        self._retention_ms = None if retention_seconds is None else round(retention_seconds * 1000)
        self._loop = Periodic(
            "rolling or dropping task ranges",
            self.once,
            clock=clock,
            every_seconds=interval_seconds,
            log=log,
        )

    async def run(self) -> None:
        await self._loop.run()

    async def once(self) -> int:
        """Roll the ranges; drop the expired ones; return how many were dropped."""
        await self._store.roll_task_ranges(period_ms=self._period_ms)
        if self._retention_ms is None:
            return 0
        dropped = await self._store.drop_expired_task_ranges(retention_ms=self._retention_ms)
        if dropped:
            log.info("retention dropped %d ranges of ended tasks", dropped)
        return dropped
