"""Retention on an SQLite file: ended tasks older than the retention are deleted with
their executions, idempotency keys and edges, a batch per transaction; a task that has
not ended, or that something still needs, stays."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tickwheel.clock import ManualClock
from tickwheel.engine.retention import RowRetention, retention_for
from tickwheel.models import (
    Finish,
    Idempotency,
    NewTask,
    Outcome,
    ScheduleRecord,
    ScheduleType,
    Status,
    TaskOptions,
    WorkflowRecord,
)
from tickwheel.storage.base import Advance, Pruned
from tickwheel.storage.sqlite.store import SqliteStore

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DAY = 86_400_000
LATER = T0 + 40 * DAY  # 30 days' retention then deletes what ended before T0 + 10 days


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore(str(tmp_path / "retention.db"), partitions=1)
    await opened.open()
    yield opened
    await opened.close()


def task(name: str, **changes: object) -> NewTask:
    made = NewTask(
        task_id=name,
        partition=0,
        task_type="noop",
        payload=None,
        schedule_type=ScheduleType.DELAYED,
        due_ms=T0,
        created_ms=T0,
    )
    return replace(made, **changes)


async def insert(store: SqliteStore, *tasks: NewTask) -> list[int]:
    return await store.insert_tasks(tasks)


async def run(
    store: SqliteStore, seq: int, *, ended: int, status: Status = Status.SUCCEEDED
) -> None:
    """Claim the task and end its attempt (one execution row) at `ended`."""
    (claimed,) = await store.claim([(seq, ended)], now_ms=ended, lease_ms=30_000, worker_id="w")
    outcome = Outcome.SUCCEEDED if status is Status.SUCCEEDED else Outcome.FAILED
    assert await store.finish([Finish(seq, claimed.fence, outcome, status, ended_ms=ended)])


async def cancel(store: SqliteStore, seq: int, *, at: int) -> None:
    (record,) = await store.get_tasks([seq])
    assert await store.cancel(seq, record.version, at)


async def prune(store: SqliteStore, *, now: int = LATER, batch: int = 1000) -> int:
    retention = RowRetention(
        store=store, clock=ManualClock(now), retention_seconds=30 * 86400, batch=batch
    )
    return await retention.once()


async def kept(store: SqliteStore, *names: str) -> list[bool]:
    return [await store.get_task(name) is not None for name in names]


def count(store: SqliteStore, table: str) -> int:
    with sqlite3.connect(store.path) as db:
        return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


async def test_the_embedded_store_keeps_a_retention_of_rows(store: SqliteStore) -> None:
    retention = retention_for(
        store,
        clock=ManualClock(T0),
        range_seconds=86400,
        retention_seconds=30 * 86400,
        idempotency_window_seconds=86400,
    )
    assert isinstance(retention, RowRetention)


async def test_old_ended_tasks_go_with_their_executions_and_keys(store: SqliteStore) -> None:
    key = Idempotency("order-1", "request", T0 - DAY)
    done, failed, gone, running, _pending, recent = await insert(
        store,
        task("done", idempotency=key),
        task("failed"),
        task("gone"),
        task("running"),
        task("pending", due_ms=LATER + DAY),
        task("recent"),
    )
    await run(store, done, ended=T0 + 1)
    await run(store, failed, ended=T0 + 2, status=Status.FAILED)
    await cancel(store, gone, at=T0 + 3)
    await store.claim([(running, T0)], now_ms=T0, lease_ms=30_000, worker_id="w")
    await run(store, recent, ended=T0 + 20 * DAY)  # ended 20 days ago: within the retention
    assert count(store, "executions") == 3
    assert count(store, "idempotency_keys") == 1

    assert await prune(store) == 3
    assert await kept(store, "done", "failed", "gone") == [False, False, False]
    assert await kept(store, "running", "pending", "recent") == [True, True, True]
    assert count(store, "executions") == 1  # the recent task's
    assert count(store, "idempotency_keys") == 0
    assert await prune(store) == 0  # nothing more to do
    # The key is free: the same request makes a new task.
    (held,) = await store.insert_tasks_with_holders([task("again", idempotency=key)])
    assert (held.task_id, held.repeat) == ("again", False)


async def test_nothing_goes_within_the_retention_or_without_one(store: SqliteStore) -> None:
    (seq,) = await insert(store, task("done"))
    await run(store, seq, ended=T0 + 1)
    await insert(store, task("newest"))
    assert await prune(store, now=T0 + 29 * DAY) == 0
    forever = RowRetention(store=store, clock=ManualClock(LATER), retention_seconds=None)
    assert await forever.once() == 0
    assert await kept(store, "done") == [True]
    assert await prune(store) == 1


async def test_the_newest_task_stays_so_that_no_seq_is_handed_out_twice(
    store: SqliteStore,
) -> None:
    first, newest = await insert(store, task("first"), task("newest"))
    for seq in (first, newest):
        await run(store, seq, ended=T0 + 1)
    assert await prune(store) == 1
    assert await kept(store, "first", "newest") == [False, True]
    (later,) = await insert(store, task("later"))
    assert later == newest + 1


async def test_a_predecessor_stays_while_a_dependent_has_not_ended(store: SqliteStore) -> None:
    before, other, after = await insert(
        store, task("before"), task("other"), task("after", predecessors=("before", "other"))
    )
    await run(store, before, ended=T0 + 1)
    await store.propagate(T0 + 2)  # its edge is satisfied; `after` still waits on `other`
    await insert(store, task("newest"))
    assert await prune(store) == 0
    assert await kept(store, "before") == [True]

    await cancel(store, other, at=T0 + 3)
    await store.propagate(T0 + 4)  # `after` ends upstream_failed
    (dependent,) = await store.get_tasks([after])
    assert dependent.status is Status.UPSTREAM_FAILED
    assert await prune(store) == 3
    assert count(store, "task_edges") == count(store, "task_dependencies") == 0


async def test_news_and_ordering_keys_not_yet_passed_on_keep_their_task(
    store: SqliteStore,
) -> None:
    (first,) = await insert(store, task("first", ordering_key="account-7"))
    await run(store, first, ended=T0 + 1)  # its key's news is queued, not yet told
    await insert(store, task("newest"))
    assert await prune(store) == 0
    await store.propagate(T0 + 2)  # no task of the key is left: the key is free
    assert await prune(store) == 1


async def test_a_workflow_goes_whole(store: SqliteStore) -> None:
    flow = WorkflowRecord("wf-1", "nightly", T0)
    assert await store.insert_workflow(
        flow, [task("extract", workflow_id="wf-1"), task("report", workflow_id="wf-1")]
    )
    found = await store.get_workflow("wf-1")
    assert found is not None
    extract, report = (t.seq for t in found[1])
    await insert(store, task("newest"))
    await run(store, extract, ended=T0 + 1)
    assert await prune(store) == 0  # `report` has not run
    await run(store, report, ended=T0 + 20 * DAY)
    assert await prune(store) == 0  # `report` ended within the retention
    assert await prune(store, now=T0 + 51 * DAY) == 2
    assert await store.get_workflow("wf-1") is None


def nightly() -> ScheduleRecord:
    return ScheduleRecord(
        schedule_id="nightly",
        task_type="noop",
        payload=None,
        options=TaskOptions(),
        cron_expression="0 3 * * *",
        timezone="UTC",
        jitter_seconds=0,
        misfire_policy="run_once",
        overlap_policy="skip",
        status="active",
        version=0,
        current_seq=None,
        previous_seq=None,
        created_ms=T0,
    )


def instance(day: int) -> NewTask:
    return task(f"nightly@{day}", schedule_type=ScheduleType.CRON, schedule_id="nightly")


async def fire(store: SqliteStore, day: int) -> None:
    """Run the schedule's current instance, ended that day, and advance to the next."""
    schedule = await store.get_schedule("nightly")
    assert schedule is not None and schedule.current_seq is not None
    await run(store, schedule.current_seq, ended=T0 + day * DAY)
    advance = Advance(schedule, instance(day + 1), skip=None, fence=None)
    assert (await store.advance_schedules([advance]))[0] is not None


