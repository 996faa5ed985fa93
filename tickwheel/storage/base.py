"""The narrow interfaces a store implements, one per role.

Each service is given only the roles it uses; `Store` is their union, which the
composition root holds. Stores are plumbing: they run named queries and execute the
plans of `plans/`, where the rules of which transition happens when are written once.
The values crossing these interfaces live in `records.py` and are named here too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol, runtime_checkable

from tickwheel.core.limits import Limit
from tickwheel.models import (
    ClaimedTask,
    ExecutionRecord,
    Finish,
    NewTask,
    ScheduleRecord,
    Status,
    TaskRecord,
    WheelEntry,
    WorkflowRecord,
)
from tickwheel.storage.records import (
    Advance,
    Claimed,
    Fence,
    Held,
    InstanceBrief,
    LeaseHolder,
    LimitUse,
    News,
    Page,
    Predecessor,
    Propagated,
    Pruned,
    Renewal,
    SchedulerNode,
    ScheduleSummary,
    TaskFilter,
    TokenRecord,
    WorkerBeat,
    WorkerRecord,
    WorkflowSummary,
)

__all__ = [
    "Advance",
    "AttemptStore",
    "ClusterViewStore",
    "DependencyStore",
    "DispatchStore",
    "Fence",
    "Held",
    "HostLockedStore",
    "InstanceBrief",
    "LeaseHolder",
    "LeaseRenewalStore",
    "LeaseStore",
    "ListingStore",
    "News",
    "OperationsStore",
    "Page",
    "PendingStore",
    "Predecessor",
    "Propagated",
    "Pruned",
    "PrunedTaskStore",
    "RangedTaskStore",
    "Renewal",
    "ScheduleStore",
    "ScheduleSummary",
    "SchedulerNode",
    "Store",
    "SubmissionStore",
    "TaskFilter",
    "TaskReadStore",
    "TaskStore",
    "TokenRecord",
    "TokenStore",
    "WorkerBeat",
    "WorkerRecord",
    "WorkerStore",
    "WorkflowStore",
    "WorkflowSummary",
]


class SubmissionStore(Protocol):
    """Submitting tasks: what the submission path writes."""

    async def insert_tasks(self, tasks: Sequence[NewTask]) -> list[int]:
        """Commit all the tasks in one transaction; return their seqs in order.

        A task whose idempotency key (per task type) is already held within its window
        by the same request is not inserted: its seq is the original task's. A key held
        for a different request makes the whole call raise `RejectedItems` (indexes ->
        `IdempotencyConflict`) and write nothing. Keys are taken with a unique
        constraint, so concurrent duplicates cannot both win."""
        ...

    async def insert_tasks_with_holders(self, tasks: Sequence[NewTask]) -> list[Held]:
        """`insert_tasks`, answering for each task its seq and the id of the task that
        holds it: its own, or for an idempotent repeat the original's."""
        ...


class TaskReadStore(Protocol):
    """Reading tasks by id, and the end of one attempt."""

    async def get_task(self, task_id: str) -> TaskRecord | None: ...

    async def get_tasks(self, seqs: Collection[int]) -> list[TaskRecord]: ...

    async def traceparents_of(self, seqs: Collection[int]) -> dict[int, str]:
        """The trace context of those of `seqs` that carry one (tracing was on)."""
        ...

    async def execution_at(self, task_seq: int, fence: int) -> ExecutionRecord | None:
        """The end recorded for the attempt of `fence`, if it ended (or was cancelled
        while it ran): what a repeated result is answered with."""
        ...

    async def predecessors(self, seq: int) -> list[Predecessor]:
        """The tasks the task of `seq` waits on (or waited on), oldest first, each with
        its status now: what a blocked task is explained by."""
        ...

    async def ordering_key_holder(self, ordering_key: str) -> str | None:
        """The id of the task holding the ordering key now, if one does: what a waiting
        task waits behind."""
        ...


class WorkflowStore(Protocol):
    """Workflows: stored whole, read whole."""

    async def insert_workflow(self, workflow: WorkflowRecord, tasks: Sequence[NewTask]) -> bool:
        """Commit a workflow with all its tasks in one transaction, predecessors first
        (as `insert_tasks`, without idempotency keys). False, with nothing written, when
        a workflow with its id is stored already."""
        ...

    async def get_workflow(
        self, workflow_id: str
    ) -> tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None:
        """The workflow, its tasks in insertion order, and its edges as
        (predecessor seq, dependent seq), read together."""
        ...

    async def active_workflows(self, workflow_ids: Collection[str]) -> set[str]:
        """Those of `workflow_ids` with a task not yet ended for good."""
        ...


