"""Why a task is not running, decided from its record, its store's two reads, the ready
queue's depth and the live workers: each cause alone, and nothing once it runs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tickwheel.clock import ManualClock
from tickwheel.engine.reads import TaskView
from tickwheel.engine.waits import Reason, Waits
from tickwheel.engine.workforce import Handles, Workforce
from tickwheel.models import ScheduleRecord, ScheduleType, Status, TaskOptions, TaskRecord
from tickwheel.storage.base import (
    LeaseHolder,
    Predecessor,
    SchedulerNode,
    WorkerBeat,
    WorkerRecord,
)

NOW = 1_000_000


class Store:
    """The reads `Waits` makes, with no live worker but this node's own."""

    def __init__(
        self, predecessors: list[Predecessor], holder: str | None = None, *, held: bool = True
    ) -> None:
        self._predecessors = predecessors
        self._holder = holder
        self._held = held  # whether a scheduler holds partition 0

    async def watermarks(self) -> dict[int, int]:
        return {}

    async def scheduler_nodes(self) -> list[SchedulerNode]:
        return []

    async def lease_holders(self) -> list[LeaseHolder]:
        return [LeaseHolder(0, "node", 1, NOW + 15_000)] if self._held else []

    async def predecessors(self, seq: int) -> list[Predecessor]:
        return self._predecessors

    async def ordering_key_holder(self, ordering_key: str) -> str | None:
        return self._holder

    async def live_workers(self) -> list[WorkerRecord]:
        return []

    async def worker_seen(self, beat: WorkerBeat, *, ttl_ms: int) -> None: ...

    async def worker_left(self, worker_id: str) -> None: ...


def record(status: Status, *, due: int = NOW, key: str | None = None) -> TaskRecord:
    return TaskRecord(
        seq=7,
        task_id="t",
        partition=0,
        task_type="greet",
        payload=None,
        status=status,
        version=0,
        schedule_type=ScheduleType.IMMEDIATE,
        schedule_id=None,
        due_ms=due,
        options=TaskOptions(),
        attempts=0,
        created_ms=NOW,
        triggered_ms=None,
        started_ms=None,
        completed_ms=None,
        lease_expires_ms=None,
        worker_id=None,
        last_error=None,
        ordering_key=key,
    )


def waits_of(store: Store, *, own_types: frozenset[str] = frozenset({"greet"})) -> Waits:
    own = Handles(frozenset({"default"}), own_types)
    clock = ManualClock(NOW)
    workforce = Workforce(store=store, clock=clock, own=own)

    async def depth() -> dict[str, int]:
        return {"default": 5}

    return Waits(store=store, clock=clock, workforce=workforce, depth=depth)


@pytest.mark.parametrize(
    "status", [Status.RUNNING, Status.SUCCEEDED, Status.FAILED, Status.UPSTREAM_FAILED]
)
async def test_a_running_or_ended_task_waits_on_nothing(status: Status) -> None:
    assert await waits_of(Store([])).of(TaskView("t", status, record(status))) is None


async def test_a_blocked_task_lists_only_the_predecessors_not_yet_succeeded() -> None:
    found = [Predecessor("a", Status.SUCCEEDED), Predecessor("b", Status.FAILED)]
    view = TaskView("t", Status.BLOCKED, record(Status.BLOCKED))
    (wait,) = await waits_of(Store(found)).of(view) or []
    assert (wait.reason, wait.tasks) == (Reason.PREDECESSORS, (found[1],))
    assert "b (failed)" in wait.message


async def test_predecessors_all_succeeded_but_not_yet_told() -> None:
    view = TaskView("t", Status.BLOCKED, record(Status.BLOCKED))
    (wait,) = await waits_of(Store([Predecessor("a", Status.SUCCEEDED)])).of(view) or []
    assert wait.tasks == () and "in a moment" in wait.message


async def test_a_waiting_task_names_the_holder_of_its_key() -> None:
    view = TaskView("t", Status.WAITING, record(Status.WAITING, key="k"))
    (wait,) = await waits_of(Store([], holder="h")).of(view) or []
    assert (wait.reason, wait.key, wait.holder) == (Reason.ORDERING_KEY, "k", "h")
    (passing,) = await waits_of(Store([], holder=None)).of(view) or []
    assert passing.holder is None and "in a moment" in passing.message


async def test_a_task_due_later_and_a_ready_one() -> None:
    later = TaskView("t", Status.PENDING, record(Status.PENDING, due=NOW + 60_000))
    (due,) = await waits_of(Store([])).of(later) or []
    assert (due.reason, due.due_ms) == (Reason.DUE, NOW + 60_000)
    ready = TaskView("t", Status.READY, record(Status.PENDING))
    (queued,) = await waits_of(Store([])).of(ready) or []
    assert (queued.reason, queued.queue, queued.ahead) == (Reason.QUEUED, "default", 4)


async def test_a_due_task_not_yet_released_says_who_releases_it() -> None:
    due = TaskView("t", Status.PENDING, record(Status.PENDING, due=NOW - 10))
    (soon,) = await waits_of(Store([])).of(due) or []
    assert (soon.reason, soon.due_ms) == (Reason.DUE, NOW - 10) and "a moment" in soon.message
    (stuck,) = await waits_of(Store([], held=False)).of(due) or []
    assert (stuck.reason, stuck.partition) == (Reason.NO_SCHEDULER, 0)


async def test_no_live_worker_runs_its_type() -> None:
    view = TaskView("t", Status.READY, record(Status.PENDING))
    waits = await waits_of(Store([]), own_types=frozenset({"other"})).of(view) or []
    assert [w.reason for w in waits] == [Reason.QUEUED, Reason.NO_WORKER]
    assert (waits[1].queue, waits[1].task_type) == ("default", "greet")


async def test_a_paused_schedule_waits_on_its_resume_whatever_its_instance() -> None:
    schedule = ScheduleRecord(
        schedule_id="s",
        task_type="greet",
        payload=None,
        options=TaskOptions(),
        cron_expression="@daily",
        timezone="UTC",
        jitter_seconds=0,
        misfire_policy="run_once",
        overlap_policy="allow",
        status="paused",
        version=1,
        current_seq=7,
        previous_seq=None,
        created_ms=NOW,
    )
    view = TaskView("s", Status.CANCELLED, record(Status.CANCELLED), schedule)
    (wait,) = await waits_of(Store([])).of(view) or []
    assert (wait.reason, wait.schedule_id) == (Reason.SCHEDULE_PAUSED, "s")
    active = replace(view, schedule=replace(schedule, status="active"))
    assert await waits_of(Store([])).of(active) is None
