"""Why a task is not running: what it waits on, each cause with a short message.

Asked of one task at a time (its page, `GET /api/tasks/{id}`), so each cause may cost
a read: the predecessors not yet succeeded, the holder of its ordering key, a paused
schedule, a due time to come (or, past it, no scheduler holding its partition to
release it), the tasks queued with it once it is ready, and whether
any live worker takes its queue and type (`Workforce`, at most a second old). A task
that runs or has ended waits on nothing (None); a paused schedule waits on its resume.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from tickwheel.clock import Clock, to_datetime
from tickwheel.engine.reads import TaskView
from tickwheel.engine.workforce import Workforce
from tickwheel.models import Status, TaskRecord
from tickwheel.storage.base import ClusterViewStore, Predecessor, TaskReadStore

log = logging.getLogger(__name__)


class WaitStore(TaskReadStore, ClusterViewStore, Protocol):
    """What the causes are read from: a task's links, and who holds the partitions."""


class Reason(StrEnum):
    PREDECESSORS = "predecessors"  # tasks that must succeed first
    ORDERING_KEY = "ordering_key"  # an earlier task of its key runs first
    SCHEDULE_PAUSED = "schedule_paused"  # its schedule fires again once resumed
    DUE = "due"  # not due yet, or due and about to be released to the ready queue
    NO_SCHEDULER = "no_scheduler"  # due, but no scheduler holds its partition to release it
    QUEUED = "queued"  # ready: in the ready queue with others
    LIMIT = "limit"  # ready, held back by a rate or concurrency limit
    NO_WORKER = "no_worker"  # no live worker takes its queue and type


@dataclass(frozen=True, slots=True)
class Wait:
    """One thing a task waits on; the fields its reason names are set."""

    reason: Reason
    message: str
    tasks: tuple[Predecessor, ...] = ()  # predecessors
    key: str | None = None  # ordering_key
    holder: str | None = None  # ordering_key: the id of the task holding it, if one does
    schedule_id: str | None = None  # schedule_paused
    due_ms: int | None = None  # due
    partition: int | None = None  # no_scheduler
    ahead: int | None = None  # queued: at most this many tasks before it
    queue: str | None = None  # queued, no_worker
    task_type: str | None = None  # no_worker
    limit: str | None = None  # limit: the limit holding it, as scope:name


class Waits:
    def __init__(
        self,
        *,
        store: WaitStore,
        clock: Clock,
        workforce: Workforce,
        depth: Callable[[], Awaitable[dict[str, int]]],
    ) -> None:
        """`depth`: the ready queue's depth per queue, asked now."""
        self._store = store
        self._clock = clock
        self._workforce = workforce
        self._depth = depth

    async def of(self, view: TaskView) -> list[Wait] | None:
        """What the task of `view` waits on, most telling first; None once it runs or
        has ended."""
        schedule, record = view.schedule, view.record
        if schedule is not None and schedule.status == "paused":
            message = "its schedule is paused: it fires again once resumed"
            return [Wait(Reason.SCHEDULE_PAUSED, message, schedule_id=schedule.schedule_id)]
        if record is None or view.status is Status.RUNNING or view.status.is_final:
            return None
        waits = []
        if view.status is Status.BLOCKED:
            waits.append(await self._predecessors(record))
        if view.status is Status.WAITING and record.ordering_key is not None:
            waits.append(await self._ordering_key(record, record.ordering_key))
        if view.status is Status.PENDING:
            waits.append(await self._due(record))
        if view.status is Status.READY and record.held_by is not None:
            waits.append(_held(record.held_by))
        elif view.status is Status.READY:
            waits.append(await self._queued(record))
        queue, task_type = record.options.queue, record.task_type
        if await self._workforce.takes(queue, task_type) is False:
            message = f"no live worker takes tasks of type {task_type!r} from queue {queue!r}"
            waits.append(Wait(Reason.NO_WORKER, message, queue=queue, task_type=task_type))
        return waits

    async def _predecessors(self, record: TaskRecord) -> Wait:
        found = await self._store.predecessors(record.seq)
        waiting = tuple(p for p in found if p.status is not Status.SUCCEEDED)
        if waiting:
            listed = ", ".join(f"{p.task_id} ({p.status})" for p in waiting)
            message = f"waits on {len(waiting)} predecessor(s) not yet succeeded: {listed}"
        else:
            message = "its predecessors have all succeeded: it is released in a moment"
        return Wait(Reason.PREDECESSORS, message, tasks=waiting)

    async def _ordering_key(self, record: TaskRecord, key: str) -> Wait:
        holder = await self._store.ordering_key_holder(key)
        if holder is None or holder == record.task_id:
            message = f"its turn on ordering key {key!r} comes in a moment"
            return Wait(Reason.ORDERING_KEY, message, key=key, holder=None)
        message = f"waits for task {holder}, which holds ordering key {key!r}, to end"
        return Wait(Reason.ORDERING_KEY, message, key=key, holder=holder)

    async def _due(self, record: TaskRecord) -> Wait:
        """Not due yet; or due, and released to the ready queue by the scheduler that
        holds its partition, if one does."""
        due = to_datetime(record.due_ms)
        assert due is not None
        if record.due_ms > self._clock.now_ms():
            return Wait(Reason.DUE, f"not due until {due.isoformat()}", due_ms=record.due_ms)
        held = {h.partition for h in await self._store.lease_holders()}
        if record.partition not in held:
            message = f"due, but no scheduler holds its partition {record.partition} to release it"
            return Wait(Reason.NO_SCHEDULER, message, partition=record.partition)
        message = f"due since {due.isoformat()}: its scheduler releases it in a moment"
        return Wait(Reason.DUE, message, due_ms=record.due_ms)

    async def _queued(self, record: TaskRecord) -> Wait:
        queue = record.options.queue
        try:
            depth = (await self._depth()).get(queue, 0)
        except Exception:  # the queue does not answer: its page still shows the rest
            log.debug("the ready queue's depth could not be read", exc_info=True)
            depth = 0
        ahead = max(depth - 1, 0)
        message = f"ready: at most {ahead} task(s) ahead of it in queue {queue!r}"
        return Wait(Reason.QUEUED, message, ahead=ahead, queue=queue)


def _held(limit_id: str) -> Wait:
    scope, name = limit_id.split(":", 1)
    message = (
        f"held back by the limit on {scope.replace('_', ' ')} {name!r}: it starts, in "
        "priority and due order, as the limit allows"
    )
    return Wait(Reason.LIMIT, message, limit=limit_id)