class DependencyStore(Protocol):
    """The dependency resolver's: telling dependents and ordering keys that tasks ended."""

    async def propagate(self, now_ms: int, *, limit: int = 1000) -> Propagated:
        """Tell the dependents of up to `limit` tasks that ended (queued in the
        transaction that ended them): in one transaction, each edge is settled once,
        counters grow within their bounds, freed dependents become pending due now and
        dependents of a failed or cancelled task become `upstream_failed`, and the
        ordering key of an ended task passes to the key's next task. Doing it twice
        changes nothing."""
        ...

    async def has_propagations(self, now_ms: int) -> bool:
        """Whether ended tasks wait to be propagated by now (a read, cheap when idle)."""
        ...


class OperationsStore(Protocol):
    """An operator's compare-and-set changes to one task or a few."""

    async def cancel(self, seq: int, version: int, now_ms: int) -> bool:
        """Compare-and-set a task to cancelled; an attempt running then gets its
        execution row (outcome `cancelled`)."""
        ...

    async def redrive(self, items: Sequence[tuple[int, int]], now_ms: int) -> list[bool]:
        """Compare-and-set failed tasks, (seq, version) each, back to pending, due now,
        attempts reset, made visible to the loader."""
        ...

    async def set_priority(self, seq: int, version: int, priority: int) -> bool:
        """Compare-and-set the priority of a pending task."""
        ...


class ListingStore(Protocol):
    """What operators list, a page at a time, and count."""

    async def list_tasks(
        self, where: TaskFilter, *, before_seq: int | None, limit: int
    ) -> list[TaskRecord]:
        """Newest first, seqs below `before_seq`. Seqs follow creation time, so a
        created range is served as a range of seqs."""
        ...

    async def list_workflows(self, *, before: Page | None, limit: int) -> list[WorkflowSummary]:
        """Newest first (by created time, then id), below `before`; each with its
        tasks counted by status, in one aggregate query for the page."""
        ...

    async def list_schedules(
        self, *, statuses: Collection[str], before: Page | None, limit: int
    ) -> list[ScheduleSummary]:
        """Schedules whose status is one of `statuses`, newest first (by created time,
        then id), below `before`, each with its current and previous instance."""
        ...

    async def count_by_status(self) -> dict[Status, int]:
        """Tasks per stored status (a status with none may be left out), and under
        READY how many of the pending ones are due at or below their partition's
        watermark: those are counted in PENDING too."""
        ...

    async def history(
        self, *, task_seq: int | None, schedule_id: str | None, before_id: int | None, limit: int
    ) -> list[ExecutionRecord]: ...


class TaskStore(
    SubmissionStore,
    TaskReadStore,
    WorkflowStore,
    DependencyStore,
    OperationsStore,
    ListingStore,
    Protocol,
):
    """Every role of tasks at once, for a caller that uses most of them."""


class PendingStore(Protocol):
    """What the trigger side reads: tasks made pending, to put on the wheels."""

    async def load_pending(
        self,
        partitions: Collection[int],
        *,
        due_after: int | None,
        due_until: int,
        mark_after: int | None = None,
    ) -> list[WheelEntry]:
        """Pending tasks of `partitions` due by `due_until`: those due after `due_after`
        (None: all), or, when `mark_after` is given instead, those made pending (inserted,
        retried, reaped) since that mark."""
        ...

    async def overdue(
        self, partitions: Collection[int], *, due_before: int, limit: int
    ) -> list[WheelEntry]:
        """Pending tasks of `partitions` due before `due_before`, oldest first."""
        ...

    async def max_seq(self) -> int: ...

    async def max_mark(self) -> int:
        """The latest mark stamped on a task made pending."""
        ...

    async def subscribe(self, on_news: Callable[[News], None]) -> None:
        """Call `on_news` when another process commits tasks it made pending (NEW_TASKS:
        inserted, retried, freed by their predecessors, given their turn) or ends tasks
        whose dependents or ordering key must be told (ENDED). A hint only, which may
        be lost: the engine also looks on its own every second."""
        ...


