"""Reading tasks as users see them: a task's record with its derived `ready` state,
pages of tasks, counts per status and a task's history."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tickwheel.errors import TaskNotFound
from tickwheel.models import ExecutionRecord, ScheduleRecord, Status, TaskRecord
from tickwheel.storage.base import Store, TaskFilter


@dataclass(frozen=True, slots=True)
class TaskView:
    """A task as users see it: its record with the derived `ready` state; for a cron
    task, its schedule and the schedule's current instance."""

    task_id: str
    status: Status
    record: TaskRecord | None
    schedule: ScheduleRecord | None = None


class TaskReads:
    def __init__(
        self, *, store: Store, local_watermark: Callable[[int], int | None] = lambda _: None
    ) -> None:
        self._store = store
        # A partition this node triggers: its watermark here, fresher than the store's.
        self._local_watermark = local_watermark

    async def get(self, task_id: str) -> TaskView:
        record = await self._store.get_task(task_id)
        if record is not None:
            return (await self.views([record]))[0]
        schedule = await self._store.get_schedule(task_id)
        if schedule is None:
            raise TaskNotFound(f"no task has the id {task_id}")
        current = None
        if schedule.current_seq is not None:
            found = await self._store.get_tasks([schedule.current_seq])
            current = found[0] if found else None
        if schedule.status == "cancelled" or current is None:
            return TaskView(task_id, Status.CANCELLED, current, schedule)
        view = (await self.views([current]))[0]
        return replace(view, task_id=task_id, schedule=schedule)

    async def list_tasks(
        self, where: TaskFilter, *, before_seq: int | None, limit: int
    ) -> tuple[list[TaskView], int | None]:
        """A page of tasks, newest first, and the cursor of the next page (None at the end)."""
        wanted = where.statuses
        if Status.READY in wanted and Status.PENDING not in wanted:
            # `ready` is stored as pending: read those, then keep the ones now derived ready.
            where = replace(where, statuses=(*wanted, Status.PENDING))
        records = await self._store.list_tasks(where, before_seq=before_seq, limit=limit)
        views = await self.views(records)
        # The next page starts below the last row read, not the last row kept: a page
        # thinned by the derived-status filter must not end the listing early.
        cursor = records[-1].seq if len(records) == limit else None
        return [v for v in views if v.status in wanted] if wanted else views, cursor

    async def count_by_status(self) -> dict[Status, int]:
        """Tasks per status across the cluster, every status present; `ready` is derived
        from the partitions' watermarks in the store."""
        stored = await self._store.count_by_status()
        counts = {status: stored.get(status, 0) for status in Status}
        counts[Status.PENDING] -= counts[Status.READY]
        return counts

    async def history(
        self, task_id: str, *, before_id: int | None, limit: int
    ) -> list[ExecutionRecord]:
        record = await self._store.get_task(task_id)
        if record is not None:
            return await self._store.history(
                task_seq=record.seq, schedule_id=None, before_id=before_id, limit=limit
            )
        if await self._store.get_schedule(task_id) is None:
            raise TaskNotFound(f"no task has the id {task_id}")
        return await self._store.history(
            task_seq=None, schedule_id=task_id, before_id=before_id, limit=limit
        )

    async def views(self, records: Sequence[TaskRecord]) -> list[TaskView]:
        marks: dict[int, int] = {}
        if any(r.status is Status.PENDING for r in records):
            marks = await self._store.watermarks()
        return [TaskView(r.task_id, self._derived_status(r, marks), r) for r in records]

    def _derived_status(self, record: TaskRecord, marks: dict[int, int]) -> Status:
        if record.status is not Status.PENDING:
            return record.status
        if record.triggered_ms is not None:  # pushed to the ready queue with its commit
            return Status.READY
        local = self._local_watermark(record.partition)
        mark = local if local is not None else marks.get(record.partition, 0)
        return Status.READY if record.due_ms <= mark else Status.PENDING
