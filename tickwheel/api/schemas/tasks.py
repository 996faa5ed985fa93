"""Bodies of the task routes (`/api/tasks`, `/api/queues`, `/healthz`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    Field,
    field_validator,
    model_validator,
)

from tickwheel.api.schemas.common import (
    MAX_BATCH_TASKS,
    NAME_PATTERN,
    Strict,
    StrictFloat,
    StrictInt,
    refuse,
)
from tickwheel.core import cron
from tickwheel.ids import UUID_PATTERN
from tickwheel.models import (
    MAX_DELAY_SECONDS,
    MAX_DEPENDENCIES,
    MAX_EXPIRES_AFTER_SECONDS,
    MAX_JITTER_SECONDS,
    MAX_LIMIT_KEY_LENGTH,
    MAX_ORDERING_KEY_LENGTH,
    MAX_TIMEOUT_SECONDS,
    PRIORITY_MAX,
    PRIORITY_MIN,
    reserved_name,
)

EARLIEST_DUE = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_DUE = datetime(9000, 1, 1, tzinfo=UTC)


def _plausible(value: datetime) -> datetime:
    if not EARLIEST_DUE <= value <= LATEST_DUE:
        raise ValueError(f"must be between {EARLIEST_DUE.year} and {LATEST_DUE.year}")
    return value


# A time with an offset, between 1970 and 9000: a due time, an expiry.
PlausibleTime = Annotated[AwareDatetime, AfterValidator(_plausible)]


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
    due_time: PlausibleTime | None = None
    delay_seconds: StrictFloat | None = Field(None, ge=0, le=MAX_DELAY_SECONDS)
    cron_expression: str | None = Field(None, max_length=256)
    timezone: str = Field("UTC", max_length=64)
    jitter_seconds: StrictInt = Field(0, ge=0, le=MAX_JITTER_SECONDS)
    misfire_policy: cron.MisfirePolicy = cron.MisfirePolicy.RUN_ONCE
    overlap_policy: cron.OverlapPolicy = cron.OverlapPolicy.ALLOW

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
    limit_key: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_LIMIT_KEY_LENGTH,
        description="Tasks sharing a limit key share the limits set for that key "
        "(`PUT /api/limits/key/{name}`): at most N starts per period, at most N running at "
        "once, across the cluster.",
    )
    expires_at: PlausibleTime | None = Field(
        None,
        description="If the task has not started by then, it ends expired and never runs "
        "(nor is it retried). After its due time; not for cron tasks.",
    )
    expires_after_seconds: StrictFloat | None = Field(
        None,
        gt=0,
        le=MAX_EXPIRES_AFTER_SECONDS,
        description="The same, counted from the task's due time; on a cron task, from each "
        "instance's fire time (an instance that could not start in time is skipped).",
    )

    @field_validator("task_type")
    @classmethod
    def _not_the_engines_type(cls, value: str) -> str:
        refuse(reserved_name(task_type=value))
        return value

    @field_validator("queue")
    @classmethod
    def _not_the_engines_queue(cls, value: str | None) -> str | None:
        refuse(reserved_name(queue=value))
        return value


class BatchIn(Strict):
    tasks: list[TaskIn] = Field(min_length=1, max_length=MAX_BATCH_TASKS)


class SubmittedOut(BaseModel):
    task_id: str
    status: str
    due_time: datetime
    schedule_id: str | None = None
    duplicate: bool = Field(False, description="True when this answers a repeated idempotency key.")
    warnings: list[str] = Field(
        default_factory=list,
        description="What to know of a task accepted all the same: a task type that no live "
        "worker has registered (refused with 422 under strict_task_types).",
    )


class BatchOut(BaseModel):
    tasks: list[SubmittedOut]
    warnings: list[str] = Field(
        default_factory=list, description="Every warning of the batch's tasks, each once."
    )


class ScheduleOut(BaseModel):
    type: str
    schedule_id: str | None = None
    cron_expression: str | None = None
    timezone: str | None = None
    jitter_seconds: int | None = None
    misfire_policy: str | None = None
    overlap_policy: str | None = None
    schedule_status: str | None = None
    expires_after_seconds: float | None = Field(
        None, description="A cron schedule's: each instance's expiry after its fire time."
    )


class RetryBackoffOut(BaseModel):
    base_seconds: float
    max_seconds: float


class PredecessorOut(BaseModel):
    task_id: str
    status: str


class WaitOut(BaseModel):
    """One thing a task waits on: `reason` says which and `message` says it in words;
    the fields that reason names are set, the others null."""

    reason: str = Field(
        description="predecessors (`tasks`: those not yet succeeded), ordering_key (`key`, "
        "and `holder`: the id of the task holding it), schedule_paused (`schedule_id`), "
        "due (`due_time`), no_scheduler (due, but no scheduler holds its `partition` to "
        "release it), queued (ready: at most `ahead` tasks before it in `queue`), limit "
        "(ready, held back by the rate or concurrency limit `limit`, as scope:name) or "
        "no_worker (no live worker takes `task_type` from `queue`)"
    )
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
    limit_key: str | None = None
    held_by: str | None = Field(
        None,
        description="The rate or concurrency limit holding this ready task back, as "
        "scope:name (null when none)",
    )
    expires_at: datetime | None = Field(
        None, description="Not started by then, the task ends expired (null: never)."
    )
    traceparent: str | None = Field(
        None,
        description="The W3C trace context of its submission, with tracing on: its trace "
        "holds the task's spans.",
    )
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
    waiting_on: list[WaitOut] | None = Field(
        None,
        description="Why it has not started: what it waits on, most telling first (only "
        "on GET /api/tasks/{id}); null once it runs or has ended.",
    )


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


class ReadyOut(BaseModel):
    ready: bool
    node_id: str
    dependencies: dict[str, str | None] = Field(
        description="Each dependency's problem, or null where it answered in time."
    )


class HealthOut(BaseModel):
    ok: bool
    node_id: str
    partitions_owned: int
    wheel_size: int
    ready: dict[str, int]
    inflight: int
