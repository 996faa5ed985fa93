"""The worker protocol for workers in any language, over the API.

A remote worker claims a batch with a long poll, then heartbeats, completes or fails
each task presenting the fence it was given. A stale fence (the lease ran out and the
task was taken over, or it was cancelled) changes nothing and raises `StaleFence`.
A result sent again with the same fence (the worker lost the first answer) gets the
first answer again, however far the task moved on since (the answer is kept on the
attempt's execution row), so a worker may retry any call. Every refusal is logged, at
most one line per 10 s when they come in floods.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import NoReturn, Protocol

from tickwheel.attempt_log import log_failed_attempt
from tickwheel.clock import Clock
from tickwheel.engine import attempts
from tickwheel.engine.dispatch import Dispatcher
from tickwheel.engine.presence import Sightings
from tickwheel.errors import StaleFence, TaskNotFound
from tickwheel.log_tally import LogTally
from tickwheel.models import ClaimedTask, ExecutionRecord, Outcome, Status, TaskRecord
from tickwheel.queue.base import ReadyItem, ReadyQueue
from tickwheel.storage.base import TaskStore, WorkerStore

log = logging.getLogger(__name__)

# How many items of other task types a claim filtered by type looks past for its own.
TYPE_SCAN_DEPTH = 256


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
        self._refusals = LogTally(log)

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
        await self._sightings.seen(worker_id, queues, task_types)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while True:
            remaining = max(0.0, deadline - loop.time())
            if task_types is None:
                items = await self._queue.pull(queues, limit=max_tasks, wait_seconds=remaining)
                put_back = 0
            else:
                items, put_back = await self._pull_only(queues, task_types, max_tasks, remaining)
            claimed = (await self._dispatcher.claim(items, worker_id)).tasks
            if claimed or loop.time() >= deadline:
                return claimed
            if put_back and not items:  # only other workers' types are waiting: back off
                await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))

    async def _pull_only(
        self,
        queues: Collection[str],
        task_types: Collection[str],
        max_tasks: int,
        wait_seconds: float,
    ) -> tuple[list[ReadyItem], int]:
        """Up to `max_tasks` items of these task types, and how many items it put back.

        The queue knows no task types: this pulls deeper, past up to about
        `TYPE_SCAN_DEPTH` items of other types, then puts every item it does not take
        back at the head of its lane, in the order pulled, so a filtered claim never
        moves other types' tasks behind later ones (nor bounces them between workers of
        disjoint types). A worker whose tasks wait deeper waits for the others' workers."""
        pulled: list[ReadyItem] = []
        mine: list[ReadyItem] = []
        try:
            limit, wait = max_tasks, wait_seconds
            while len(mine) < max_tasks and len(pulled) - len(mine) < TYPE_SCAN_DEPTH:
                items = await self._queue.pull(queues, limit=limit, wait_seconds=wait)
                if not items:
                    break
                pulled += items
                types = await self._task_types(items)
                mine += [i for i in items if types.get(i.seq) in task_types]
                if gone := {i.seq for i in items} - types.keys():  # deleted: dropped
                    pulled = [i for i in pulled if i.seq not in gone]
                limit, wait = max(max_tasks, min(2 * limit, TYPE_SCAN_DEPTH)), 0.0
        except BaseException:
            await self._queue.put_back(pulled)
            raise
        mine = mine[:max_tasks]
        taken = {i.seq for i in mine}
        left = [i for i in pulled if i.seq not in taken]
        await self._queue.put_back(left)
        return mine, len(left)

    async def _task_types(self, items: list[ReadyItem]) -> dict[int, str]:
        """seq -> task type of the items whose task still exists."""
        return {t.seq: t.task_type for t in await self._store.get_tasks([i.seq for i in items])}

    async def heartbeat(self, task_id: str, fence: int) -> int:
        """Extend the lease; return its new expiry (ms)."""
        record = await self._running(task_id, fence)
        if await self._dispatcher.heartbeat({record.seq: fence}):
            self._stale(record, fence, "heartbeat")
        if record.worker_id is not None:
            await self._sightings.seen(record.worker_id)
        return self._clock.now_ms() + self._dispatcher.lease_ms

    async def complete(self, task_id: str, fence: int) -> None:
        record = await self._task(task_id)
        if _running_at(record, fence):
            end = attempts.succeeded(
                record.seq, fence, self._clock.now_ms(), started_ms=record.started_ms
            )
            if await self._dispatcher.finish(end):
                return
        await self._first_end(record, fence, Outcome.SUCCEEDED)

    async def fail(self, task_id: str, fence: int, *, error: str, retryable: bool) -> AttemptEnd:
        record = await self._task(task_id)
        if _running_at(record, fence):
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
            claimed = _claimed(record, fence)
            if await self._dispatcher.finish(end, claimed):
                log_failed_attempt(log, claimed, end)
                return AttemptEnd(end.status, end.retry_at_ms)
        first = await self._first_end(record, fence, Outcome.FAILED)
        if first.retry_at_ms is not None:
            return AttemptEnd(Status.PENDING, first.retry_at_ms)
        return AttemptEnd(Status.FAILED, None)

    async def _task(self, task_id: str) -> TaskRecord:
        record = await self._store.get_task(task_id)
        if record is None:
            raise TaskNotFound(f"no task has the id {task_id}")
        return record

    async def _running(self, task_id: str, fence: int) -> TaskRecord:
        record = await self._task(task_id)
        if not _running_at(record, fence):
            self._stale(record, fence, "heartbeat")
        return record

    async def _first_end(self, record: TaskRecord, fence: int, outcome: Outcome) -> ExecutionRecord:
        """The end this attempt already has, when this result is a repeat of it (the
        worker lost the answer, or a copy sent at once won the compare-and-set),
        however far the task has moved on since; else `StaleFence`."""
        first = await self._store.execution_at(record.seq, fence)
        if first is None or first.outcome is not outcome:
            self._stale(record, fence, str(outcome))
        return first

    def _stale(self, record: TaskRecord, fence: int, call: str) -> NoReturn:
        self._refusals.log(
            logging.WARNING,
            "stale fence",
            "%s refused: fence %d of task %s is stale (task is %s at fence %d)",
            call,
            fence,
            record.task_id,
            record.status,
            record.version,
            extra={"task_id": record.task_id, "fence": fence},
        )
        raise StaleFence(f"fence {fence} of task {record.task_id} is stale")


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    """What became of a failed attempt: pending again at `retry_at_ms`, or failed."""

    status: Status
    retry_at_ms: int | None


def _running_at(record: TaskRecord, fence: int) -> bool:
    return record.status is Status.RUNNING and record.version == fence


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
        expires_ms=record.expires_ms,
    )
