"""Request and response bodies of the HTTP API, validated at the edge.

Every limit a client controls is stated here, so bad input is a 4xx naming its field
and never reaches the engine.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic import Strict as StrictValues

from tickwheel.core import cron
from tickwheel.ids import UUID_PATTERN
from tickwheel.models import (
    MAX_DELAY_SECONDS,
    MAX_DEPENDENCIES,
    MAX_JITTER_SECONDS,
    MAX_ORDERING_KEY_LENGTH,
    MAX_TIMEOUT_SECONDS,
    PRIORITY_MAX,
    PRIORITY_MIN,
    reserved_name,
)

# Numbers and flags are strict: JSON `true` is not 1, and "5" is not 5.
StrictInt = Annotated[int, StrictValues()]
StrictFloat = Annotated[float, StrictValues()]  # an integer is still a number
StrictBool = Annotated[bool, StrictValues()]


def _not_a_number(value: Any) -> Any:
    """A time in a query is ISO 8601: pydantic would also read a number as a Unix time."""
    if isinstance(value, int | float) or (
        isinstance(value, str) and re.fullmatch(r"\s*[+-]?[\d.]+(e[+-]?\d+)?\s*", value, re.I)
    ):
        raise ValueError("an ISO 8601 date and time with a time zone, not a number")
    return value


# A time given in a query string, such as `created_after`.
IsoDatetime = Annotated[AwareDatetime, BeforeValidator(_not_a_number)]

MAX_BATCH_TASKS = 10_000
EARLIEST_DUE = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_DUE = datetime(9000, 1, 1, tzinfo=UTC)
NAME_PATTERN = r"^[A-Za-z0-9_.:\-]+$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetryBackoffIn(Strict):
    base_seconds: StrictFloat = Field(1.0, gt=0, le=86400)
    max_seconds: StrictFloat = Field(300.0, gt=0, le=7 * 86400)

    @model_validator(mode="after")
    def _cap_not_below_base(self) -> RetryBackoffIn:
        if self.max_seconds < self.base_seconds:
            raise ValueError("max_seconds must be at least base_seconds")
        return self


class ScheduleIn(Strict):
    type: Literal["immediate", "delayed", "cron"] = "immediate"
    due_time: AwareDatetime | None = None
    delay_seconds: StrictFloat | None = Field(None, ge=0, le=MAX_DELAY_SECONDS)
    cron_expression: str | None = Field(None, max_length=256)
    timezone: str = Field("UTC", max_length=64)
    jitter_seconds: StrictInt = Field(0, ge=0, le=MAX_JITTER_SECONDS)
    misfire_policy: cron.MisfirePolicy = cron.MisfirePolicy.RUN_ONCE
    overlap_policy: cron.OverlapPolicy = cron.OverlapPolicy.ALLOW

    @field_validator("due_time")
    @classmethod
    def _plausible_due_time(cls, value: datetime | None) -> datetime | None:
        if value is not None and not EARLIEST_DUE <= value <= LATEST_DUE:
            raise ValueError(f"must be between {EARLIEST_DUE.year} and {LATEST_DUE.year}")
        return value

    @field_validator("cron_expression")
    @classmethod
    def _valid_expression(cls, value: str | None) -> str | None:
        if value is not None:
            cron.validate(value, "UTC")
        return value

    @field_validator("timezone")
    @classmethod
    def _valid_timezone(cls, value: str) -> str:
        cron.validate("* * * * *", value)
        return value

    @model_validator(mode="after")
    def _fields_match_type(self) -> ScheduleIn:
        if self.type == "cron" and self.cron_expression is None:
            raise ValueError("a cron schedule needs cron_expression")
        if self.type != "cron" and self.cron_expression is not None:
            raise ValueError("cron_expression is only for type cron")
        if self.type == "delayed" and (self.due_time is None) == (self.delay_seconds is None):
            raise ValueError("a delayed schedule needs exactly one of due_time and delay_seconds")
        if self.type != "delayed" and (self.due_time or self.delay_seconds is not None):
            raise ValueError("due_time and delay_seconds are only for type delayed")
        return self


class TaskIn(Strict):
    task_id: str | None = Field(
        None,
        pattern=UUID_PATTERN,
        description="An id the client chose for the task (a UUID, canonical lowercase form; "
        "the Python client sends a time-ordered UUIDv7). Sending the same request with the "
        "same id again, for as long as the task is kept, answers 200 with the task first "
        "made instead of a second task; a different request with a taken id is a 409.",
    )
    task_type: str = Field(min_length=1, max_length=128, pattern=NAME_PATTERN)
    payload: Any = None
    schedule: ScheduleIn = Field(default_factory=lambda: ScheduleIn())
    max_retries: StrictInt | None = Field(None, ge=0, le=100)
    retry_backoff: RetryBackoffIn | None = None
    priority: StrictInt | None = Field(None, ge=PRIORITY_MIN, le=PRIORITY_MAX)
    queue: str | None = Field(None, min_length=1, max_length=64, pattern=NAME_PATTERN)
    timeout_seconds: StrictFloat | None = Field(None, gt=0, le=MAX_TIMEOUT_SECONDS)
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="Repeating a request with the same key (per task type) within the "
        "window returns the task first created for it instead of a second task.",
    )
    dependencies: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list,
        max_length=MAX_DEPENDENCIES,
        description="Task ids that must succeed first: until then the task is blocked; if "
        "one fails for good or is cancelled, it ends upstream_failed without running.",
    )
    ordering_key: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_ORDERING_KEY_LENGTH,
        description="Tasks sharing a key run one at a time, in due-time order; a due task "
        "waits (status waiting) while an earlier one of its key has not ended for good, "
        "retries included. Tasks with different keys run in parallel.",
    )

    @field_validator("task_type")
    @classmethod
    def _not_the_engines_type(cls, value: str) -> str:
        _refuse(reserved_name(task_type=value))
        return value

    @field_validator("queue")
    @classmethod
    def _not_the_engines_queue(cls, value: str | None) -> str | None:
        _refuse(reserved_name(queue=value))
        return value


class BatchIn(Strict):
    tasks: list[TaskIn] = Field(min_length=1, max_length=MAX_BATCH_TASKS)


class SubmittedOut(BaseModel):
    task_id: str
    status: str
    due_time: datetime
    schedule_id: str | None = None
    duplicate: bool = Field(False, description="True when this answers a repeated idempotency key.")


class BatchOut(BaseModel):
    tasks: list[SubmittedOut]


class ScheduleOut(BaseModel):
    type: str
    schedule_id: str | None = None
    cron_expression: str | None = None
    timezone: str | None = None
    jitter_seconds: int | None = None
    misfire_policy: str | None = None
    overlap_policy: str | None = None
    schedule_status: str | None = None


class RetryBackoffOut(BaseModel):
    base_seconds: float
    max_seconds: float


class TaskOut(BaseModel):
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


class TaskPage(BaseModel):
    tasks: list[TaskOut]
    next_token: str | None


class ExecutionOut(BaseModel):
    execution_id: int
    task_id: str
    attempt: int
    fence: int
    worker_id: str | None
    started_at: datetime
    ended_at: datetime
    outcome: str = Field(
        description="succeeded, failed, timed_out, lease_expired, or cancelled (while it ran)"
    )
    error: str | None
    retry_at: datetime | None = Field(
        None, description="When this end put the task back to pending: the retry's due time"
    )


class HistoryPage(BaseModel):
    executions: list[ExecutionOut]
    next_token: str | None


class CancelledOut(BaseModel):
    ok: bool
    cancelled_instances: int


class ProblemOut(BaseModel):
    field: str
    message: str


class ErrorOut(BaseModel):
    error: str = Field(
        description="A stable code: invalid_request, not_found, conflict, "
        "idempotency_conflict, stale_fence, overloaded, unauthorized, forbidden, "
        "unknown_route, method_not_allowed, internal"
    )
    message: str
    field: str | None = Field(None, description="The input at fault, e.g. schedule.due_time")
    problems: list[ProblemOut] | None = Field(
        None, description="Every invalid input (of a batch, by index: tasks.3.payload)"
    )
    task_id: str | None = Field(
        None, description="For idempotency_conflict: the task first made for the key"
    )


class AdmissionOut(BaseModel):
    """Whether submissions are admitted, and the backlog that decides it."""

    backlog: int
    drain_per_second: float
    seconds_to_drain: float | None
    admitting: bool
    max_depth: int
    max_drain_seconds: float


class QueuesOut(AdmissionOut):
    depth: dict[str, int]


class RedriveIn(Strict):
    task_ids: list[str] = Field(min_length=1, max_length=1000)

    @field_validator("task_ids")
    @classmethod
    def _bounded_ids(cls, value: list[str]) -> list[str]:
        if any(not 0 < len(task_id) <= 64 for task_id in value):
            raise ValueError("task ids are 1 to 64 characters")
        return value


class SkippedOut(BaseModel):
    task_id: str
    reason: str


class RedriveOut(BaseModel):
    redriven: list[str]
    skipped: list[SkippedOut]


class PriorityIn(Strict):
    priority: StrictInt = Field(ge=PRIORITY_MIN, le=PRIORITY_MAX)


def _refuse(reason: str | None) -> None:
    if reason is not None:
        raise ValueError(reason)


class ClaimIn(Strict):
    worker_id: str = Field(min_length=1, max_length=128)
    queues: list[str] = Field(default_factory=lambda: ["default"], min_length=1, max_length=64)
    task_types: list[str] | None = Field(None, min_length=1, max_length=256)
    max_tasks: StrictInt = Field(10, ge=1, le=256)
    wait_seconds: StrictFloat = Field(0.0, ge=0, le=30)

    @field_validator("queues", "task_types")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        for name in value or ():
            if not 0 < len(name) <= 128 or not re.fullmatch(NAME_PATTERN, name):
                raise ValueError(f"{name!r} is not a queue or task type name")
            _refuse(reserved_name(queue=name))
        return value


class ClaimedOut(BaseModel):
    task_id: str
    task_type: str
    payload: Any
    attempt: int
    fence: int
    idempotency_key: str
    due_time: datetime
    lease_expires_at: datetime
    timeout_seconds: float | None


class ClaimOut(BaseModel):
    tasks: list[ClaimedOut]


class HeartbeatIn(Strict):
    fence: StrictInt = Field(ge=0, le=2**62)


class CompleteIn(HeartbeatIn):
    pass


class FailIn(HeartbeatIn):
    error: str = Field(min_length=1, max_length=4000)
    retryable: StrictBool = True


class LeaseOut(BaseModel):
    task_id: str
    lease_expires_at: datetime


class AttemptEndOut(BaseModel):
    task_id: str
    status: str
    retry_at: datetime | None


class HealthOut(BaseModel):
    ok: bool
    node_id: str
    partitions_owned: int
    wheel_size: int
    ready: dict[str, int]
    inflight: int


class WorkflowTaskIn(TaskIn):
    """A task of a workflow: a `POST /api/tasks` body with a name, whose `dependencies`
    are the names of other tasks of the same workflow."""

    name: str = Field(min_length=1, max_length=128, pattern=NAME_PATTERN)
    dependencies: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list,
        max_length=MAX_DEPENDENCIES,
        description="Names of tasks of this workflow that must succeed first.",
    )

    @model_validator(mode="after")
    def _no_key(self) -> WorkflowTaskIn:
        if self.idempotency_key is not None:
            raise ValueError("idempotency_key is not for the tasks of a workflow")
        return self


class WorkflowIn(Strict):
    name: str = Field("workflow", min_length=1, max_length=128)
    tasks: list[WorkflowTaskIn] = Field(min_length=1, max_length=MAX_BATCH_TASKS)
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="Names one workflow: submitting again with the same key stores "
        "nothing and returns the workflow stored first.",
    )


class RecurringWorkflowIn(WorkflowIn):
    schedule: ScheduleIn = Field(
        description="A cron schedule (type cron): each fire time launches the whole workflow."
    )
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="Repeating a request with the same key within the window returns the "
        "schedule first created for it.",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: ScheduleIn) -> ScheduleIn:
        if value.type != "cron":
            raise ValueError("a recurring workflow's schedule has type cron")
        return value


class WorkflowNodeOut(BaseModel):
    name: str
    task_id: str
    task_type: str
    status: str
    dependencies: list[str]
    ordering_key: str | None = None
    attempts: int
    started_at: datetime | None
    completed_at: datetime | None
    last_error: str | None


class WorkflowOut(BaseModel):
    workflow_id: str
    name: str
    status: str = Field(description="running, succeeded, failed or cancelled")
    created_at: datetime
    counts: dict[str, int] = Field(description="How many of its tasks are in each status")
    tasks: list[WorkflowNodeOut]


class WorkflowCancelledOut(BaseModel):
    ok: bool
    cancelled: int


class InstanceOut(BaseModel):
    task_id: str
    status: str
    due_time: datetime
    ended_at: datetime | None


class ScheduleSummaryOut(BaseModel):
    schedule_id: str
    task_type: str
    cron_expression: str
    timezone: str
    jitter_seconds: int
    status: str = Field(description="active, paused or cancelled")
    queue: str
    priority: int
    misfire_policy: str
    overlap_policy: str
    created_at: datetime
    next_fire_time: datetime | None = Field(
        description="The due time of its pending instance; null when paused or there is none"
    )
    current_instance_id: str | None
    last_run: InstanceOut | None = Field(
        description="The instance fired before the current one, with its outcome so far"
    )


class SchedulePage(BaseModel):
    schedules: list[ScheduleSummaryOut]
    next_token: str | None


class WorkflowSummaryOut(BaseModel):
    workflow_id: str
    name: str
    status: str = Field(description="running, succeeded, failed or cancelled")
    created_at: datetime
    task_count: int
    counts: dict[str, int] = Field(
        description="How many of its tasks are in each stored status (ready ones count "
        "as pending here; GET /api/workflows/{id} tells them apart)"
    )


class WorkflowPage(BaseModel):
    workflows: list[WorkflowSummaryOut]
    next_token: str | None


class PartitionLeaseOut(BaseModel):
    partition: int
    epoch: int
    lease_expires_at: datetime


class SchedulerNodeOut(BaseModel):
    node_id: str
    heartbeat_expires_at: datetime | None = Field(
        description="Null for a node that does not heartbeat (embedded mode: one node "
        "holds every partition)"
    )
    partitions: list[PartitionLeaseOut]


class WorkerOut(BaseModel):
    worker_id: str
    kind: str = Field(description="in_process, or http for a worker over the worker protocol")
    queues: list[str]
    inflight: int = Field(description="Its tasks running now")
    concurrency: int | None = Field(description="Null for a worker over HTTP")
    started_at: datetime
    last_heartbeat_at: datetime
    expires_at: datetime


class NodesOut(BaseModel):
    partition_count: int
    unowned_partitions: list[int]
    schedulers: list[SchedulerNodeOut]
    workers: list[WorkerOut]
