"""The steps a plan asks its store to take, and the two runners that take them.

A plan is a generator: it yields a `Step` (what to read or write, as data) and is sent
back the step's answer, until it returns its result. It does no I/O, so a rule is
written once for both stores and unit-tested by answering its steps from a dict. Each
store answers a step with a method named after it (`TakeMarks` -> `take_marks`): the
SQLite store on its writer's thread (`run`), the PostgreSQL store on the event loop
(`run_async`). A step is one statement (or none, where a store needs no such thing:
SQLite's single writer takes no locks), so a plan costs the round trips it yields.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias, TypeVar, cast

from tickwheel.models import ScheduleRecord, WorkflowRecord
from tickwheel.storage.records import Fence

T = TypeVar("T")
KeyRef: TypeAlias = tuple[str, str]  # (task type, idempotency key)


class Step:
    """One statement a plan needs; its answer's type is said on each step."""

    op: ClassVar[str]  # the answering method's name

    def __init_subclass__(cls) -> None:
        cls.op = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


Plan: TypeAlias = Generator[Step, Any, T]


def run(plan: Plan[T], answer: Callable[[Step], Any]) -> T:
    """Take a plan's steps one after another, synchronously."""
    try:
        step = next(plan)
        while True:
            step = plan.send(answer(step))
    except StopIteration as done:
        return cast(T, done.value)


async def run_async(plan: Plan[T], answer: Callable[[Step], Awaitable[Any]]) -> T:
    """Take a plan's steps one after another, awaiting each answer."""
    try:
        step = next(plan)
        while True:
            step = plan.send(await answer(step))
    except StopIteration as done:
        return cast(T, done.value)


def answerer(store: object) -> Callable[[Step], Any]:
    """A store's answers, found by each step's `op`."""
    return lambda step: getattr(store, step.op)(step)


# -- marks, seqs and task rows ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LockMarks(Step):
    """Take the marks' counter lock before any other (PostgreSQL: writers that take
    marks serialise on it, so none deadlocks with another). -> None"""


@dataclass(frozen=True, slots=True)
class TakeMarks(Step):
    """`count` new marks, in commit order (PostgreSQL also tells the loaders). -> range"""

    count: int


@dataclass(frozen=True, slots=True)
class NextSeqs(Step):
    """`count` seqs for new tasks, in commit order. -> list[int]"""

    count: int


@dataclass(frozen=True, slots=True)
class InsertTasks(Step):
    """Task rows: [seq, mark, *convert.task_params] each. -> None"""

    rows: list[list[Any]]


@dataclass(frozen=True, slots=True)
class SeqsOf(Step):
    """-> dict[task id, seq]"""

    task_ids: list[str]


@dataclass(frozen=True, slots=True)
class DeleteTask(Step):
    """-> None"""

    seq: int


# -- repeated submissions ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredRequests(Step):
    """The request hash of each of `task_ids` already stored. -> dict[str, str | None]"""

    task_ids: list[str]


@dataclass(frozen=True, slots=True)
class TakeKeys(Step):
    """Take each key (type, key, task id, request hash, created) that is free or was
    taken before `free_before`. -> set[KeyRef] of those taken"""

    rows: list[tuple[str, str, str, str, int]]
    free_before: int


@dataclass(frozen=True, slots=True)
class KeyHolders(Step):
    """-> dict[KeyRef, (task id, request hash)] of the keys as held"""

    keys: list[KeyRef]


# -- dependencies -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatusesOf(Step):
    """Tasks by id, read under a row lock on PostgreSQL (a predecessor must not end
    between this read and the commit that marks it as having dependents).
    -> dict[task id, (seq, Status)]"""

    task_ids: list[str]


@dataclass(frozen=True, slots=True)
class InsertLinks(Step):
    """Edges (predecessor, dependent, state), counters (dependent, total, satisfied) and
    the predecessors now watched (`has_dependents`). -> None"""

    edges: list[tuple[int, int, str]]
    counters: list[tuple[int, int, int]]
    watched: list[int]


@dataclass(frozen=True, slots=True)
class TakePropagations(Step):
    """Up to `limit` ended tasks whose news is due by `now`.
    -> rows (seq, task_id, status, ordering_key)"""

    now: int
    limit: int


