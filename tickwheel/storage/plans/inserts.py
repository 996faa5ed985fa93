"""Inserting tasks, workflows, schedules and schedules' next instances (rules and plans).

Every insert reads what it needs (repeats, predecessors), then writes the task rows
with their seqs and marks, then the links of those that wait on others: one statement
per kind, however many tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from tickwheel.errors import InvalidRequest, RejectedItems, TickwheelError
from tickwheel.models import NewTask, ScheduleRecord, Status, WorkflowRecord
from tickwheel.storage import rows as convert
from tickwheel.storage.plans.repeats import repeats
from tickwheel.storage.plans.steps import (
    AdvanceSchedule,
    DeleteTask,
    FencesHolding,
    InsertLinks,
    InsertSchedule,
    InsertTasks,
    InsertWorkflow,
    LockMarks,
    NextSeqs,
    Plan,
    SeqsOf,
    SetCurrentSeq,
    SkipInstance,
    StatusesOf,
    take_marks,
)
from tickwheel.storage.records import Advance, Fence, Held

Known = dict[str, tuple[int, Status]]  # task id -> (seq, status)


def insert_tasks(tasks: Sequence[NewTask]) -> Plan[list[Held]]:
    """Insert the tasks that repeat no earlier submission, with their links; answer
    what holds each one's slot."""
    yield LockMarks()  # first, as every writer that takes marks does: no deadlock
    originals = yield from repeats(tasks)
    fresh_at = [i for i in range(len(tasks)) if i not in originals]
    fresh = [tasks[i] for i in fresh_at]
    outside = Dependencies.outside(fresh)
    known: Known = (yield StatusesOf(outside)) if outside else {}
    graph = Dependencies(fresh, fresh_at, known)
    params = [convert.task_params(t, s) for t, s in zip(fresh, graph.statuses, strict=True)]
    seqs = yield from insert_rows(params, [t.direct for t in fresh])
    links = graph.links(seqs)
    if links is not None:
        yield InsertLinks(links.edges, links.counters, links.watched)
    if not originals:  # the usual case: every task is new, in order
        statuses = graph.statuses
        return [
            Held(s, t.task_id, False, st) for t, s, st in zip(tasks, seqs, statuses, strict=True)
        ]
    seq_of = {t.task_id: seq for t, seq in zip(fresh, seqs, strict=True)}
    older = [task_id for task_id in originals.values() if task_id not in seq_of]
    if older:
        seq_of.update((yield SeqsOf(older)))
    stored = {t.task_id: s for t, s in zip(fresh, graph.statuses, strict=True)}
    return held(tasks, originals, seq_of, stored)


def insert_workflow(workflow: WorkflowRecord, tasks: Sequence[NewTask]) -> Plan[bool]:
    """A workflow with all its tasks, or nothing when its id is stored already."""
    if not (yield InsertWorkflow(workflow)):
        return False
    yield from insert_tasks(tasks)
    return True


def insert_schedule(schedule: ScheduleRecord, first: NewTask) -> Plan[str]:
    """A schedule with its first instance, or the id of the schedule first made for
    the same idempotency key."""
    # The key names the schedule, the id users hold, not its first instance.
    originals = yield from repeats([replace(first, task_id=schedule.schedule_id)])
    if originals:
        return originals[0]
    yield InsertSchedule(schedule)
    (seq,) = yield from insert_rows([convert.task_params(first)])
    yield SetCurrentSeq(schedule.schedule_id, seq)
    return schedule.schedule_id


def advance_schedules(advances: Sequence[Advance]) -> Plan[list[int | None]]:
    """Each advance whose fence (when given) holds, in order."""
    fences = {a.fence for a in advances if a.fence is not None}
    holding: set[Fence] = (yield FencesHolding(fences)) if fences else set()
    done: list[int | None] = []
    for advance in advances:
        if advance.fence is None or advance.fence in holding:
            done.append((yield from _advance(advance)))
        else:
            done.append(None)
    return done


def _advance(advance: Advance) -> Plan[int | None]:
    """Insert the next instance and make it current by a compare-and-set on the
    schedule's version; a lost compare-and-set deletes the instance again."""
    schedule, nxt, skip, _ = advance
    (seq,) = yield from insert_rows([convert.task_params(nxt)])
    if not (yield AdvanceSchedule(seq, schedule.schedule_id, schedule.version, skip is not None)):
        yield DeleteTask(seq)
        return None
    if skip is not None:
        skipped, reason = skip
        yield SkipInstance(skipped, nxt.created_ms, reason)
    return seq


def insert_rows(params: list[list[Any]], direct: Sequence[bool] = ()) -> Plan[list[int]]:
    """Task rows (`convert.task_params` each) with their seqs and marks; their seqs."""
    if not params:
        return []
    seqs: list[int] = yield NextSeqs(len(params))
    direct = direct or [False] * len(params)
    marks = row_marks(direct, (yield from take_marks(len(params) - sum(direct))))
    yield InsertTasks([[s, m, *p] for s, m, p in zip(seqs, marks, params, strict=True)])
    return seqs


def held(
    tasks: Sequence[NewTask],
    originals: dict[int, str],
    seq_of: dict[str, int],
    stored: dict[str, Status],
) -> list[Held]:
    """What holds each insert's slot: the task itself, with the status it was stored
    with (`stored`), or for a repeated submission the task first made for it (`seq_of`:
    the seq of every task id involved)."""
    holders = [originals.get(i, t.task_id) for i, t in enumerate(tasks)]
    return [
        Held(seq_of[h], h, True) if i in originals else Held(seq_of[h], h, False, stored[h])
        for i, h in enumerate(holders)
    ]


def row_marks(direct: Sequence[bool], marks: Iterable[int]) -> list[int]:
    """Each inserted task's mark, by which the loader finds it: a new one from `marks`
    (as many as tasks not `direct`), or 0 for a task its submitter pushes to the ready
    queue itself. A direct task lost between commit and push is overdue and unclaimed,
    which the reconciler releases again."""
    new = iter(marks)
    return [0 if d else next(new) for d in direct]


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
