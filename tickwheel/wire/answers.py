"""The API's answers as a client reads them: msgspec structs, decoded from bytes in one
pass.

Light on purpose: a program that only submits imports this, not the API's pydantic
schemas (FastAPI, the engine). `tickwheel/api/schemas/` states the same shapes for
the server; `tests/unit/client/test_answers.py` holds the two to the same fields. A field
the server adds is ignored here until a client reads it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec
from msgspec import Struct


class Answer(Struct, frozen=True):
    """An answer of the API: immutable, compared by value. The answers were pydantic
    models before; `model_dump` and `model_dump_json` still read them the same way."""

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """The answer as a dict: times as `datetime`, or as ISO 8601 text in json mode."""
        kept: tuple[type, ...] = () if mode == "json" else (datetime,)
        content: dict[str, Any] = msgspec.to_builtins(self, builtin_types=kept)
        return content

    def model_dump_json(self) -> str:
        return msgspec.json.encode(self).decode()


class SubmittedOut(Answer, frozen=True):
    task_id: str
    status: str
    due_time: datetime
    schedule_id: str | None = None
    duplicate: bool = False  # True when this answers a repeated idempotency key
    # A task type no live worker has registered, say.
    warnings: list[str] = msgspec.field(default_factory=list)


class BatchOut(Answer, frozen=True):
    tasks: list[SubmittedOut]
    warnings: list[str] = msgspec.field(default_factory=list)  # each said once


class ScheduleOut(Answer, frozen=True):
    type: str
    schedule_id: str | None = None
    cron_expression: str | None = None
    timezone: str | None = None
    jitter_seconds: int | None = None
    misfire_policy: str | None = None
    overlap_policy: str | None = None
    schedule_status: str | None = None
    expires_after_seconds: float | None = None  # each instance's expiry after its fire


class RetryBackoffOut(Answer, frozen=True):
    base_seconds: float
    max_seconds: float


class PredecessorOut(Answer, frozen=True):
    task_id: str
    status: str


class WaitOut(Answer, frozen=True):
    """One thing a task waits on (see the API's `WaitOut`)."""

    reason: str
    message: str
    tasks: list[PredecessorOut] | None = None
    key: str | None = None
    holder: str | None = None
    schedule_id: str | None = None
    due_time: datetime | None = None
    partition: int | None = None
    ahead: int | None = None
    queue: str | None = None
    task_type: str | None = None
    limit: str | None = None


class TaskOut(Answer, frozen=True, kw_only=True):
    task_id: str
    task_type: str
    status: str
    payload: Any
    schedule: ScheduleOut
    queue: str
    priority: int
    max_retries: int
    retry_backoff: RetryBackoffOut
    timeout_seconds: float | None
    idempotency_key: str | None
    ordering_key: str | None = None
    limit_key: str | None = None
    held_by: str | None = None  # the limit holding it back (ready), as scope:name
    expires_at: datetime | None = None  # not started by then, it ends expired
    traceparent: str | None = None  # its submission's trace context, with tracing on
    attempts: int
    fence: int
    due_time: datetime | None
    created_at: datetime
    triggered_at: datetime | None
    started_at: datetime | None
    completed_at: datetime | None
    lease_expires_at: datetime | None
    worker_id: str | None
    last_error: str | None
    current_instance_id: str | None = None
    waiting_on: list[WaitOut] | None = None  # why it has not started (GET of one task)


class TaskPage(Answer, frozen=True):
    tasks: list[TaskOut]
    next_token: str | None


class ExecutionOut(Answer, frozen=True):
    execution_id: int
    task_id: str
    attempt: int
    fence: int
    worker_id: str | None
    started_at: datetime
    ended_at: datetime
    outcome: str
    error: str | None
    retry_at: datetime | None = None  # when this end put the task back: the retry's due


class HistoryPage(Answer, frozen=True):
    executions: list[ExecutionOut]
    next_token: str | None


class CancelledOut(Answer, frozen=True):
    ok: bool
    cancelled_instances: int


class QueuesOut(Answer, frozen=True):
    """Whether submissions are admitted, the backlog that decides it, and each queue's
    depth."""

    backlog: int
    drain_per_second: float
    seconds_to_drain: float | None
    admitting: bool
    max_depth: int
    max_drain_seconds: float
    depth: dict[str, int]


class SkippedOut(Answer, frozen=True):
    task_id: str
    reason: str


class RedriveOut(Answer, frozen=True):
    redriven: list[str]
    skipped: list[SkippedOut]


class ClaimedOut(Answer, frozen=True):
    task_id: str
    task_type: str
    payload: Any
    attempt: int
    fence: int
    idempotency_key: str
    due_time: datetime
    lease_expires_at: datetime
    timeout_seconds: float | None
    expires_at: datetime | None = None  # a worker should not start it after this


class ClaimOut(Answer, frozen=True):
    tasks: list[ClaimedOut]


class LeaseOut(Answer, frozen=True):
    task_id: str
    lease_expires_at: datetime


class AttemptEndOut(Answer, frozen=True):
    task_id: str
    status: str
    retry_at: datetime | None


class HealthOut(Answer, frozen=True):
    ok: bool
    node_id: str
    partitions_owned: int
    wheel_size: int
    ready: dict[str, int]
    inflight: int


class WorkflowNodeOut(Answer, frozen=True, kw_only=True):
    name: str
    task_id: str
    task_type: str
    status: str
    dependencies: list[str]
    ordering_key: str | None = None
    limit_key: str | None = None
    attempts: int
    started_at: datetime | None
    completed_at: datetime | None
    last_error: str | None


class WorkflowOut(Answer, frozen=True):
    workflow_id: str
    name: str
    status: str  # running, succeeded, failed or cancelled
    created_at: datetime
    counts: dict[str, int]  # how many of its tasks are in each status
    tasks: list[WorkflowNodeOut]
    warnings: list[str] = msgspec.field(default_factory=list)  # as on a submitted task


class WorkflowCancelledOut(Answer, frozen=True):
    ok: bool
    cancelled: int


class InstanceOut(Answer, frozen=True):
    task_id: str
    status: str
    due_time: datetime
    ended_at: datetime | None


class ScheduleSummaryOut(Answer, frozen=True):
    schedule_id: str
    task_type: str
    cron_expression: str
    timezone: str
    jitter_seconds: int
    status: str  # active, paused or cancelled
    queue: str
    priority: int
    misfire_policy: str
    overlap_policy: str
    created_at: datetime
    next_fire_time: datetime | None
    current_instance_id: str | None
    last_run: InstanceOut | None


class SchedulePage(Answer, frozen=True):
    schedules: list[ScheduleSummaryOut]
    next_token: str | None


class FireTimeOut(Answer, frozen=True):
    fire_time: datetime  # UTC, jitter included
    local_time: datetime  # the same instant in the schedule's time zone
    clock_change: str | None  # forward or back: since the fire time before
    repeated: bool  # its local time happens twice that day
    note: str | None  # the change and the repetition, in words


class FireTimesOut(Answer, frozen=True):
    cron_expression: str
    timezone: str
    jitter_seconds: int
    fire_times: list[FireTimeOut]
    schedule_id: str | None = None  # set for a stored schedule
    status: str | None = None  # the schedule's: a paused one fires nothing


class LimitOut(Answer, frozen=True):
    """A rate or concurrency limit with its use (see the API's `LimitOut`)."""

    scope: str
    name: str
    rate: str | None
    concurrency: int | None
    started_in_window: int
    running: int
    held: int
    updated_at: datetime


class LimitsOut(Answer, frozen=True):
    limits: list[LimitOut]


class WorkflowSummaryOut(Answer, frozen=True):
    workflow_id: str
    name: str
    status: str
    created_at: datetime
    task_count: int
    counts: dict[str, int]


class WorkflowPage(Answer, frozen=True):
    workflows: list[WorkflowSummaryOut]
    next_token: str | None


class PartitionLeaseOut(Answer, frozen=True):
    partition: int
    epoch: int
    lease_expires_at: datetime


class SchedulerNodeOut(Answer, frozen=True):
    node_id: str
    heartbeat_expires_at: datetime | None  # None: embedded mode, no heartbeat
    partitions: list[PartitionLeaseOut]


class WorkerOut(Answer, frozen=True):
    worker_id: str
    kind: str  # in_process, or http for a worker over the worker protocol
    queues: list[str]
    inflight: int
    concurrency: int | None
    started_at: datetime
    last_heartbeat_at: datetime
    expires_at: datetime
    task_types: list[str] | None = None  # the task types it runs; None: any


class NodesOut(Answer, frozen=True):
    partition_count: int
    unowned_partitions: list[int]
    schedulers: list[SchedulerNodeOut]
    workers: list[WorkerOut]
