"""memory: resident bytes a scheduler holds per task on its wheels.

A node in this process stores N no-op tasks due 10 to 20 minutes ahead and closes. A
scheduler node (no API, no worker; its horizon stretched to an hour so that every task
goes on a wheel) then starts on the same store and loads them. The figure is the growth
of this process's resident set from before the scheduler started to when its wheels hold
all N, divided by N: it includes what loading left allocated, as a real process would.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
from dataclasses import replace
from typing import Any

from tickwheel.bench.progress import steps
from tickwheel.bench.stores import Mode, fresh_settings, labels
from tickwheel.config import Role, Settings
from tickwheel.engine.node import Node
from tickwheel.engine.tasks import ScheduleRequest, TaskRequest
from tickwheel.models import ScheduleType

BATCH = 10_000
MINUTE_MS = 60_000


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def run(mode: Mode, tasks: int = 1_000_000) -> dict[str, Any]:
    async with fresh_settings(mode, horizon_seconds=3600.0) as settings:
        await _store(replace(settings, horizon_seconds=60.0), tasks)
        gc.collect()
        before = resident_bytes()
        async with Node(settings=settings, roles=frozenset({Role.SCHEDULER})) as node:
            with steps(f"loading {tasks:,} onto the wheels", tasks) as done:
                while (held := node.trigger.size()) < tasks:
                    done(held)
                    await asyncio.sleep(0.2)
            gc.collect()
            grown = resident_bytes() - before
    return labels(mode, "memory") | {
        "tasks": tasks,
        "on_wheels": held,
        "resident_bytes_per_task": round(grown / tasks, 1),
        "resident_mib": round(grown / 2**20, 1),
    }


async def _store(settings: Settings, tasks: int) -> None:
    rng = random.Random(1)
    async with Node(settings=settings, roles=frozenset({Role.API})) as node:
        soon = node.clock.now_ms() + 10 * MINUTE_MS
        with steps(f"storing {tasks:,}", tasks) as done:
            for offset in range(0, tasks, BATCH):
                batch = [
                    TaskRequest(
                        "noop",
                        None,
                        ScheduleRequest(
                            ScheduleType.DELAYED, due_ms=soon + rng.randrange(10 * MINUTE_MS)
                        ),
                    )
                    for _ in range(min(BATCH, tasks - offset))
                ]
                await node.service.submit_many(batch)
                done(offset + len(batch))
