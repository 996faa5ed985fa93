"""What a store's writes do, worked out without I/O, so both stores share one version.

Each store reads what a plan needs and writes what it returns, in its own transaction
and its own driver (sqlite3 on a thread, asyncpg on the event loop); the rules live here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, NamedTuple

from tickwheel.errors import IdempotencyConflict, InvalidRequest, RejectedItems, TickwheelError
from tickwheel.models import Finish, NewTask, Outcome, Status
from tickwheel.storage import rows as convert
from tickwheel.storage.base import Held
from tickwheel.storage.rows import Row

Known = dict[str, tuple[int, Status]]  # task id -> (seq, status)


def held(tasks: Sequence[NewTask], originals: dict[int, str], seq_of: dict[str, int]) -> list[Held]:
    """What holds each insert's slot: the task itself, or for a repeated submission the
    task first made for it (`seq_of`: the seq of every task id involved)."""
    holders = [originals.get(i, t.task_id) for i, t in enumerate(tasks)]
    return [Held(seq_of[h], h, i in originals) for i, h in enumerate(holders)]


def row_marks(direct: Sequence[bool], marks: Iterable[int]) -> list[int]:
    """Each inserted task's mark, by which the loader finds it: a new one from `marks`
    (as many as tasks not `direct`), or 0 for a task its submitter pushes to the ready
    queue itself. A direct task lost between commit and push is overdue and unclaimed,
    which the reconciler releases again."""
    new = iter(marks)
    return [0 if d else next(new) for d in direct]


# -- repeated submissions -------------------------------------------------------

KeyRef = tuple[str, str]  # (task type, idempotency key)


class Repeats:
    """Which tasks of an insert repeat an earlier submission, so that a retried request
    never makes a second task. A repeat of the same request is answered with the task
    first made for it; a different request under the same id or key is a conflict.

    A submission is named by a task id the client chose (the task's own row is the
    dedupe: no row of its own) or by an idempotency key (a row in `idempotency_keys`,
    held for a window). In the insert's transaction, one statement each, the store
    looks up the chosen ids (`chosen_ids`, then `settle_ids`), takes the keys of the
    tasks still new (`keys_to_take`), and reads the holders of the keys it could not
    take (`keys_not_taken`, then `settle_keys`)."""

    def __init__(self, tasks: Sequence[NewTask]) -> None:
        self._tasks = tasks
        self._originals: dict[int, str] = {}
        self._conflicts: dict[int, TickwheelError] = {}
        # A task naming the same id or key as an earlier one of this insert: judged
        # against that one once it is settled. Index -> (earlier index, field, value).
        self._twins: dict[int, tuple[int, str, str]] = {}
        self._twin_up("task_id", lambda t: (t.task_id, t.task_id) if t.request_hash else None)

    def chosen_ids(self) -> list[str]:
        """The ids the client chose, to look up among the stored tasks (sorted)."""
        return sorted({self._tasks[i].task_id for i in self._open() if self._chosen(i)})

    def settle_ids(self, stored: dict[str, str | None]) -> None:
        """`stored`: the request hash of each chosen id already stored (None for a task
        whose id the server made)."""
        for i in self._open():
            t = self._tasks[i]
            if self._chosen(i) and t.task_id in stored:
                self._judge(i, t.task_id, stored[t.task_id], "task_id", t.task_id)

    def keys_to_take(self) -> list[tuple[str, str, str, str, int]]:
        """(task type, key, task id, request hash, created) of each key the tasks still
        new carry, sorted (a lock order). Called once, after `settle_ids`."""
        self._twin_up(
            "idempotency_key", lambda t: (_key_of(t), t.idempotency.key) if t.idempotency else None
        )
        rows = []
        for i in self._open():
            t = self._tasks[i]
            if t.idempotency is not None:
                key = t.idempotency
                rows.append((t.task_type, key.key, t.task_id, key.request_hash, t.created_ms))
        return sorted(rows)

    def keys_free_before(self) -> int:
        """A key created before this is free to take again (its window has passed)."""
        return min((t.idempotency.since_ms for t in self._tasks if t.idempotency), default=0)

    def keys_not_taken(self, taken: set[KeyRef]) -> list[KeyRef]:
        """Of the keys to take, those the store did not take: their holders to read."""
        refs = {_key_of(self._tasks[i]) for i in self._open()} - {None} - taken
        return sorted(r for r in refs if r is not None)

    def settle_keys(self, holders: dict[KeyRef, tuple[str, str]]) -> None:
        """`holders`: (task id, request hash) of each key not taken, as held."""
        for i in self._open():
            ref = _key_of(self._tasks[i])
            if ref is not None and ref in holders:
                holder, request_hash = holders[ref]
                self._judge(i, holder, request_hash, "idempotency_key", ref[1])

    def originals(self) -> dict[int, str]:
        """Index -> the task id first made for that request; raises `RejectedItems`
        naming every conflict."""
        for i, (first, name, value) in sorted(self._twins.items()):
            if first in self._conflicts:
                self._conflicts[i] = self._conflicts[first]
            else:
                holder = self._originals.get(first, self._tasks[first].task_id)
                self._judge(i, holder, _hash(self._tasks[first]), name, value)
        if self._conflicts:
            raise RejectedItems(self._conflicts)
        return self._originals

    def _twin_up(self, name: str, named: Callable[[NewTask], tuple[Hashable, str] | None]) -> None:
        """Mark each task that names the same (by `named`: what it is named by, and the
        value to show) as an earlier open task of this insert."""
        seen: dict[Hashable, int] = {}
        for i in self._open():
            found = named(self._tasks[i])
            if found is not None:
                first = seen.setdefault(found[0], i)
                if first != i:
                    self._twins[i] = (first, name, found[1])

    def _open(self) -> Sequence[int]:
        """Tasks not yet judged a repeat or a conflict, nor a twin of an earlier one."""
        if not (self._originals or self._conflicts or self._twins):  # the usual case
            return range(len(self._tasks))
        judged = self._originals.keys() | self._conflicts.keys() | self._twins.keys()
        return [i for i in range(len(self._tasks)) if i not in judged]

    def _chosen(self, i: int) -> bool:
        return self._tasks[i].request_hash is not None

    def _judge(self, i: int, holder: str, request_hash: str | None, name: str, value: str) -> None:
        t = self._tasks[i]
        if request_hash is not None and request_hash == _hash(t):
            self._originals[i] = holder
        elif name == "task_id":
            self._conflicts[i] = IdempotencyConflict(
                f"task_id {value!r} is taken by a different request; choose a new id for a"
                " new task",
                holder,
            )
        else:
            self._conflicts[i] = IdempotencyConflict.of(t.task_type, value, holder)


def _key_of(task: NewTask) -> KeyRef | None:
    return (task.task_type, task.idempotency.key) if task.idempotency is not None else None


def _hash(task: NewTask) -> str | None:
    if task.request_hash is not None:
        return task.request_hash
    return task.idempotency.request_hash if task.idempotency is not None else None


# -- dependencies ---------------------------------------------------------------


class Links(NamedTuple):
    edges: list[tuple[int, int, str]]  # (predecessor seq, dependent seq, state)
    counters: list[tuple[int, int, int]]  # (dependent seq, total, satisfied already)
    watched: list[int]  # predecessors not ended yet: they now have dependents


class Dependencies:
    """The tasks of one insert that wait on others: the state each starts in, then the
    edges and counters that the dependency resolver works from.

    A predecessor in the same insert must come before its dependents (a workflow is
    inserted in topological order); the others are read by the store in the insert's
    transaction (`outside`), so one that ends meanwhile is either seen ended or tells
    its dependents later.
    """

    def __init__(self, tasks: Sequence[NewTask], at: Sequence[int], known: Known) -> None:
        """`at`: each task's index in the whole insert, for the errors; `known`: the
        predecessors outside the insert, as stored. Raises `RejectedItems` naming every
        task that waits on an id nobody has."""
        self._tasks = tasks
        self._known = dict(known)
        self.statuses: list[Status] = []
        unknown: dict[int, TickwheelError] = {}
        for index, t in zip(at, tasks, strict=True):
            missing = [p for p in t.predecessors if p not in self._known]
            if missing:
                unknown[index] = InvalidRequest("dependencies", f"no task has the id {missing[0]}")
            status = convert.start_status(
                [self._known[p][1] for p in t.predecessors if p in self._known]
            )
            self.statuses.append(status)
            self._known[t.task_id] = (-1, status)  # its seq comes with the insert
        if unknown:
            raise RejectedItems(unknown)

    @staticmethod
    def outside(tasks: Sequence[NewTask]) -> list[str]:
        """The predecessors to read before planning, sorted (a lock order)."""
        return sorted({p for t in tasks for p in t.predecessors})

    def links(self, seqs: Sequence[int]) -> Links | None:
        """What to write once the tasks have their seqs; None when none waits."""
        if all(not t.predecessors for t in self._tasks):
            return None
        for t, seq in zip(self._tasks, seqs, strict=True):
            self._known[t.task_id] = (seq, self._known[t.task_id][1])
        links = Links([], [], [])
        watched: set[int] = set()
        for t, seq, status in zip(self._tasks, seqs, self.statuses, strict=True):
            predecessors = [self._known[p] for p in dict.fromkeys(t.predecessors)]
            links.edges.extend((p, seq, convert.edge_state(s)) for p, s in predecessors)
            if status is Status.BLOCKED:
                done = sum(s is Status.SUCCEEDED for _, s in predecessors)
                links.counters.append((seq, len(predecessors), done))
                watched.update(p for p, s in predecessors if not s.is_final)
        links.watched.extend(sorted(watched))
        return links


# -- ends of attempts -----------------------------------------------------------


class Ends:
    """A batch of ends of attempts, each applied with a compare-and-set on its fence.

    A batch holds a seq at most once per round: a task ended twice in one batch (a
    worker and the reaper at once) has its repeat compared again in a later round,
    after the first end moved the version on."""

    def __init__(self, finishes: Sequence[Finish]) -> None:
        self.finishes = finishes
        self.first: dict[int, Finish] = {}
        for f in finishes:
            self.first.setdefault(f.seq, f)
        self.repeats = [f for f in finishes if self.first[f.seq] is not f]

    @property
    def retries(self) -> int:
        """How many go back to pending: each needs a new mark."""
        return sum(f.retry_at_ms is not None for f in self.first.values())

    def rows(self, marks: Iterable[int]) -> list[tuple[Any, ...]]:
        """[seq, fence, status, retry_at, ended, error, mark, expired_before] each."""
        new_marks = iter(marks)
        return [
            (
                *(f.seq, f.fence, str(f.status), f.retry_at_ms, f.ended_ms, f.error),
                None if f.retry_at_ms is None else next(new_marks),
                f.lease_expired_before,
            )
            for f in self.first.values()
        ]

    def executions(self, written: Iterable[Row]) -> list[tuple[Any, ...]]:
        """An execution row for each end written, from the rows the update returned
        (seq, attempts, started_at, worker_id, schedule_id)."""
        executions = []
        for row in written:
            f = self.first[row["seq"]]
            executions.append(
                (
                    f.seq,
                    row["schedule_id"],
                    row["attempts"],
                    f.fence,
                    row["worker_id"],
                    row["started_at"],
                    f.ended_ms,
                    str(f.outcome),
                    f.error,
                    f.retry_at_ms,
                )
            )
        return executions

    def answers(self, written: set[int], repeats: Sequence[bool]) -> list[bool]:
        """Per finish, in order, whether its fence held."""
        again = dict(zip(map(id, self.repeats), repeats, strict=True))
        return [f.seq in written if self.first[f.seq] is f else again[id(f)] for f in self.finishes]


def cancelled_run(cancelled: Row | None, fence: int, now_ms: int) -> tuple[Any, ...] | None:
    """The execution row of an attempt cancelled while it ran, from the row the cancel
    returned (seq, attempts, started_at, worker_id, schedule_id, lease_expires_at): a
    task cancelled while running keeps its lease, one cancelled before has none. None
    when nothing was running (or nothing was cancelled)."""
    if cancelled is None or cancelled["lease_expires_at"] is None:
        return None
    return (
        cancelled["seq"],
        cancelled["schedule_id"],
        cancelled["attempts"],
        fence,
        cancelled["worker_id"],
        cancelled["started_at"],
        now_ms,
        str(Outcome.CANCELLED),
        "cancelled while it ran",
        None,
    )


# -- ordering keys ----------------------------------------------------------------


class Turn(NamedTuple):
    holder: int | None
    took_turn: bool = False  # a waiting task's turn came: it is pending again
    busy_until: int | None = None  # a cancelled holder's attempt may run until then


def still_held(held: Row | None, now_ms: int) -> Turn | None:
    """The key's turn while its holder (holder seq, status, lease end) keeps it: until
    it ends for good, and a cancelled one until its attempt's lease ends; else None."""
    if held is None:
        return None
    holder, status, lease_until = held["holder_seq"], held["status"], held["lease_expires_at"]
    if not Status(status).is_final:
        return Turn(holder)
    if status == Status.CANCELLED and lease_until is not None and lease_until > now_ms:
        return Turn(holder, busy_until=lease_until)
    return None


def ends_by_key(ended: Iterable[Row]) -> dict[str, list[int]]:
    """The ended tasks (seq, task id, status, ordering key) grouped by key, keys sorted
    (a lock order)."""
    grouped: dict[str, list[int]] = {}
    for row in ended:
        if row["ordering_key"] is not None:
            grouped.setdefault(row["ordering_key"], []).append(row["seq"])
    return dict(sorted(grouped.items()))


def later(ended: dict[str, list[int]], key: str, turn: Turn) -> list[tuple[int, int]]:
    """(seq, not before) of the ends to tell again: a cancelled holder keeps its key
    while its attempt may still be running."""
    if turn.busy_until is None:
        return []
    return [(seq, turn.busy_until) for seq in ended[key]]
