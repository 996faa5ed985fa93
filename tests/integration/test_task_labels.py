"""PostgreSQL lists tasks by type and queue from `task_labels`, which triggers keep: a
task inserted by any process, an older release's too, is listed; a deleted one is not.
(Ranges of labels come and go with those of tasks: test_postgres_retention.py.)"""

from __future__ import annotations

import asyncpg

from tickwheel.ids import new_id
from tickwheel.models import NewTask, ScheduleType
from tickwheel.storage.base import TaskFilter
from tickwheel.storage.postgres.store import PostgresStore

NOW = 1_767_225_600_000


async def test_every_insert_is_labelled_and_listed_by_type_and_queue(database_url: str) -> None:
    store = PostgresStore(database_url, partitions=4)
    await store.open()
    try:
        made = NewTask(new_id(), 1, "report", {}, ScheduleType.IMMEDIATE, NOW, NOW)
        (seq,) = await store.insert_tasks([made])
        older = await _insert_as_an_older_release(database_url, seq + 1, "report", "nightly")

        assert await _listed(store, TaskFilter(task_type="report")) == [older, made.task_id]
        assert await _listed(store, TaskFilter(queue="nightly")) == [older]
        assert await _listed(store, TaskFilter(queue="nightly", task_type="other")) == []

        await _delete(database_url, seq + 1)
        assert await _listed(store, TaskFilter(task_type="report")) == [made.task_id]
        assert await _labels(database_url) == [(seq, "report", "default")]
    finally:
        await store.close()


async def _listed(store: PostgresStore, where: TaskFilter) -> list[str]:
    return [t.task_id for t in await store.list_tasks(where, before_seq=None, limit=50)]


async def _insert_as_an_older_release(url: str, seq: int, task_type: str, queue: str) -> str:
    """A plain INSERT into tasks, which knows nothing of labels."""
    task_id = new_id()
    db = await _connect(url)
    try:
        await db.execute(
            "INSERT INTO tasks (seq, task_id, partition, task_type, payload, status,"
            " schedule_type, queue, priority, max_retries, backoff_base, backoff_max,"
            " due_time, created_at) VALUES ($1, $2, 0, $3, '{}', 'pending', 'immediate',"
            " $4, 0, 3, 1, 60, $5, $5)",
            seq,
            task_id,
            task_type,
            queue,
            NOW,
        )
    finally:
        await db.close()
    return task_id


async def _delete(url: str, seq: int) -> None:
    db = await _connect(url)
    try:
        await db.execute("DELETE FROM tasks WHERE seq = $1", seq)
    finally:
        await db.close()


async def _labels(url: str) -> list[tuple[int, str, str]]:
    db = await _connect(url)
    try:
        rows = await db.fetch("SELECT seq, task_type, queue FROM task_labels ORDER BY seq")
    finally:
        await db.close()
    return [(r[0], r[1], r[2]) for r in rows]


async def _connect(url: str) -> asyncpg.Connection:
    base, _, schema = url.partition("?search_path=")
    return await asyncpg.connect(base, server_settings={"search_path": schema})
