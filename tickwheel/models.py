"""Domain records shared by the engine, the stores and the API.

Times are integer milliseconds since the Unix epoch inside Tickwheel; the API
converts them to ISO 8601 at its edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypedDict


class Status(StrEnum):
    BLOCKED = "blocked"
    PENDING = "pending"
    WAITING = "waiting"  # due, behind an earlier task of its ordering key
    READY = "ready"  # derived: pending and due at or before the partition's watermark
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UPSTREAM_FAILED = "upstream_failed"
    EXPIRED = "expired"  # not started by its expiry: never runs, never retried

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES = frozenset(
    {Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.UPSTREAM_FAILED, Status.EXPIRED}
)


class SubmitOptions(TypedDict, total=False):
    """How a task is scheduled and run: the keyword arguments of `submit`, the same for
    an embedded `Node` and a remote `Client`. With none of the first three the task is
    due now; the rest default to its type's defaults, then Tickwheel's."""

    delay_seconds: float  # due this long after submission
    due_time: datetime  # due at this time (with a time zone)
    cron: str  # recurring: a 5-field expression or a macro such as @daily
    timezone: str  # the IANA zone the cron expression is read in (UTC)
    jitter_seconds: int  # spread a cron schedule's fire times by up to this much
    misfire_policy: str  # run_once, skip or run_all, after downtime
    overlap_policy: str  # allow or skip, while the previous instance still runs
    queue: str
    priority: int  # -100..100, higher first
    max_retries: int
    retry_backoff: tuple[float, float]  # (base_seconds, max_seconds)
    timeout_seconds: float
    idempotency_key: str  # a repeat within the window returns the first task
    dependencies: Sequence[str]  # task ids that must succeed first
    ordering_key: str  # tasks sharing a key run one at a time, in due order
    limit_key: str  # tasks sharing a key share the limits set for it (scope `key`)
    expires_at: datetime  # not started by then: it ends expired and never runs
    expires_after_seconds: float  # the same, counted from its due time (each cron fire)


SUBMIT_OPTIONS = frozenset(SubmitOptions.__annotations__)


class ScheduleOptions(TypedDict, total=False):
    """How a recurring workflow's cron schedule fires (see `SubmitOptions`)."""

    timezone: str
    jitter_seconds: int
    misfire_policy: str
    overlap_policy: str
    idempotency_key: str


# Limits of the options, the same for the API and the engine.
# A task's priority, bigger first; routing keys pack it in 8 bits.
PRIORITY_MIN, PRIORITY_MAX = -100, 100
MAX_DELAY_SECONDS = 10 * 366 * 86400.0
MAX_EXPIRES_AFTER_SECONDS = 366 * 86400.0
MAX_JITTER_SECONDS = 86400
MAX_TIMEOUT_SECONDS = 86400.0
MAX_DEPENDENCIES = 10_000  # task ids one task may wait on
MAX_ORDERING_KEY_LENGTH = 256
MAX_LIMIT_KEY_LENGTH = 200  # a limit's name (`tickwheel.core.limits.MAX_NAME_CHARS`)

# The engine's own queue and task types (launches of recurring workflows): not for users.
ENGINE_QUEUE = "tickwheel"
ENGINE_TYPE_PREFIX = "tickwheel."
WORKFLOW_TASK_TYPE = f"{ENGINE_TYPE_PREFIX}workflow"  # its payload: a workflow to launch


def reserved_name(queue: str | None = None, task_type: str | None = None) -> str | None:
    """Why a queue or task type is the engine's own, or None when it is free to use."""
    if queue == ENGINE_QUEUE:
        return f"the queue {ENGINE_QUEUE!r} is the engine's own"
    if task_type is not None and task_type.startswith(ENGINE_TYPE_PREFIX):
        return f"task types starting {ENGINE_TYPE_PREFIX!r} are the engine's own"
    return None


class ScheduleType(StrEnum):
    IMMEDIATE = "immediate"
    DELAYED = "delayed"
    CRON = "cron"


