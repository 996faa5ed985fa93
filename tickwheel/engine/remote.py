"""The worker protocol for workers in any language, over the API.

A remote worker claims a batch with a long poll, then heartbeats, completes or fails
each task presenting the fence it was given. A stale fence (the lease ran out and the
task was taken over, or it was cancelled) changes nothing and raises `StaleFence`.
A result sent again with the same fence (the worker lost the first answer) gets the
first answer again, so a worker may retry any call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from tickwheel.clock import Clock
from tickwheel.engine import attempts
from tickwheel.engine.dispatch import Dispatcher
from tickwheel.engine.presence import Sightings
from tickwheel.errors import StaleFence, TaskNotFound
from tickwheel.models import ClaimedTask, Outcome, Status, TaskRecord
from tickwheel.queue.base import ReadyItem, ReadyQueue
from tickwheel.storage.base import TaskStore, WorkerStore


class RemoteStore(TaskStore, WorkerStore, Protocol):
    pass


class RemoteWorkers:
    def __init__(
        self, *, store: RemoteStore, queue: ReadyQueue, dispatcher: Dispatcher, clock: Clock
    ) -> None:
        self._store = store
        self._queue = queue
        self._dispatcher = dispatcher
        self._clock = clock
        self._sightings = Sightings(store=store, clock=clock)

    async def claim(
        self,
        worker_id: str,
        *,
        queues: Collection[str],
        task_types: Collection[str] | None,
        max_tasks: int,
        wait_seconds: float,
    ) -> list[ClaimedTask]:
        """Claim up to `max_tasks` due tasks, waiting up to `wait_seconds` for the first."""
        await self._sightings.seen(worker_id, queues)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while True:
            remaining = max(0.0, deadline - loop.time())
            items = await self._queue.pull(queues, limit=max_tasks, wait_seconds=remaining)
            pulled = bool(items)
            if task_types is not None:
                items = await self._only(items, task_types)
            claimed = await self._dispatcher.claim(items, worker_id)
            if claimed or loop.time() >= deadline:
                return claimed
            if pulled and not items:  # only other workers' types are waiting: back off
                await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))

    async def _only(self, items: list[ReadyItem], task_types: Collection[str]) -> list[ReadyItem]:
        """Keep the items of these task types; put the others back on the queue."""
        if not items:
            return items
        types = {t.seq: t.task_type for t in await self._store.get_tasks([i.seq for i in items])}
        mine = [i for i in items if types.get(i.seq) in task_types]
        others = [i for i in items if i.seq in types and types[i.seq] not in task_types]
        await self._queue.push(others)
        return mine

    async def heartbeat(self, task_id: str, fence: int) -> int:
        """Extend the lease; return its new expiry (ms)."""
        record = await self._running(task_id, fence)
        if await self._dispatcher.heartbeat({record.seq: fence}):
            raise StaleFence(f"fence {fence} of task {task_id} is stale")
        if record.worker_id is not None:
            await self._sightings.seen(record.worker_id)
        return self._clock.now_ms() + self._dispatcher.lease_ms

    async def complete(self, task_id: str, fence: int) -> None:
        record = await self._task(task_id)
        if await self._ended(record, fence, Outcome.SUCCEEDED):
            return
        _check_running(record, fence)
        end = attempts.succeeded(
            record.seq, fence, self._clock.now_ms(), started_ms=record.started_ms
        )
        if not await self._dispatcher.finish(end):
            await self._repeat_or_stale(task_id, fence, Outcome.SUCCEEDED)

    async def fail(self, task_id: str, fence: int, *, error: str, retryable: bool) -> AttemptEnd:
        record = await self._task(task_id)
        if await self._ended(record, fence, Outcome.FAILED):
            return _end_of(record)
        _check_running(record, fence)
        end = attempts.failed(
            record.seq,
            fence,
            attempt=record.attempts,
            options=record.options,
            outcome=Outcome.FAILED,
            error=error,
            now_ms=self._clock.now_ms(),
            retryable=retryable,
            started_ms=record.started_ms,
        )
        if not await self._dispatcher.finish(end, _claimed(record, fence)):
            return _end_of(await self._repeat_or_stale(task_id, fence, Outcome.FAILED))
        return AttemptEnd(end.status, end.retry_at_ms)

    async def _task(self, task_id: str) -> TaskRecord:
        record = await self._store.get_task(task_id)
        if record is None:
            raise TaskNotFound(f"no task has the id {task_id}")
        return record

    async def _running(self, task_id: str, fence: int) -> TaskRecord:
        record = await self._task(task_id)
        _check_running(record, fence)
        return record

    async def _ended(self, record: TaskRecord, fence: int, outcome: Outcome) -> bool:
        """Whether the attempt of `fence` already ended with `outcome` and nothing has
        happened to the task since: the call is a repeat."""
        if record.version != fence + 1:
            return False
        last = await self._store.history(
            task_seq=record.seq, schedule_id=None, before_id=None, limit=1
        )
        return bool(last) and last[0].fence == fence and last[0].outcome is outcome

    async def _repeat_or_stale(self, task_id: str, fence: int, outcome: Outcome) -> TaskRecord:
        """After a lost compare-and-set: the record, if a concurrent repeat of this very
        call won it; else `StaleFence`."""
        record = await self._task(task_id)
        if not await self._ended(record, fence, outcome):
            raise StaleFence(f"fence {fence} of task {task_id} is stale")
        return record


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    """What became of a failed attempt: pending again at `retry_at_ms`, or failed."""

    status: Status
    retry_at_ms: int | None


def _end_of(record: TaskRecord) -> AttemptEnd:
    retry_at = record.due_ms if record.status is Status.PENDING else None
    return AttemptEnd(record.status, retry_at)


def _check_running(record: TaskRecord, fence: int) -> None:
    if record.status is not Status.RUNNING or record.version != fence:
        raise StaleFence(f"fence {fence} of task {record.task_id} is stale")


def _claimed(record: TaskRecord, fence: int) -> ClaimedTask:
    return ClaimedTask(
        seq=record.seq,
        task_id=record.task_id,
        task_type=record.task_type,
        payload=record.payload,
        attempt=record.attempts,
        fence=fence,
        due_ms=record.due_ms,
        lease_expires_ms=record.lease_expires_ms or 0,
        timeout_seconds=record.options.timeout_seconds,
        options=record.options,
    )
