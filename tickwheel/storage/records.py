"""The values that cross the store interfaces (`base.py`): filters, pages, summaries,
leases, fences and the answers of the stores' writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from tickwheel.core.limits import Limit
from tickwheel.models import ClaimedTask, NewTask, ScheduleRecord, Status, WorkflowRecord


@dataclass(frozen=True, slots=True)
class TaskFilter:
    statuses: tuple[Status, ...] = ()
    task_type: str | None = None
    schedule_id: str | None = None
    queue: str | None = None
    created_after_ms: int | None = None  # created at or after
    created_before_ms: int | None = None  # created before
    # An exact task id or idempotency key: the tasks it names.
    q: str | None = None
    held_by: str | None = None  # the ready tasks this limit holds back (scope:name)


class Page(NamedTuple):
    """Where a page of newest-first rows ordered by (created time, id) ends: the next
    page starts below it."""

    created_ms: int
    key: str


@dataclass(frozen=True, slots=True)
class InstanceBrief:
    """One instance of a schedule, as a list of schedules shows it."""

    task_id: str
    status: Status
    due_ms: int
    completed_ms: int | None


@dataclass(frozen=True, slots=True)
class ScheduleSummary:
    schedule: ScheduleRecord
    current: InstanceBrief | None  # the instance it will fire next (or last made)
    previous: InstanceBrief | None  # the instance fired before it


@dataclass(frozen=True, slots=True)
class WorkflowSummary:
    record: WorkflowRecord
    counts: Mapping[Status, int]  # tasks by stored status


class Predecessor(NamedTuple):
    """A task another waits on, as it stands now."""

    task_id: str
    status: Status


class SchedulerNode(NamedTuple):
    node_id: str
    expires_ms: int  # its heartbeat lapses then, by the store's clock


class LeaseHolder(NamedTuple):
    partition: int
    owner: str
    epoch: int
    expires_ms: int


class Renewal(NamedTuple):
    held: dict[int, int]  # partition -> epoch, of those held now
    alive: list[str]  # the scheduler nodes alive, sorted; empty unless it heartbeats


@dataclass(frozen=True, slots=True)
class WorkerBeat:
    """What a worker says of itself when it reports alive."""

    worker_id: str
    kind: str  # "in_process" or "http"
    queues: tuple[str, ...] | None  # None: keep what was said before, task types too
    concurrency: int | None
    # The task types it handles, said with its queues; None: any (a worker over HTTP
    # that names none takes whatever its queues hold).
    task_types: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    worker_id: str
    kind: str
    queues: tuple[str, ...]
    concurrency: int | None
    inflight: int  # its tasks running now
    started_ms: int  # first seen alive (since it last stopped)
    seen_ms: int  # its last report, by the store's clock
    expires_ms: int
    task_types: tuple[str, ...] | None = None  # None: any type


class News(StrEnum):
    NEW_TASKS = "tickwheel_new_tasks"
    ENDED = "tickwheel_ended"
    PARTITIONS = "tickwheel_partitions"  # given back, or a scheduler node joined


class Propagated(NamedTuple):
    """One round of the dependency resolver."""

    # Dependents whose last predecessor succeeded, and waiting tasks whose turn on their
    # ordering key came: now pending.
    unblocked: int
    upstream_failed: int  # dependents of a task that failed or was cancelled
    more: bool  # ended tasks are still waiting to be propagated


class Held(NamedTuple):
    """The task that holds an insert's slot: the task itself, or for a repeated
    submission (`repeat`) the task first made for it."""

    seq: int
    task_id: str
    repeat: bool = False
    # The status the task was stored with (blocked while it waits on predecessors);
    # None for a repeat, whose original may have moved on since.
    status: Status | None = None


class Fence(NamedTuple):
    """A partition's lease as its holder knows it. A write made for the partition
    presents it, and the store refuses the write unless this node still holds the
    lease with this epoch and it has not expired by the store's clock."""

    node_id: str
    partition: int
    epoch: int


class Advance(NamedTuple):
    schedule: ScheduleRecord
    instance: NewTask  # the schedule's next instance
    skip: tuple[int, str] | None  # (seq, reason) of an instance to skip
    # The lease on the fired instance's partition; None for a user's own request (resume),
    # which no partition owner makes.
    fence: Fence | None


@dataclass(frozen=True, slots=True)
class TokenRecord:
    token_id: str
    name: str
    scopes: frozenset[str]
    created_ms: int
    revoked_ms: int | None


class Pruned(NamedTuple):
    """One batch of `delete_ended_tasks`."""

    deleted: int  # tasks deleted, each with its executions, keys and edges
    last_seq: int | None  # where the next batch starts after; None: none left to look at


@dataclass(frozen=True, slots=True)
class LimitUse:
    """A limit as operators see it: its rule and how much of it is used."""

    limit: Limit
    updated_ms: int
    started_in_window: int  # claims within its rate's window now (0 without a rate)
    running: int  # its tasks running, or cancelled with their lease not ended
    held: int  # tasks it holds back


class Claimed(NamedTuple):
    """A claim's answer: the tasks claimed, and the seqs of pulled items left for the
    claimer to put back on the ready queue (admitted by their limits, but beyond what
    it could start at once)."""

    tasks: list[ClaimedTask]
    deferred: list[int]
    limited: frozenset[int] = frozenset()  # claimed under a limit: to start first
