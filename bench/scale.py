"""Scale: does the cost of triggering grow with the number of tasks stored? It must not:
the wheel holds only the next minute, and the loader reads index ranges.

    .venv/bin/python bench/scale.py --stored 10000 100000 1000000
    .venv/bin/python bench/scale.py --postgres postgresql://postgres@127.0.0.1/postgres

For each size, a fresh embedded node (SQLite, or PostgreSQL in a fresh schema) stores
that many tasks due tomorrow, then 2,000 tasks due at one whole second a few seconds
ahead. Printed per size: the loader's
pass over the owned partitions (median of 5), the tick that released the second, and
the trigger lateness of the 2,000. The last line is the result as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import uvloop

from tickwheel.config import Settings
from tickwheel.engine.node import Node
from tickwheel.engine.tasks import ScheduleRequest, TaskRequest
from tickwheel.models import ScheduleType

BATCH = 10_000
DUE_TASKS = 2_000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def later(due_ms: int) -> TaskRequest:
    return TaskRequest("noop", None, ScheduleRequest(ScheduleType.DELAYED, due_ms=due_ms))


@asynccontextmanager
async def database(postgres: str | None) -> AsyncIterator[str]:
    """A fresh SQLite file, or a fresh PostgreSQL schema dropped afterwards."""
    if postgres is None:
        folder = Path(tempfile.mkdtemp(prefix="tickwheel-scale-"))
        yield f"sqlite:///{folder / 'scale.db'}"
        shutil.rmtree(folder)
        return
    schema = f"tw_scale_{uuid.uuid4().hex[:8]}"
    db = await asyncpg.connect(postgres)
    await db.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{postgres}?search_path={schema}"
    finally:
        await db.execute(f"DROP SCHEMA {schema} CASCADE")
        await db.close()


async def one_size(stored: int, postgres: str | None) -> dict[str, Any]:
    async with database(postgres) as url:
        return await measure(stored, url)


async def measure(stored: int, url: str) -> dict[str, Any]:
    settings = Settings(database_url=url, lease_seconds=60)
    async with Node(settings=settings) as node:
        tomorrow = later(node.clock.now_ms() + 86_400_000)
        for offset in range(0, stored, BATCH):
            await node.service.submit_many([tomorrow] * min(BATCH, stored - offset))
        loads = []
        for _ in range(5):
            started = time.perf_counter()
            await node.trigger.load_once()
            loads.append((time.perf_counter() - started) * 1000)

        pushed: list[tuple[float, int]] = []
        ticks: list[float] = []
        push, tick = node.queue.push, node.trigger.tick

        async def timed_push(items: Any) -> None:
            await push(items)
            at = time.time_ns() / 1e6
            pushed.extend((at, item.due_ms) for item in items)

        async def timed_tick(now_ms: int) -> int:
            started = time.perf_counter()
            released = await tick(now_ms)
            if released:
                ticks.append((time.perf_counter() - started) * 1000)
            return released

        node.queue.push = timed_push  # type: ignore[method-assign]
        node.trigger.tick = timed_tick  # type: ignore[method-assign]
        due_ms = (node.clock.now_ms() // 1000 + 4) * 1000
        await node.service.submit_many([later(due_ms)] * DUE_TASKS)
        while node.worker.completed < DUE_TASKS:
            await asyncio.sleep(0.01)
    lateness = [at - due for at, due in pushed]
    return {
        "stored": stored,
        "load_pass_ms": round(statistics.median(loads), 2),
        "release_tick_ms": round(max(ticks), 2),
        "trigger_lateness_ms": {
            "p50": round(percentile(lateness, 0.5), 1),
            "p99": round(percentile(lateness, 0.99), 1),
        },
        "early": sum(x < 0 for x in lateness),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--postgres", help="a PostgreSQL URL: measure that store instead")
    args = parser.parse_args()
    results = [uvloop.run(one_size(n, args.postgres)) for n in args.stored]
    for result in results:
        print(json.dumps(result))
    machine = f"{os.cpu_count()} cores, Python {platform.python_version()}"
    print(json.dumps({"scenario": "scale", "results": results, "machine": machine}))


if __name__ == "__main__":
    main()
