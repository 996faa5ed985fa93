"""Retention: ended tasks, with their executions and idempotency keys, are kept for
`retention_days`, then go; empty keeps everything. Each store does it its own way:

- PostgreSQL keeps tasks in ranges of seq, each a span of creation time; `Retention`
  rolls new tasks on to a fresh range once the current one has been open for its
  period, and drops whole ranges once they are older than the retention and every task
  in them has ended (seed 002: drop old partitions instead of deleting rows). A range
  that still holds an unfinished task (a task delayed by a year) is kept. Any node may
  run it: the store serialises the work and judges time by its own clock.
- SQLite has no partitions and one writer: `RowRetention` deletes the tasks that ended
  before the cutoff a batch at a time, each batch a short transaction, so that claims,
  heartbeats and submissions go on between batches. A task that anything still needs
  stays (see `PrunedTaskStore`).
"""

from __future__ import annotations

import logging

from tickwheel.clock import Clock
from tickwheel.periodic import Periodic
from tickwheel.storage.base import PrunedTaskStore, RangedTaskStore

log = logging.getLogger(__name__)

DAY_SECONDS = 86400.0


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


class RowRetention:
    """Deletes ended tasks row by row, `batch` to a transaction (SQLite).

    A task is kept at least as long as the idempotency window, whatever the retention:
    a repeated submission within the window must find the task it made."""

    def __init__(
        self,
        *,
        store: PrunedTaskStore,
        clock: Clock,
        retention_seconds: float | None,
        idempotency_window_seconds: float = DAY_SECONDS,
        batch: int = 1000,
        interval_seconds: float = 60.0,
    ) -> None:
        self._store = store
        self._clock = clock
        self._keep_ms = (
            None
            if retention_seconds is None
            else round(max(retention_seconds, idempotency_window_seconds) * 1000)
        )
        self._batch = batch
        self._loop = Periodic(
            "deleting ended tasks", self.once, clock=clock, every_seconds=interval_seconds, log=log
        )

    def cutoff_ms(self) -> int | None:
        """Tasks that ended before this go; None: every task is kept."""
        return None if self._keep_ms is None else self._clock.now_ms() - self._keep_ms

    async def run(self) -> None:
        await self._loop.run()

    async def once(self) -> int:
        """One pass over the tasks created before the cutoff; return how many went."""
        cutoff = self.cutoff_ms()
        if cutoff is None:
            return 0
        deleted, after = 0, 0
        while True:
            pruned = await self._store.delete_ended_tasks(
                ended_before_ms=cutoff, after_seq=after, batch=self._batch
            )
            deleted += pruned.deleted
            if pruned.last_seq is None:
                break
            after = pruned.last_seq
        if deleted:
            log.info("retention deleted %d ended tasks", deleted)
        return deleted


def retention_for(
    store: object,
    *,
    clock: Clock,
    range_seconds: float,
    retention_seconds: float | None,
    idempotency_window_seconds: float,
) -> Retention | RowRetention | None:
    """The retention a store keeps, if it keeps one."""
    if isinstance(store, RangedTaskStore):
        return Retention(
            store=store,
            clock=clock,
            range_seconds=range_seconds,
            retention_seconds=retention_seconds,
        )
    if isinstance(store, PrunedTaskStore):
        return RowRetention(
            store=store,
            clock=clock,
            retention_seconds=retention_seconds,
            idempotency_window_seconds=idempotency_window_seconds,
        )
    return None
