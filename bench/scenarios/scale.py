"""scale: does the cost of triggering grow with the number of tasks stored? It must not:
the wheel holds only the next minute, and the loader reads index ranges.

For each size, a fresh node in this process (embedded: SQLite; distributed: PostgreSQL
and Redis) stores that many tasks due tomorrow, then 2,000 due at one whole second a
few seconds ahead. Per size: the loader's pass over the owned partitions (median of 5),
the tick that released the second, and the start lateness (claim minus due) of the 2,000.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from bench.figures import spread
from bench.stores import Mode, fresh_settings, labels
from bench.storing import noop_at, store_noops
from tickwheel.engine.node import Node
from tickwheel.storage.base import TaskFilter

DUE_TASKS = 2_000
DAY_MS = 86_400_000


async def run(mode: Mode, sizes: list[int]) -> dict[str, Any]:
    results = []
    for stored in sizes:
        async with (
            fresh_settings(mode, lease_seconds=60) as settings,
            Node(settings=settings) as node,
        ):
            results.append(await one_size(node, stored))
    return labels(mode, "scale") | {"sizes": results}


async def one_size(node: Node, stored: int) -> dict[str, Any]:
    tomorrow = node.clock.now_ms() + DAY_MS
    await store_noops(node, stored, lambda _: tomorrow)
    loads = []
    for _ in range(5):
        began = time.perf_counter()
        await node.trigger.load_once()
        loads.append((time.perf_counter() - began) * 1000)

    ticks: list[float] = []
    tick = node.trigger.tick

    async def timed_tick(now_ms: int) -> int:
        began = time.perf_counter()
        released = await tick(now_ms)
        if released:
            ticks.append((time.perf_counter() - began) * 1000)
        return released

    node.trigger.tick = timed_tick  # type: ignore[method-assign]
    due_ms = (node.clock.now_ms() // 1000 + 4) * 1000
    await node.service.submit_many([noop_at(due_ms)] * DUE_TASKS)
    while node.worker.completed < DUE_TASKS:
        await asyncio.sleep(0.01)
    newest = await node.store.list_tasks(TaskFilter(), before_seq=None, limit=DUE_TASKS)
    lateness = [float(r.started_ms - r.due_ms) for r in newest if r.started_ms is not None]
    return {
        "stored": stored,
        "load_pass_ms": round(statistics.median(loads), 2),
        "release_tick_ms": round(max(ticks, default=0.0), 2),
        "start_lateness_ms": spread(lateness),
        "early": sum(x < 0 for x in lateness),
    }