class AttemptStore(Protocol):
    """Attempts: claims, their leases and their ends, and the leases that lapsed."""

    async def claim(
        self, items: Sequence[tuple[int, int]], *, now_ms: int, lease_ms: int, worker_id: str
    ) -> list[ClaimedTask]:
        """Compare-and-set due pending tasks to running under a lease.

        `items` are (seq, triggered_ms); the new version is the claim's fence. A task
        with an ordering key is claimed only when it holds the key, which passes to
        the earliest due of the key's tasks once the holder has ended for good (its
        retries keep it); the others become `waiting` until their turn."""
        ...

    async def claim_some(
        self,
        items: Sequence[tuple[int, int]],
        *,
        now_ms: int,
        lease_ms: int,
        worker_id: str,
        start_now: int | None,
    ) -> Claimed:
        """`claim`, within the rate and concurrency limits of the tasks (`plans.limits`):
        those a limit holds back stay pending, held by it; of the tasks a limit admits,
        at most `start_now` are claimed (what the claimer can start at once, None: any),
        and the rest are `deferred`, for the claimer to put back on the ready queue."""
        ...

    async def extend_leases(self, fences: Mapping[int, int], *, until_ms: int) -> set[int]:
        """Extend the leases whose fence still holds; return the seqs whose fence is stale."""
        ...

    async def finish(self, finishes: Sequence[Finish]) -> list[bool]:
        """Apply each end of attempt whose fence holds, with its execution row.

        One transaction for the batch; returns per finish whether its fence held."""
        ...

    async def expired_leases(
        self, partitions: Collection[int], *, now_ms: int, limit: int
    ) -> list[TaskRecord]: ...

    async def expire_unstarted(
        self, partitions: Collection[int], *, now_ms: int, limit: int
    ) -> list[TaskRecord]:
        """End `expired` up to `limit` tasks of `partitions` whose expiry has come before
        they started (pending, waiting or blocked), earliest expiry first; return them."""
        ...


class LimitStore(Protocol):
    """Rate and concurrency limits (`core.limits`), and the wakes of what they hold."""

    async def put_limit(self, limit: Limit, now_ms: int) -> None:
        """Set a limit (a new rule replaces the old at once; its window is kept)."""
        ...

    async def delete_limit(self, limit_id: str, now_ms: int) -> bool:
        """Remove a limit, letting the tasks it held go; False if there was none."""
        ...

    async def limits_in_use(self, now_ms: int, limit_id: str | None = None) -> list[LimitUse]:
        """Every limit (or the one named), with its use."""
        ...

    async def wake_held(self, now_ms: int, *, sweep: bool = False) -> int:
        """Let go the tasks held by limits whose wake is due, as many as each has room
        for; return how many. `sweep`: first wake every limit that holds tasks."""
        ...

    async def first_wake_ms(self) -> int | None:
        """When the first wake of a limit is due (None: there is none)."""
        ...


class DispatchStore(PendingStore, AttemptStore, LimitStore, Protocol):
    """The dispatch path whole: pending tasks and their attempts."""


class ScheduleStore(Protocol):
    async def insert_schedule(self, schedule: ScheduleRecord, first: NewTask) -> str:
        """Commit a schedule with its first instance; return the schedule's id.

        When `first` carries an idempotency key (per task type) already held within its
        window for the same request, nothing is written and the id returned is that of
        the schedule first made for the key; held for a different request, the call
        raises `RejectedItems` with an `IdempotencyConflict`."""
        ...

    async def get_schedule(self, schedule_id: str) -> ScheduleRecord | None: ...

    async def schedules_of(self, seqs: Collection[int]) -> dict[int, ScheduleRecord]:
        """The active schedules whose current instance is one of `seqs`, keyed by that seq."""
        ...

    async def advance_schedules(self, advances: Sequence[Advance]) -> list[int | None]:
        """For each advance: if the schedule's version still holds and so does its fence
        (when given), insert the next instance and make it current. A skip (seq, reason)
        cancels that instance with the reason, and the previous instance stays the one an
        overlap check looks at. Returns the new seq, or None where the compare-and-set
        lost or the fence was stale; such an advance writes nothing."""
        ...

    async def set_schedule_status(
        self, schedule_id: str, status: str, *, only_from: Collection[str] | None = None
    ) -> ScheduleRecord | None:
        """Set the status, if the schedule's is one of `only_from` (when given), in one
        step; the schedule as now stored, or None when there is none or it did not match."""
        ...


