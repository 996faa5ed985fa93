"""The operators' task listings at scale: each filter of `GET /api/tasks` with 1,000,000
tasks stored, on SQLite and on PostgreSQL.

    .venv/bin/python -m bench.listing --tasks 1000000 --store sqlite:///tmp/listing.db
    .venv/bin/python -m bench.listing --tasks 1000000 --store postgresql://postgres@127.0.0.1/postgres

Tasks are created 10 ms apart (so 1,000,000 span 2.8 hours), one in 1,000 on a rare queue
and one in 100 with an idempotency key. Each listing is the first page of 50 (and, for
a created range, a page deep inside it), timed as the best of five. An SQLite file
already filled is reused.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

import asyncpg

from tickwheel.models import Idempotency, NewTask, ScheduleType, Status, TaskOptions
from tickwheel.storage.base import Store, TaskFilter
from tickwheel.storage.postgres.store import PostgresStore
from tickwheel.storage.sqlite.store import SqliteStore

T0 = 1_767_225_600_000
STEP_MS = 10
BATCH = 20_000


def task(i: int) -> NewTask:
    return NewTask(
        task_id=f"t{i:08d}",
        partition=i % 16,
        task_type="noop",
        payload=None,
        schedule_type=ScheduleType.DELAYED,
        due_ms=T0 + 86_400_000,
        created_ms=T0 + i * STEP_MS,
        options=TaskOptions(queue="rare" if i % 1000 == 7 else "default"),
        idempotency=Idempotency(f"key-{i}", "h", 0) if i % 100 == 3 else None,
    )


async def open_store(url: str) -> tuple[Store, Callable[[], Awaitable[None]]]:
    if url.startswith("sqlite:///"):
        sqlite = SqliteStore(url.removeprefix("sqlite://"), partitions=16)
        await sqlite.open()
        return sqlite, sqlite.close
    schema = f"tw_bench_{uuid.uuid4().hex[:8]}"
    db = await asyncpg.connect(url)
    await db.execute(f"CREATE SCHEMA {schema}")
    postgres = PostgresStore(url, partitions=16, schema=schema)
    await postgres.open()

    async def close() -> None:
        await postgres.close()
        await db.execute(f"DROP SCHEMA {schema} CASCADE")
        await db.close()

    return postgres, close


async def best_ms(run: Callable[[], Awaitable[object]]) -> float:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        await run()
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


async def main(url: str, count: int) -> None:
    store, close = await open_store(url)
    try:
        started = time.perf_counter()
        for first in range(await store.max_seq(), count, BATCH):  # an SQLite file is reused
            await store.insert_tasks([task(i) for i in range(first, min(count, first + BATCH))])
        print(f"inserted {count} tasks in {time.perf_counter() - started:.1f} s")
        quarter = T0 + count // 4 * STEP_MS
        deep = (await store.list_tasks(TaskFilter(), before_seq=None, limit=1))[0].seq // 2
        cases = {
            "everything": (TaskFilter(), None),
            "status failed (none)": (TaskFilter(statuses=(Status.FAILED,)), None),
            "queue rare": (TaskFilter(queue="rare"), None),
            "queue default": (TaskFilter(queue="default"), None),
            "q = a task id": (TaskFilter(q=f"t{count // 3:08d}"), None),
            "q = an idempotency key": (TaskFilter(q=f"key-{count // 3 // 100 * 100 + 3}"), None),
            "q = nothing": (TaskFilter(q="nothing"), None),
            "created: a minute, a quarter in": (
                TaskFilter(created_after_ms=quarter, created_before_ms=quarter + 60_000),
                None,
            ),
            "created: after a quarter in": (TaskFilter(created_after_ms=quarter), None),
            "created: before a quarter in": (TaskFilter(created_before_ms=quarter), None),
            "created: before a quarter in, rare queue": (
                TaskFilter(created_before_ms=quarter, queue="rare"),
                None,
            ),
            "created: after a quarter in, page deep inside": (
                TaskFilter(created_after_ms=quarter),
                deep,
            ),
        }
        for name, (where, before) in cases.items():

            async def listing(where: TaskFilter = where, before: int | None = before) -> None:
                await store.list_tasks(where, before_seq=before, limit=50)

            found = len(await store.list_tasks(where, before_seq=before, limit=50))
            print(f"{name:48} {await best_ms(listing):8.2f} ms  ({found} rows)")
    finally:
        await close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--store", default="sqlite:///tmp/tickwheel-listing.db")
    args = parser.parse_args()
    asyncio.run(main(args.store, args.tasks))
