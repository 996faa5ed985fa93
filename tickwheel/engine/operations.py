"""Operations: what users do to stored tasks (cancel, re-drive, change a priority,
pause and resume a schedule), and what operators see of a cluster (its scheduler nodes
with their partitions, its workers, the derived state of listed workflows)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from tickwheel.clock import Clock
from tickwheel.engine.reads import TaskReads, TaskView
from tickwheel.engine.schedules import first_due_ms, instance_of
from tickwheel.engine.workflows import derived_status
from tickwheel.errors import Conflict, TaskNotFound
from tickwheel.models import ScheduleRecord, Status, TaskRecord
from tickwheel.storage.base import (
    Advance,
    LeaseHolder,
    LeaseStore,
    Store,
    WorkerRecord,
    WorkerStore,
    WorkflowSummary,
)

MAX_CANCEL_RACES = 5


class ClusterStore(LeaseStore, WorkerStore, Protocol):
    pass


@dataclass(frozen=True, slots=True)
class SchedulerView:
    node_id: str
    heartbeat_expires_ms: int | None  # None: it holds leases without heartbeats (embedded)
    leases: list[LeaseHolder]


@dataclass(frozen=True, slots=True)
class ClusterView:
    partition_count: int
    unowned: list[int]
    schedulers: list[SchedulerView]
    workers: list[WorkerRecord]


async def cluster(store: ClusterStore) -> ClusterView:
    """The scheduler nodes alive, which are those heartbeating and those holding leases
    (an embedded node holds every partition without heartbeating), and the workers
    alive; all by the store's clock."""
    count = await store.partitions()
    holders = await store.lease_holders()
    beating = {n.node_id: n.expires_ms for n in await store.scheduler_nodes()}
    owners = sorted(beating.keys() | {h.owner for h in holders})
    schedulers = [
        SchedulerView(node, beating.get(node), [h for h in holders if h.owner == node])
        for node in owners
    ]
    owned = {h.partition for h in holders}
    unowned = [p for p in range(count) if p not in owned]
    return ClusterView(count, unowned, schedulers, await store.live_workers())


def workflow_status(summary: WorkflowSummary) -> str:
    return derived_status([status for status, n in summary.counts.items() if n])


class TaskOperations:
    """What users do to tasks once stored: cancel, re-drive the failed, change a
    priority, pause and resume a schedule."""

    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        partitions: int,
        reads: TaskReads,
        on_committed: Callable[[], None] = lambda: None,
        on_cancelled: Callable[[TaskRecord], None] = lambda _: None,
        on_ended: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._partitions = partitions
        self._reads = reads
        self._on_committed = on_committed
        self._on_cancelled = on_cancelled
        self._on_ended = on_ended  # a task ended here: its dependents may be told

    async def cancel(self, task_id: str) -> int:
        """Cancel a task, or disable a cron schedule and cancel its pending instance.
        Returns how many instances were cancelled."""
        schedule = await self._store.get_schedule(task_id)
        if schedule is not None:
            # The instance current as the schedule stops, read in the same transaction:
            # an advance racing this cancel either happened before it or cannot happen.
            schedule = await self._store.set_schedule_status(task_id, "cancelled")
            if schedule is None or schedule.current_seq is None:
                return 0
            current = await self._store.get_tasks([schedule.current_seq])
            return int(bool(current) and await self.cancel_record(current[0], quiet=True))
        record = await self._store.get_task(task_id)
        if record is None:
            raise TaskNotFound(f"no task has the id {task_id}")
        return int(await self.cancel_record(record, quiet=False))

    async def cancel_record(self, record: TaskRecord, *, quiet: bool) -> bool:
        for _ in range(MAX_CANCEL_RACES):
            if record.status.is_final:
                if quiet or record.status is Status.CANCELLED:
                    return False  # cancelling twice is no error: a retried cancel is safe
                raise Conflict(f"task {record.task_id} is already {record.status}")
            if await self._store.cancel(record.seq, record.version, self._clock.now_ms()):
                if record.status is Status.PENDING:
                    self._on_cancelled(record)
                self._on_ended()
                return True
            fresh = await self._store.get_task(record.task_id)
            assert fresh is not None
            record = fresh
        raise Conflict(f"task {record.task_id} kept changing; try again")

    async def redrive(self, task_ids: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        """Failed tasks back to pending, due now, attempts reset. Returns the ids re-driven
        and, for the others, why not."""
        found: list[TaskRecord] = []
        skipped: dict[str, str] = {}
        for task_id in dict.fromkeys(task_ids):
            record = await self._store.get_task(task_id)
            if record is None:
                skipped[task_id] = "no task has this id"
            elif record.status is not Status.FAILED:
                skipped[task_id] = f"it is {record.status}, not failed"
            else:
                found.append(record)
        done = await self._store.redrive([(r.seq, r.version) for r in found], self._clock.now_ms())
        for record, ok in zip(found, done, strict=True):
            if not ok:
                skipped[record.task_id] = "it changed meanwhile; try again"
        self._on_committed()
        return [r.task_id for r, ok in zip(found, done, strict=True) if ok], skipped

    async def set_priority(self, task_id: str, priority: int) -> TaskView:
        record = await self._store.get_task(task_id)
        if record is None:
            raise TaskNotFound(f"no task has the id {task_id}")
        if record.status is not Status.PENDING:
            raise Conflict(
                f"task {task_id} is {record.status}: only a pending task's priority changes"
            )
        if not await self._store.set_priority(record.seq, record.version, priority):
            raise Conflict(f"task {task_id} changed meanwhile; try again")
        self._on_cancelled(record)  # its wheel entry carries the old priority
        self._on_committed()  # the loader puts it back with the new one
        return await self._reads.get(task_id)

    async def pause(self, schedule_id: str) -> TaskView:
        """Stop a recurring schedule: its pending instance is cancelled (a running one
        finishes, and the schedule does not advance past it)."""
        await self._schedule(schedule_id)
        paused = await self._store.set_schedule_status(
            schedule_id, "paused", only_from={"active", "paused"}
        )
        if paused is None:
            raise Conflict(f"schedule {schedule_id} is cancelled")
        if paused.current_seq is not None:
            current = await self._store.get_tasks([paused.current_seq])
            if current and current[0].status is Status.PENDING:
                await self.cancel_record(current[0], quiet=True)
        return await self._reads.get(schedule_id)

    async def resume(self, schedule_id: str) -> TaskView:
        """Start a paused schedule again from its next fire time after now; an active
        one stays as it is (so a retried resume is safe)."""
        schedule = await self._schedule(schedule_id)
        if schedule.status == "active":
            return await self._reads.get(schedule_id)
        active = await self._store.set_schedule_status(schedule_id, "active", only_from={"paused"})
        if active is None:  # resumed or cancelled just before
            if (await self._schedule(schedule_id)).status == "active":
                return await self._reads.get(schedule_id)
            raise Conflict(f"schedule {schedule_id} is cancelled, not paused")
        now = self._clock.now_ms()
        nxt = instance_of(active, first_due_ms(active, now), now, self._partitions)
        # A user's request, served by any node: no partition owner's write, so no fence.
        if (await self._store.advance_schedules([Advance(active, nxt, None, None)]))[0] is None:
            raise Conflict(f"schedule {schedule_id} changed meanwhile; try again")
        self._on_committed()
        return await self._reads.get(schedule_id)

    async def _schedule(self, schedule_id: str) -> ScheduleRecord:
        schedule = await self._store.get_schedule(schedule_id)
        if schedule is None:
            raise TaskNotFound(f"no recurring task has the id {schedule_id}")
        return schedule