class LeaseRenewalStore(Protocol):
    """A scheduler's hold on its partitions."""

    async def partitions(self) -> int:
        """P, fixed when the store was created."""
        ...

    async def now_ms(self) -> int:
        """The store's clock: the one every node of the cluster keeps time by."""
        ...

    async def release(self, node_id: str, held: Mapping[int, int]) -> None: ...

    async def renew(
        self,
        node_id: str,
        marks: Mapping[int, tuple[int, int]],
        wanted: Collection[int],
        *,
        ttl_ms: int,
        beat: bool,
    ) -> Renewal:
        """A scheduler's renewal in one step (one round trip to a far store): record
        the watermarks of `marks` (partition -> (epoch, watermark)) fenced by epoch,
        give back those of `marks` not `wanted`, and take or renew the leases on
        `wanted` that are free, expired or ours, for `ttl_ms`. A partition of `marks`
        lost meanwhile comes back under a new epoch, or not at all. With `beat`, also
        say the node is alive for `ttl_ms` more (by the store's clock) and return the
        ids of every node alive now, sorted."""
        ...

    async def leave(self, node_id: str) -> None:
        """This node stops: the others share its partitions at once."""
        ...


class ClusterViewStore(Protocol):
    """The cluster as operators see it: watermarks, nodes alive and lease holders."""

    async def watermarks(self) -> dict[int, int]: ...

    async def scheduler_nodes(self) -> list[SchedulerNode]:
        """The scheduler nodes whose heartbeat has not lapsed by the store's clock."""
        ...

    async def lease_holders(self) -> list[LeaseHolder]:
        """The partitions leased now (by the store's clock), by partition."""
        ...


class LeaseStore(LeaseRenewalStore, ClusterViewStore, Protocol):
    """Partition leases whole: held by schedulers, seen by operators."""


class WorkerStore(Protocol):
    """Workers alive, for operators to see: each reports every few seconds."""

    async def worker_seen(self, beat: WorkerBeat, *, ttl_ms: int) -> None:
        """The worker is alive for `ttl_ms` more, by the store's clock."""
        ...

    async def worker_left(self, worker_id: str) -> None: ...

    async def live_workers(self) -> list[WorkerRecord]:
        """Workers whose report has not lapsed, by id, with their tasks running now."""
        ...


class TokenStore(Protocol):
    async def create_token(
        self, token_id: str, token_hash: str, *, name: str, scopes: frozenset[str], now_ms: int
    ) -> None: ...

    async def list_tokens(self) -> list[TokenRecord]: ...

    async def revoke_token(self, token_id: str, now_ms: int) -> bool: ...

    async def active_tokens(self) -> dict[str, frozenset[str]]:
        """Hash -> scopes of every token not revoked."""
        ...


@runtime_checkable
class HostLockedStore(Protocol):
    """A store in a file on this host (SQLite), whose scheduling processes hold an OS
    lock on it for their life: a dead holder is recognised at once, not when its
    partition leases lapse."""

    async def hold_lock(self, node_id: str) -> bool:
        """Hold the file's lock until `close` if it is free: then the process that held
        it before is gone, and its partition leases are freed at once. False while
        another live process holds it (said once in the log)."""
        ...


@runtime_checkable
class RangedTaskStore(Protocol):
    """A store whose tasks are partitioned by ranges of seq, each a span of creation
    time, so that retention drops whole ranges (PostgreSQL)."""

    async def roll_task_ranges(self, *, period_ms: int) -> int:
        """Move new seqs on to the next range once the current one has been open for
        `period_ms`, keeping one range ready ahead; return the current range's start."""
        ...

    async def drop_expired_task_ranges(self, *, retention_ms: int) -> int:
        """Drop the ranges sealed more than `retention_ms` ago whose every task has
        ended; return how many."""
        ...


@runtime_checkable
class PrunedTaskStore(Protocol):
    """A store whose ended tasks are deleted row by row (SQLite): in batches, each a
    short transaction, so that its one writer is never held for long."""

    async def delete_ended_tasks(
        self, *, ended_before_ms: int, after_seq: int, batch: int
    ) -> Pruned:
        """Look at the next `batch` tasks after `after_seq`, of those created before
        `ended_before_ms`, and delete in one transaction those that ended before it and
        that nothing still needs: not a task a dependent that has not ended waits on,
        nor one of a workflow with a task that has not, nor a schedule's current or
        previous instance, nor one whose news or ordering key is still to be passed
        on. Their executions, idempotency keys and edges go with them, and so do their
        workflows once empty."""
        ...


class Store(TaskStore, DispatchStore, ScheduleStore, LeaseStore, TokenStore, WorkerStore, Protocol):
    def interrupt(self) -> None:
        """Stop the store work running now, for a node that must stop on time: work
        that had not committed fails with `StoreUnavailable` (nothing was stored), work
        that may have fails with `OutcomeUnknown`. Work started later runs as usual."""
        ...

    async def close(self) -> None: ...