async def test_a_schedule_keeps_its_current_and_previous_instance(store: SqliteStore) -> None:
    await store.insert_schedule(nightly(), instance(0))
    await fire(store, 0)
    assert await prune(store) == 0  # the instance of day 0 is the previous one
    await fire(store, 1)
    assert await prune(store) == 1  # day 0 goes; day 1 is the previous one, day 2 waits
    assert await kept(store, "nightly@0", "nightly@1", "nightly@2") == [False, True, True]
    history = await store.history(task_seq=None, schedule_id="nightly", before_id=None, limit=10)
    assert [e.task_id for e in history] == ["nightly@1"]


async def backlog(store: SqliteStore, size: int) -> None:
    """`size` tasks that ended on T0, then one waiting."""
    await insert(store, *(task(f"old-{i}") for i in range(size)))
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE tasks SET status = 'cancelled', completed_at = ?", (T0,))
    await insert(store, task("waiting", created_ms=LATER, due_ms=LATER + DAY))


class Watched:
    """The store, with each batch recorded as it ends, and `meanwhile` started as the
    first batch goes in (so its writes queue behind that batch)."""

    def __init__(
        self, store: SqliteStore, *, meanwhile: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self.store = store
        self.events: list[str] = []
        self.batches: list[Pruned] = []
        self.meanwhile = meanwhile
        self.started: list[asyncio.Task[None]] = []

    async def delete_ended_tasks(
        self, *, ended_before_ms: int, after_seq: int, batch: int
    ) -> Pruned:
        if self.meanwhile is not None and not self.batches:
            self.started.append(asyncio.create_task(self.meanwhile()))
        pruned = await self.store.delete_ended_tasks(
            ended_before_ms=ended_before_ms, after_seq=after_seq, batch=batch
        )
        self.batches.append(pruned)
        self.events.append(f"batch {len(self.batches)}")
        return pruned


def pruning(watched: Watched) -> RowRetention:
    return RowRetention(
        store=watched, clock=ManualClock(LATER), retention_seconds=30 * 86400, batch=1000
    )


async def test_a_backlog_goes_a_batch_per_transaction(store: SqliteStore) -> None:
    await backlog(store, 2500)
    watched = Watched(store)
    assert await pruning(watched).once() == 2500
    assert [b.deleted for b in watched.batches] == [1000, 1000, 500]
    assert watched.batches[-1].last_seq is None
    assert count(store, "tasks") == 1 and await kept(store, "waiting") == [True]


async def test_writes_go_on_between_batches(store: SqliteStore) -> None:
    await backlog(store, 3000)

    async def submit() -> None:
        await insert(store, task("submitted", created_ms=LATER))
        watched.events.append("submitted")

    watched = Watched(store, meanwhile=submit)
    assert await pruning(watched).once() == 3000
    await asyncio.gather(*watched.started)
    assert watched.events[:3] == ["batch 1", "submitted", "batch 2"]
