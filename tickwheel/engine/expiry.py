"""Expiry: a task not started by its `expires_at` ends `expired` (issue 17).

Claims refuse a task past its expiry, so late work never starts; this loop gives such
tasks their final status, once a second, in the partitions this node triggers. Pending,
waiting (behind an ordering key) and blocked (on dependencies) tasks all expire; a
running one has started and is not touched. The end is told to dependents and ordering
keys as any end is: the store queues the news in the same transaction, and the resolver
is nudged to pass it on now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tickwheel.clock import Clock
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.metrics.recorder import Event, Recorder
from tickwheel.periodic import Periodic
from tickwheel.storage.base import AttemptStore

log = logging.getLogger(__name__)


class Expiry:
    def __init__(
        self,
        *,
        store: AttemptStore,
        trigger: TriggerEngine,
        clock: Clock,
        on_ended: Callable[[], None],
        metrics: Recorder,
        interval_seconds: float = 1.0,
        batch: int = 1000,
    ) -> None:
        self._store = store
        self._trigger = trigger  # whose partitions this node owns
        self._clock = clock
        self._on_ended = on_ended
        self._metrics = metrics
        self._batch = batch
        self._loop = Periodic(
            "ending expired tasks",
            self.expire_once,
            clock=clock,
            every_seconds=interval_seconds,
            log=log,
        )

    async def run(self) -> None:
        await self._loop.run()

    async def expire_once(self) -> int:
        """End every task of this node's partitions whose expiry has come; how many."""
        total = 0
        while partitions := self._trigger.partitions:
            now = self._clock.now_ms()
            ended = await self._store.expire_unstarted(partitions, now_ms=now, limit=self._batch)
            total += len(ended)
            for task in ended:
                log.debug("task expired before it started", extra={"task_id": task.task_id})
            if len(ended) < self._batch:
                break
        if total:
            self._metrics.count(Event.EXPIRED, total)
            self._on_ended()
            log.info("%d tasks expired before they could start", total)
        return total
