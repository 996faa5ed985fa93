"""PostgreSQL keeps tasks in ranges of seq, each a span of creation time: new tasks
move on to a fresh range when the current one has been open for its period, and
retention drops whole ranges that nothing needs any more (migrations 0004 and 0009)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from importlib import resources

import asyncpg
import pytest

from tickwheel.config import Role, Settings
from tickwheel.engine.retention import Retention
from tickwheel.models import Finish, Outcome, ScheduleType, Status
from tickwheel.node import Node
from tickwheel.storage.postgres.store import PostgresStore
from tickwheel.wire.requests import ScheduleRequest, TaskRequest

SPAN = 1 << 26  # the seqs of one range
LATER = TaskRequest("noop", None, ScheduleRequest(ScheduleType.DELAYED, delay_seconds=3600))


@pytest.fixture
async def node(database_url: str) -> AsyncIterator[Node]:
    settings = Settings(database_url=database_url, partitions=4)
    async with Node(settings=settings, roles=frozenset({Role.API})) as node:
        yield node


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


def store_of(node: Node) -> PostgresStore:
    assert isinstance(node.store, PostgresStore)
    return node.store


async def seq_of(node: Node, task_id: str) -> int:
    task = await node.store.get_task(task_id)
    assert task is not None
    return task.seq


async def partitions_of(db: asyncpg.Connection, table: str) -> set[str]:
    rows = await db.fetch(
        "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = $1::regclass", table
    )
    return {row[0] for row in rows}


async def test_tasks_and_executions_are_partitioned_with_a_range_ready_ahead(
    db: asyncpg.Connection, node: Node
) -> None:
    assert await partitions_of(db, "tasks") == {"tasks_r0", "tasks_r1"}
    assert await partitions_of(db, "executions") == {"executions_r0", "executions_r1"}
    assert await partitions_of(db, "task_labels") == {"task_labels_r0", "task_labels_r1"}
    submitted = await node.service.submit(LATER)
    assert 0 < await seq_of(node, submitted.task_id) < SPAN


async def test_a_range_open_for_its_period_is_sealed_and_new_tasks_go_to_the_next(
    db: asyncpg.Connection, node: Node
) -> None:
    old = await node.service.submit(LATER)
    assert await store_of(node).roll_task_ranges(period_ms=0) == SPAN
    new = await node.service.submit(LATER)
    assert SPAN <= await seq_of(node, new.task_id) < 2 * SPAN
    assert "tasks_r2" in await partitions_of(db, "tasks")  # the next one, ready ahead
    assert "task_labels_r2" in await partitions_of(db, "task_labels")
    # Both ranges serve reads and claims as one table.
    seqs = [await seq_of(node, old.task_id), await seq_of(node, new.task_id)]
    now = node.clock.now_ms() + 7_200_000
    claimed = await node.store.claim(
        [(seq, now) for seq in seqs], now_ms=now, lease_ms=30_000, worker_id="w"
    )
    assert sorted(c.seq for c in claimed) == sorted(seqs)


async def test_retention_drops_an_old_range_whose_tasks_all_ended(
    db: asyncpg.Connection, node: Node
) -> None:
    ended = [await node.service.submit(LATER) for _ in range(3)]
    for submitted in ended:
        await node.service.cancel(submitted.task_id)
    keep_a_day = Retention(
        store=store_of(node), clock=node.clock, range_seconds=0, retention_seconds=86400
    )
    assert await keep_a_day.once() == 0  # sealed just now, not a day ago
    retention = Retention(
        store=store_of(node), clock=node.clock, range_seconds=0, retention_seconds=0
    )
    assert await retention.once() == 2  # r0, whose tasks all ended, and r1, empty
    kept = await node.service.submit(LATER)  # in r2
    assert await retention.once() == 0  # r2 is sealed now, but a task in it waits
    assert await partitions_of(db, "tasks") == {"tasks_r2", "tasks_r3", "tasks_r4"}
    assert "executions_r0" not in await partitions_of(db, "executions")
    assert "task_labels_r0" not in await partitions_of(db, "task_labels")
    assert [await node.store.get_task(s.task_id) for s in ended] == [None] * 3
    task = await node.store.get_task(kept.task_id)
    assert task is not None and task.status is Status.PENDING


async def test_a_range_holding_an_unfinished_task_is_kept(
    db: asyncpg.Connection, node: Node
) -> None:
    waiting = await node.service.submit(LATER)
    await node.service.cancel((await node.service.submit(LATER)).task_id)
    retention = Retention(
        store=store_of(node), clock=node.clock, range_seconds=0, retention_seconds=0
    )
    await retention.once()
    await retention.once()
    assert "tasks_r0" in await partitions_of(db, "tasks")
    assert await node.store.get_task(waiting.task_id) is not None


async def test_a_sequence_past_every_range_gets_its_own(db: asyncpg.Connection, node: Node) -> None:
    await db.execute("SELECT setval('tasks_seq', $1)", 10 * SPAN + 5)
    assert await store_of(node).roll_task_ranges(period_ms=3_600_000) == 10 * SPAN
    submitted = await node.service.submit(LATER)
    assert await seq_of(node, submitted.task_id) == 10 * SPAN + 6


async def test_tasks_stored_before_the_partitioning_migration_stay_readable(
    database_url: str, db: asyncpg.Connection
) -> None:
    folder = resources.files("tickwheel.storage.postgres").joinpath("migrations")
    await db.execute("CREATE TABLE schema_migrations (name text PRIMARY KEY)")
    for name in ("0001_initial.sql", "0002_scheduler_nodes.sql", "0003_notify_ended.sql"):
        await db.execute(folder.joinpath(name).read_text())
        await db.execute("INSERT INTO schema_migrations VALUES ($1)", name)
    await db.execute(
        "INSERT INTO tasks (seq, task_id, partition, task_type, payload, status,"
        " schedule_type, queue, priority, max_retries, backoff_base, backoff_max,"
        " due_time, created_at)"
        " VALUES (nextval('tasks_seq'), 'before', 0, 'noop', 'null', 'pending',"
        " 'delayed', 'default', 0, 3, 1.0, 60.0, 1, 1)"
    )
    store = PostgresStore(database_url, partitions=4)
    await store.open()
    try:
        task = await store.get_task("before")
        assert task is not None and task.status is Status.PENDING
        assert [e.seq for e in await store.load_pending([0], due_after=None, due_until=2)] == [
            task.seq
        ]
    finally:
        await store.close()
    assert await partitions_of(db, "tasks") == {"tasks_r0", "tasks_r1"}


async def succeed(node: Node, task_id: str) -> None:
    seq = await seq_of(node, task_id)
    now = node.clock.now_ms() + 7_200_000
    (claimed,) = await node.store.claim([(seq, now)], now_ms=now, lease_ms=30_000, worker_id="w")
    end = Finish(seq, claimed.fence, Outcome.SUCCEEDED, Status.SUCCEEDED, node.clock.now_ms())
    assert await node.store.finish([end]) == [True]


async def test_a_range_is_kept_while_a_dependent_in_a_newer_one_has_not_ended(
    db: asyncpg.Connection, node: Node
) -> None:
    # The embedded store's rule: a task stays while a dependent has not ended.
    predecessor = await node.service.submit(LATER)
    await succeed(node, predecessor.task_id)
    await store_of(node).roll_task_ranges(period_ms=0)
    other = await node.service.submit(LATER)  # in r1, pending
    dependent = await node.service.submit(
        replace(LATER, dependencies=(predecessor.task_id, other.task_id))
    )
    stored = await node.store.get_task(dependent.task_id)
    assert stored is not None and stored.status is Status.BLOCKED
    retention = Retention(
        store=store_of(node), clock=node.clock, range_seconds=0, retention_seconds=0
    )

    await retention.once()

    assert "tasks_r0" in await partitions_of(db, "tasks")
    assert await node.store.get_task(predecessor.task_id) is not None
    await node.service.cancel(dependent.task_id)
    await node.service.cancel(other.task_id)
    await retention.once()  # now nothing needs r0: it goes
    assert "tasks_r0" not in await partitions_of(db, "tasks")


async def test_a_range_is_kept_while_a_task_in_it_ended_within_the_retention(
    db: asyncpg.Connection, node: Node
) -> None:
    await node.service.cancel((await node.service.submit(LATER)).task_id)
    keep_an_hour = Retention(
        store=store_of(node), clock=node.clock, range_seconds=0, retention_seconds=3600
    )
    await keep_an_hour.once()  # seals r0 now

    await db.execute("UPDATE task_ranges SET sealed_at = sealed_at - 7200000")
    await keep_an_hour.once()

    assert "tasks_r0" in await partitions_of(db, "tasks")  # its task ended just now
