"""The reaper: attempts whose lease ran out (the worker died or stalled) end here.

An expired lease counts as an attempt: the task goes back to pending after its
backoff while retries remain, else it fails for good. The write is fenced like a
worker's, so a worker that heartbeats at the last moment wins cleanly.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from tickwheel.clock import Clock
from tickwheel.engine import attempts
from tickwheel.engine.dispatch import Dispatcher
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.models import Outcome
from tickwheel.periodic import Periodic
from tickwheel.storage.base import DispatchStore

log = logging.getLogger(__name__)


class Reaper:
    def __init__(
        self,
        *,
        store: DispatchStore,
        dispatcher: Dispatcher,
        trigger: TriggerEngine,
        clock: Clock,
        interval_seconds: float = 1.0,
        batch: int = 1000,
    ) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._trigger = trigger
        self._clock = clock
        self._batch = batch
        self._loop = Periodic(
            "reaping expired leases",
            self.reap_once,
            clock=clock,
            every_seconds=interval_seconds,
            log=log,
        )

    async def run(self) -> None:
        await self._loop.run()

    async def reap_once(self) -> int:
        partitions = self._trigger.partitions
        if not partitions:
            return 0
        now = self._clock.now_ms()
        expired = await self._store.expired_leases(partitions, now_ms=now, limit=self._batch)
        ends = [
            replace(
                attempts.failed(
                    t.seq,
                    t.version,
                    attempt=t.attempts,
                    options=t.options,
                    outcome=Outcome.LEASE_EXPIRED,
                    error=f"lease expired: worker {t.worker_id} stopped heartbeating",
                    now_ms=now,
                    started_ms=t.started_ms,
                ),
                lease_expired_before=now,
            )
            for t in expired
        ]
        written = await self._dispatcher.finish_many(ends)
        self._dispatcher.requeue(
            [
                (end, t.task_id, t.options.queue, t.options.priority)
                for end, t, ok in zip(ends, expired, written, strict=True)
                if ok
            ]
        )
        for t in expired:
            log.warning("lease expired", extra={"task_id": t.task_id, "worker_id": t.worker_id})
        return sum(written)