@dataclass(frozen=True, slots=True)
class SettleEdges(Step):
    """Settle the waiting edges out of `seqs` as `state`.
    -> list[(predecessor, dependent)] settled"""

    seqs: list[int]
    state: str


@dataclass(frozen=True, slots=True)
class CountSatisfied(Step):
    """Add to each dependent's counter, within its total.
    -> list[(dependent, whether complete)]"""

    counts: list[tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Unblock(Step):
    """Blocked dependents (seq, mark) become pending, due `now`. -> int changed"""

    tasks: list[tuple[int, int]]
    now: int


@dataclass(frozen=True, slots=True)
class FailUpstream(Step):
    """Blocked dependents (seq, error) become upstream_failed. -> int changed"""

    tasks: list[tuple[int, str]]
    now: int


@dataclass(frozen=True, slots=True)
class ForgetPropagations(Step):
    """-> None"""

    seqs: list[int]


@dataclass(frozen=True, slots=True)
class PropagateLater(Step):
    """Queue the news of (seq, not before) again. -> None"""

    rows: list[tuple[int, int]]


@dataclass(frozen=True, slots=True)
class HasPropagations(Step):
    """-> bool"""

    now: int


# -- ordering keys ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LockKeys(Step):
    """Per-key locks, keys sorted (PostgreSQL's advisory locks). -> None"""

    keys: list[str]


@dataclass(frozen=True, slots=True)
class KeyHolder(Step):
    """-> row (holder_seq, status, lease_expires_at) or None"""

    key: str


@dataclass(frozen=True, slots=True)
class NextOfKey(Step):
    """The earliest due of the key's tasks not yet run. -> (seq, status) or None"""

    key: str
    now: int


@dataclass(frozen=True, slots=True)
class FreeKey(Step):
    """-> None"""

    key: str


@dataclass(frozen=True, slots=True)
class HoldKey(Step):
    """-> None"""

    key: str
    seq: int


@dataclass(frozen=True, slots=True)
class TakeTurn(Step):
    """A waiting task is pending again, with a new mark. -> None"""

    seq: int
    mark: int


@dataclass(frozen=True, slots=True)
class KeyedClaims(Step):
    """Of `seqs`, the pending keyed tasks due by `latest`. -> list[(seq, key)]"""

    seqs: list[int]
    latest: int


@dataclass(frozen=True, slots=True)
class WaitForTurn(Step):
    """-> None"""

    seqs: list[int]


# -- limits -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Skipped:
    """The task types, queues and limit keys that have limits: a plain claim skips
    their tasks."""

    task_types: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.task_types or self.queues or self.keys)


@dataclass(frozen=True, slots=True)
class LimitedCandidates(Step):
    """Of the (seq, triggered) `items`, the pending tasks due by their release's stamp
    and not expired at `now`.
    -> rows (seq, task_type, queue, limit_key, priority, due_time, ordering_key)"""

    items: Sequence[tuple[int, int]]
    now: int


@dataclass(frozen=True, slots=True)
class StoreNow(Step):
    """The store's clock now (PostgreSQL's, every node's one clock; SQLite's host's): the
    time of rate windows, whoever claims. -> int ms"""


@dataclass(frozen=True, slots=True)
class LockLimits(Step):
    """The limits of `ids` that exist, locked (PostgreSQL: sorted, FOR UPDATE).
    -> rows (limit_id, scope, name, rate_count, rate_period_ms, concurrency,
    recent_claims)"""

    ids: list[str]


@dataclass(frozen=True, slots=True)
class RunningOf(Step):
    """Per limit of `ids`, its tasks running, and cancelled ones whose lease has not
    ended by `now`, with the first end of those leases. -> dict[limit id, (count,
    ms or None)] (absent: none)"""

    ids: list[str]
    now: int


@dataclass(frozen=True, slots=True)
class HeldHeads(Step):
    """Per limit of `ids`, the first task it holds. -> dict[limit id, (priority,
    due_time, seq)]"""

    ids: list[str]


