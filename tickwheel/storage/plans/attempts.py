"""Ends of attempts, cancels and an operator's changes to a task (rules and plans)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tickwheel.models import Finish, Outcome
from tickwheel.storage.plans.steps import (
    Cancel,
    FinishRows,
    InsertExecutions,
    Plan,
    Redrive,
    SetPriority,
    take_marks,
)
from tickwheel.storage.rows import Row


def finish(finishes: Sequence[Finish]) -> Plan[list[bool]]:
    """Apply each end whose fence holds, with its execution row: one statement for the
    ends and one for their executions, a round more for a seq ended twice."""
    ends = Ends(finishes)
    marks = yield from take_marks(ends.retries)
    written: list[Row] = yield FinishRows(ends.rows(marks))
    executions = ends.executions(written)
    if executions:
        yield InsertExecutions(executions)
    repeats = (yield from finish(ends.repeats)) if ends.repeats else []
    return ends.answers({row["seq"] for row in written}, repeats)


def cancel(seq: int, version: int, now_ms: int) -> Plan[bool]:
    """Compare-and-set a task to cancelled; an attempt running then gets its execution
    row."""
    cancelled: Row | None = yield Cancel(seq, version, now_ms)
    run = cancelled_run(cancelled, version, now_ms)
    if run is not None:
        yield InsertExecutions([run])
    return cancelled is not None


def redrive(items: Sequence[tuple[int, int]], now_ms: int) -> Plan[list[bool]]:
    """Failed tasks (seq, version) back to pending, each with a new mark."""
    marks = yield from take_marks(len(items))
    done = []
    for (seq, version), mark in zip(items, marks, strict=True):
        done.append(bool((yield Redrive(seq, version, now_ms, mark))))
    return done


def set_priority(seq: int, version: int, priority: int) -> Plan[bool]:
    """A pending task's priority, with a new mark so its wheel takes the change."""
    (mark,) = yield from take_marks(1)
    changed: bool = yield SetPriority(seq, version, priority, mark)
    return changed


class Ends:
    """A batch of ends of attempts, each applied with a compare-and-set on its fence.

    A batch holds a seq at most once per round: a task ended twice in one batch (a
    worker and the reaper at once) has its repeat compared again in a later round,
    after the first end moved the version on.

    Rows go in seq order, the order every statement that changes many running tasks
    locks them in (heartbeats too): two such statements in PostgreSQL then wait for
    each other, never deadlock (a deadlock stalls both for a second before one fails)."""

    def __init__(self, finishes: Sequence[Finish]) -> None:
        self.finishes = finishes
        self.first: dict[int, Finish] = {}
        for f in sorted(finishes, key=lambda f: f.seq):
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