class Outcome(StrEnum):
    """How one attempt ended (one execution row each)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    LEASE_EXPIRED = "lease_expired"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"  # cancelled while it ran: its worker's result is refused
    EXPIRED = "expired"  # claimed ahead, but its expiry came before a slot: never run


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """What a task carries besides its payload: routing and retry settings."""

    queue: str = "default"
    priority: int = 0
    max_retries: int = 3
    backoff_base_seconds: float = 1.0
    backoff_max_seconds: float = 300.0
    timeout_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Idempotency:
    """A client's key for one request: the same key and request within the window
    (created at or after `since_ms`) give back the task first created for it."""

    key: str
    request_hash: str
    since_ms: int


@dataclass(frozen=True, slots=True)
class NewTask:
    task_id: str
    partition: int
    task_type: str
    payload: Any
    schedule_type: ScheduleType
    due_ms: int
    created_ms: int
    options: TaskOptions = field(default_factory=TaskOptions)
    schedule_id: str | None = None
    encoded_payload: str | None = None  # the payload as JSON, when already encoded
    idempotency: Idempotency | None = None
    # Task ids this one waits on: it runs only after every one of them succeeded.
    predecessors: tuple[str, ...] = ()
    workflow_id: str | None = None
    node_name: str | None = None  # its name within its workflow
    ordering_key: str | None = None  # runs after the earlier-due tasks of its key
    # Set when the client chose `task_id`: the id is then the submission's dedupe, and a
    # repeat with the same id must be the same request (this hash) to be answered.
    request_hash: str | None = None
    # Handed to the ready queue by its submitter right after the commit (due now, waiting
    # on nothing): stored with no mark, so the loader does not put it on a wheel too.
    direct: bool = False
    expires_ms: int | None = None  # not started by then: it ends expired
    traceparent: str | None = None  # its submission's W3C trace context (tracing on)
    limit_key: str | None = None  # the key of the limits (scope `key`) that apply to it


@dataclass(frozen=True, slots=True)
class TaskRecord:
    seq: int
    task_id: str
    partition: int
    task_type: str
    payload: Any
    status: Status
    version: int
    schedule_type: ScheduleType
    schedule_id: str | None
    due_ms: int
    options: TaskOptions
    attempts: int
    created_ms: int
    triggered_ms: int | None
    started_ms: int | None
    completed_ms: int | None
    lease_expires_ms: int | None
    worker_id: str | None
    last_error: str | None
    idempotency_key: str | None = None
    workflow_id: str | None = None
    node_name: str | None = None
    ordering_key: str | None = None
    expires_ms: int | None = None
    traceparent: str | None = None
    limit_key: str | None = None
    held_by: str | None = None  # the limit holding it back (pending), as `scope:name`


@dataclass(frozen=True, slots=True)
class WorkflowRecord:
    workflow_id: str
    name: str
    created_ms: int
    request_hash: str | None = None  # of a workflow submitted with an idempotency key


@dataclass(frozen=True, slots=True)
class WheelEntry:
    """What the loader needs to put a pending task on a wheel and route it when due."""

    seq: int
    partition: int
    due_ms: int
    queue: str
    priority: int
    is_cron: bool
    mark: int = 0  # when it last became pending (see the loader)


@dataclass(frozen=True, slots=True)
class ClaimedTask:
    """A task a worker now holds under a lease; `fence` must accompany every later write."""

    seq: int
    task_id: str
    task_type: str
    payload: Any
    attempt: int
    fence: int
    due_ms: int
    lease_expires_ms: int
    timeout_seconds: float | None
    options: TaskOptions
    expires_ms: int | None = None  # not started by then, it must not run
    traceparent: str | None = None  # its submission's W3C trace context (tracing on)


@dataclass(frozen=True, slots=True)
class Finish:
    """The end of one attempt, to be written with a compare-and-set on the fence.

    `retry_at_ms` set means back to pending at that time; otherwise the task ends in `status`.
    """

    seq: int
    fence: int
    outcome: Outcome
    status: Status
    ended_ms: int
    error: str | None = None
    retry_at_ms: int | None = None
    # The reaper's ends apply only if the lease really ran out before this time.
    lease_expired_before: int | None = None
    started_ms: int | None = None  # when the attempt was claimed, if known (run time)


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    id: int
    task_id: str
    attempt: int
    fence: int
    worker_id: str | None
    started_ms: int
    ended_ms: int
    outcome: Outcome
    error: str | None
    # Set when this end put the task back to pending: the retry's due time.
    retry_at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    schedule_id: str
    task_type: str
    payload: Any
    options: TaskOptions
    cron_expression: str
    timezone: str
    jitter_seconds: int
    misfire_policy: str
    overlap_policy: str
    status: str  # active | paused | cancelled
    version: int
    current_seq: int | None
    previous_seq: int | None
    created_ms: int
    # Each instance not started this long after its fire time ends expired.
    expires_after_ms: int | None = None
