"""What a store's writes do, worked out without I/O, so both stores share one version.

Each store reads what a plan needs and writes what it returns, in its own transaction
and its own driver (sqlite3 on a thread, asyncpg on the event loop); the rules live here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from tickwheel.errors import InvalidRequest, RejectedItems, TickwheelError
from tickwheel.models import Finish, NewTask, Status
from tickwheel.storage import rows as convert
from tickwheel.storage.rows import Row

Known = dict[str, tuple[int, Status]]  # task id -> (seq, status)


def held_ids(tasks: Sequence[NewTask], originals: dict[int, str]) -> list[str]:
    """The id of the task that holds each insert's slot: its own, or for an idempotent
    repeat the original's."""
    return [originals.get(i, t.task_id) for i, t in enumerate(tasks)]


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
            seq, attempts, started, worker_id, schedule_id = (row[i] for i in range(5))
            f = self.first[seq]
            run = (seq, schedule_id, attempts, f.fence, worker_id, started, f.ended_ms)
            executions.append((*run, str(f.outcome), f.error))
        return executions

    def answers(self, written: set[int], repeats: Sequence[bool]) -> list[bool]:
        """Per finish, in order, whether its fence held."""
        again = dict(zip(map(id, self.repeats), repeats, strict=True))
        return [f.seq in written if self.first[f.seq] is f else again[id(f)] for f in self.finishes]


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
    holder, status, lease_until = held[0], held[1], held[2]
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
        if row[3] is not None:
            grouped.setdefault(row[3], []).append(row[0])
    return dict(sorted(grouped.items()))


def later(ended: dict[str, list[int]], key: str, turn: Turn) -> list[tuple[int, int]]:
    """(seq, not before) of the ends to tell again: a cancelled holder keeps its key
    while its attempt may still be running."""
    if turn.busy_until is None:
        return []
    return [(seq, turn.busy_until) for seq in ended[key]]