@dataclass(frozen=True, slots=True)
class ListLimits(Step):
    """Every limit (or the one of `limit_id`), by id, with how many tasks it holds.
    -> rows (limit_id, scope, name, rate_count, rate_period_ms, concurrency,
    recent_claims, updated_at, held)"""

    limit_id: str | None


@dataclass(frozen=True, slots=True)
class HoldTasks(Step):
    """Pending tasks (seq, limit id) held back by that limit. -> None"""

    rows: list[tuple[int, str]]


@dataclass(frozen=True, slots=True)
class WriteWindows(Step):
    """Limits' recent claims (limit id, `Window.encode`). -> None"""

    rows: list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class WakeLater(Step):
    """Wake each limit (limit id, not before), keeping an earlier wake. -> None"""

    rows: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class DueWakes(Step):
    """Up to `limit` wakes due by `now` that no other resolver is taking (PostgreSQL:
    locked). -> list[(wake id, limit id)]"""

    now: int
    limit: int


@dataclass(frozen=True, slots=True)
class ForgetWakes(Step):
    """Delete the wakes taken (by id: one queued since is kept). -> None"""

    ids: list[int]


@dataclass(frozen=True, slots=True)
class HeldOf(Step):
    """The first `count` tasks the limit holds, in priority and due order. -> list[int]"""

    limit_id: str
    count: int


@dataclass(frozen=True, slots=True)
class ReleaseHeld(Step):
    """Held tasks (seq, mark) let go: pending with a new mark, so the loader takes them
    to the ready queue. -> None"""

    rows: list[tuple[int, int]]


@dataclass(frozen=True, slots=True)
class SweepWakes(Step):
    """Wake at `now` every limit that holds tasks and has no wake queued (one that was
    missed). -> None"""

    now: int


# -- attempts -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim(Step):
    """Compare-and-set (seq, triggered) items to running; `keyed`: those holding their
    ordering key, else those without one. -> rows of the claimed"""

    items: Sequence[tuple[int, int]]
    now: int
    lease_until: int
    worker_id: str
    keyed: bool
    # Tasks of these limits are left to the limited claim (`plans.limits`)...
    skip: Skipped = Skipped()
    # ...whose claims clear `held_by` and set `holds_slot` (True: admitted by a
    # concurrency limit); None: a plain claim, which writes neither.
    holds_slot: bool | None = None


@dataclass(frozen=True, slots=True)
class FinishRows(Step):
    """Ends of attempts, `Ends.rows` each. -> rows (seq, attempts, started_at,
    worker_id, schedule_id) of those whose fence held"""

    rows: list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class InsertExecutions(Step):
    """-> None"""

    rows: list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Cancel(Step):
    """-> the cancelled row (seq, attempts, started_at, worker_id, schedule_id,
    lease_expires_at), or None"""

    seq: int
    version: int
    now: int


@dataclass(frozen=True, slots=True)
class Redrive(Step):
    """-> bool"""

    seq: int
    version: int
    now: int
    mark: int


@dataclass(frozen=True, slots=True)
class SetPriority(Step):
    """-> bool"""

    seq: int
    version: int
    priority: int
    mark: int


# -- workflows and schedules -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class InsertWorkflow(Step):
    """-> bool: False when one with its id is stored"""

    workflow: WorkflowRecord


@dataclass(frozen=True, slots=True)
class InsertSchedule(Step):
    """-> None"""

    schedule: ScheduleRecord


@dataclass(frozen=True, slots=True)
class SetCurrentSeq(Step):
    """-> None"""

    schedule_id: str
    seq: int


@dataclass(frozen=True, slots=True)
class FencesHolding(Step):
    """Those of `fences` whose lease holds by the store's clock. -> set[Fence]"""

    fences: set[Fence]


@dataclass(frozen=True, slots=True)
class AdvanceSchedule(Step):
    """Compare-and-set the schedule on to `seq`. -> bool"""

    seq: int
    schedule_id: str
    version: int
    skipped: bool


@dataclass(frozen=True, slots=True)
class SkipInstance(Step):
    """-> None"""

    seq: int
    now: int
    reason: str


def take_marks(count: int) -> Plan[range]:
    """`count` new marks; none costs no statement."""
    if count == 0:
        return range(0)
    marks: range = yield TakeMarks(count)
    return marks
