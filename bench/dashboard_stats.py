"""What the dashboard's counts per status cost with a million tasks stored.

    .venv/bin/python -m bench.dashboard_stats --rows 1000000 --runs 5

Fills a fresh SQLite file and a fresh PostgreSQL schema with `--rows` tasks through the
store (batches of 10,000), moves most of them to final states with one UPDATE, gives
every partition a lease and a watermark (so the `ready` count has work to do), then
times `count_by_status()`: the first call, then the median and worst of `--runs`;
on PostgreSQL both right after the bulk update and once vacuumed.
`/api/stats` makes this call at most once per 2 s, whatever the number of viewers.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg

from tickwheel.ids import partition_of
from tickwheel.models import NewTask, ScheduleType
from tickwheel.storage.base import Store
from tickwheel.storage.postgres.store import PostgresStore
from tickwheel.storage.sqlite.store import SqliteStore

PARTITIONS = 16
BATCH = 10_000
NOW = int(time.time() * 1000)
# Of every 100 tasks: 70 succeeded, 5 failed, 2 cancelled, 3 running, the rest pending
# (half of them due already).
SHAPE = """UPDATE tasks SET status = CASE
    WHEN seq % 100 < 70 THEN 'succeeded' WHEN seq % 100 < 75 THEN 'failed'
    WHEN seq % 100 < 77 THEN 'cancelled' WHEN seq % 100 < 80 THEN 'running'
    ELSE status END"""


def tasks(start: int, count: int) -> list[NewTask]:
    made = []
    for i in range(start, start + count):
        task_id = f"bench-{i}"
        due = NOW - 60_000 if i % 2 else NOW + 3_600_000
        made.append(
            NewTask(
                task_id,
                partition_of(task_id, PARTITIONS),
                "noop",
                None,
                ScheduleType.DELAYED,
                due,
                NOW,
            )
        )
    return made


async def fill(store: Store, rows: int) -> float:
    began = time.perf_counter()
    for start in range(0, rows, BATCH):
        await store.insert_tasks(tasks(start, min(BATCH, rows - start)))
    held = (await store.renew("bench", {}, range(PARTITIONS), ttl_ms=600_000, beat=False)).held
    marks = {p: (epoch, NOW) for p, epoch in held.items()}
    await store.renew("bench", marks, range(PARTITIONS), ttl_ms=600_000, beat=False)
    return time.perf_counter() - began


async def measure(name: str, store: Store, runs: int) -> None:
    began = time.perf_counter()
    counts = await store.count_by_status()
    first = time.perf_counter() - began
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        await store.count_by_status()
        times.append(time.perf_counter() - began)
    shown = {str(k): v for k, v in sorted(counts.items())}
    print(f"{name}: {sum(v for k, v in counts.items() if k != 'ready'):,} tasks {shown}")
    print(
        f"{name}: count_by_status first {first * 1000:.0f} ms, "
        f"median {statistics.median(times) * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms"
        f" over {runs} runs"
    )


async def sqlite(rows: int, runs: int) -> None:
    import sqlite3

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        store = SqliteStore(str(path), partitions=PARTITIONS)
        await store.open()
        try:
            print(f"sqlite: filled in {await fill(store, rows):.0f} s")
            with sqlite3.connect(path) as db:
                db.execute(SHAPE)
            await measure("sqlite", store, runs)
        finally:
            await store.close()


async def postgres(url: str, rows: int, runs: int) -> None:
    schema = f"tw_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(url)
    await admin.execute(f"CREATE SCHEMA {schema}")
    try:
        store = PostgresStore(url, partitions=PARTITIONS, schema=schema)
        await store.open()
        try:
            print(f"postgres: filled in {await fill(store, rows):.0f} s")
            await admin.execute(f"SET search_path = {schema}; {SHAPE}; ANALYZE tasks")
            await measure("postgres, right after the update", store, runs)
            # Once (auto)vacuum has cleared the dead rows of the update: the steady state.
            await admin.execute(f"VACUUM ANALYZE {schema}.tasks")
            await measure("postgres, vacuumed", store, runs)
        finally:
            await store.close()
    finally:
        await admin.execute(f"DROP SCHEMA {schema} CASCADE")
        await admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    stores = set(args.stores.split(","))
    if "sqlite" in stores:
        asyncio.run(sqlite(args.rows, args.runs))
    if "postgres" in stores:
        asyncio.run(postgres(args.postgres, args.rows, args.runs))


if __name__ == "__main__":
    main()
