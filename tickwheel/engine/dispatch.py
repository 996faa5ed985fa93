"""Claims, heartbeats and ends of attempts: the engine side of a worker's lease.

A claim turns due pending tasks into running ones with one compare-and-set; the new
version is the fence. Heartbeats and completions present the fence and are refused
when it is stale, so a worker that paused past its lease cannot overwrite the result
of the attempt that replaced it. Ends of attempts from all workers are group-committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from tickwheel.clock import Clock
from tickwheel.engine import attempts
from tickwheel.engine.batcher import Batcher
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.ids import partition_of
from tickwheel.metrics.recorder import Recorder
from tickwheel.models import ClaimedTask, Finish, Outcome, Status, WheelEntry
from tickwheel.outage import log_failure
from tickwheel.queue.base import ReadyItem
from tickwheel.storage.base import DispatchStore
from tickwheel.storage.records import Claimed

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(
        self,
        *,
        store: DispatchStore,
        trigger: TriggerEngine,
        clock: Clock,
        partitions: int,
        lease_seconds: float = 30.0,
        on_ended: Callable[[], None] = lambda: None,
        metrics: Recorder | None = None,
    ) -> None:
        self._store = store
        self._metrics = metrics or Recorder(clock)
        self._trigger = trigger
        self._clock = clock
        self._partitions = partitions
        self.lease_ms = round(lease_seconds * 1000)
        self._finishes: Batcher[Finish, bool] = Batcher(self._write_finishes)
        self._on_ended = on_ended

    async def claim(
        self, items: Sequence[ReadyItem], worker_id: str, *, start_now: int | None = None
    ) -> Claimed:
        """Claim the released tasks still due, within their limits; `start_now`: how many
        tasks under a limit the claimer can start at once (the others admitted go back
        on the ready queue, `deferred`, so that a task counted against a rate starts when
        it is counted)."""
        if not items:
            return Claimed([], [])
        now_ms = self._clock.now_ms()
        found = await self._store.claim_some(
            [(i.seq, i.triggered_ms) for i in items],
            now_ms=now_ms,
            lease_ms=self.lease_ms,
            worker_id=worker_id,
            start_now=start_now,
        )
        claimed = found.tasks
        if found.deferred:
            deferred = set(found.deferred)
            try:
                await self._trigger.put_back([i for i in items if i.seq in deferred])
            except Exception as error:  # still pending: the reconciler releases them again
                log_failure(log, error, "could not put %d deferred tasks back", len(deferred))
        self._metrics.started(claimed, now_ms)
        # In the order pulled (priority first, then release), not the store's row order;
        # those under a limit first, as they were admitted to start now.
        order = {item.seq: n for n, item in enumerate(items)}
        claimed.sort(key=lambda task: (task.seq not in found.limited, order[task.seq]))
        if len(claimed) < len(items) - len(found.deferred):
            # Some were cancelled, or wait behind their ordering key; a claim that found
            # a key's holder ended may have handed it on: let the loader look now.
            self._trigger.poke()
        return Claimed(claimed, found.deferred, found.limited)

    async def heartbeat(self, fences: Mapping[int, int]) -> set[int]:
        """Extend the leases; return the seqs whose fence is stale (cancelled or taken over)."""
        if not fences:
            return set()
        return await self._store.extend_leases(
            fences, until_ms=self._clock.now_ms() + self.lease_ms
        )

    def now_ms(self) -> int:
        """The cluster's time, by which leases run out."""
        return self._clock.now_ms()

    def succeeded(self, task: ClaimedTask) -> Finish:
        """The end of an attempt that succeeded, to `finish`."""
        now_ms = self._clock.now_ms()
        return attempts.succeeded(task.seq, task.fence, now_ms, started_ms=self._started(task))

    def expired(self, task: ClaimedTask) -> Finish | None:
        """The end of an attempt whose task's expiry has come before it started, if it has."""
        now_ms = self._clock.now_ms()
        if task.expires_ms is None or now_ms < task.expires_ms:
            return None
        return attempts.expired(task.seq, task.fence, now_ms, started_ms=self._started(task))

    def failed(
        self, task: ClaimedTask, error: str, *, outcome: Outcome = Outcome.FAILED, retryable: bool
    ) -> Finish:
        """The end of an attempt that failed (a retry after a backoff, or for good)."""
        return attempts.failed(
            task.seq,
            task.fence,
            attempt=task.attempt,
            options=task.options,
            outcome=outcome,
            error=error,
            now_ms=self._clock.now_ms(),
            retryable=retryable,
            started_ms=self._started(task),
        )

    def _started(self, task: ClaimedTask) -> int:
        # This dispatcher's claim set the lease to its start plus `lease_ms`.
        return task.lease_expires_ms - self.lease_ms

    async def finish(self, end: Finish, task: ClaimedTask | None = None) -> bool:
        """Write the end of an attempt; False when the fence was stale (nothing changed)."""
        written = await self._finishes.submit(end)
        if written and end.retry_at_ms is not None and task is not None:
            self.requeue([(end, task.task_id, task.options.queue, task.options.priority)])
        return written

    def requeue(self, retries: Sequence[tuple[Finish, str, str, int]]) -> None:
        """Put tasks that went back to pending on their wheel (if this node owns it)."""
        self._trigger.offer(
            WheelEntry(
                end.seq,
                partition_of(task_id, self._partitions),
                end.retry_at_ms,
                queue,
                priority,
                False,
            )
            for end, task_id, queue, priority in retries
            if end.retry_at_ms is not None and end.status is Status.PENDING
        )

    async def finish_many(self, ends: Sequence[Finish]) -> list[bool]:
        return await self._finishes.submit_many(ends)

    async def _write_finishes(self, ends: list[Finish]) -> list[bool]:
        written = await self._store.finish(ends)
        self._metrics.ended(ends, written)
        self._on_ended()
        return written
