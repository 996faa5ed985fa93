"""The task service: submit, read and operate on tasks, whatever the deployment.

One object for the API and the node over the three jobs, each in its own module:
`submission` (checks, group commit, idempotency), `reads` (derived status, pages,
history) and `operations` (cancel, re-drive, priority, pause, resume).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tickwheel.clock import Clock
from tickwheel.engine.operations import TaskOperations
from tickwheel.engine.reads import TaskReads, TaskView
from tickwheel.engine.submission import Submissions, Submitted
from tickwheel.engine.workforce import Workforce
from tickwheel.models import TaskRecord
from tickwheel.queue.base import ReadyItem
from tickwheel.storage.base import Store
from tickwheel.wire.requests import ScheduleRequest, TaskRequest

# Named here too for callers of the old addresses (the requests live below the engine).
__all__ = ["ScheduleRequest", "Submitted", "TaskRequest", "TaskService", "TaskView"]


class TaskService:
    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        partitions: int,
        on_committed: Callable[[], None] = lambda: None,
        on_cancelled: Callable[[TaskRecord], None] = lambda _: None,
        on_ended: Callable[[], None] = lambda: None,
        check_payload: Callable[[str, Any], None] = lambda task_type, payload: None,
        local_watermark: Callable[[int], int | None] = lambda _: None,
        push_ready: Callable[[list[ReadyItem]], Awaitable[None]] | None = None,
        workforce: Workforce | None = None,
        strict_task_types: bool = False,
        max_payload_bytes: int = 256 * 1024,
        idempotency_window_seconds: float = 86400.0,
    ) -> None:
        self.reads = r = TaskReads(store=store, local_watermark=local_watermark)
        self.submissions = s = Submissions(
            store=store,
            clock=clock,
            partitions=partitions,
            reads=r,
            on_committed=on_committed,
            check_payload=check_payload,
            push_ready=push_ready,
            workforce=workforce,
            strict_task_types=strict_task_types,
            max_payload_bytes=max_payload_bytes,
            idempotency_window_seconds=idempotency_window_seconds,
        )
        self.operations = o = TaskOperations(
            store=store,
            clock=clock,
            partitions=partitions,
            reads=r,
            on_committed=on_committed,
            on_cancelled=on_cancelled,
            on_ended=on_ended,
        )
        self.submit, self.submit_many, self.new_task = s.submit, s.submit_many, s.new_task
        self.check_task_types = s.check_task_types
        self.get, self.views, self.list_tasks = r.get, r.views, r.list_tasks
        self.count_by_status, self.history = r.count_by_status, r.history
        self.cancel, self.cancel_record, self.redrive = o.cancel, o.cancel_record, o.redrive
        self.set_priority, self.pause, self.resume = o.set_priority, o.pause, o.resume
