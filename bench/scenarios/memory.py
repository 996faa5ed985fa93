"""memory: resident bytes a scheduler holds per task on its wheels.

A node stores N no-op tasks due 10 to 20 minutes ahead and closes. Then a fresh process
(spawned, so that nothing the storing left allocated is reused) starts a scheduler node
on the same store (no API, no worker; its horizon stretched to an hour so that every
task goes on a wheel) and loads them. The figure is the growth of that process's
resident set from before the scheduler started to when its wheels hold all N, divided
by N: it includes what loading left allocated, as in a real scheduler process.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import random
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from bench.progress import steps
from bench.stores import Mode, fresh_settings, labels
from bench.storing import store_noops
from tickwheel.config import Role, Settings
from tickwheel.engine.node import Node

MINUTE_MS = 60_000
LOAD_SECONDS = 600.0


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def run(mode: Mode, tasks: int = 1_000_000) -> dict[str, Any]:
    async with fresh_settings(mode, horizon_seconds=3600.0) as settings:
        await _store(replace(settings, horizon_seconds=60.0), tasks)
        spawn = multiprocessing.get_context("spawn")
        with (
            ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool,
            steps(f"loading {tasks:,} onto the wheels (in a fresh process)", 1),
        ):
            held, grown = await asyncio.get_running_loop().run_in_executor(
                pool, _load_and_measure, settings, tasks
            )
    return labels(mode, "memory") | {
        "tasks": tasks,
        "on_wheels": held,
        "resident_bytes_per_task": round(grown / tasks, 1),
        "resident_mib": round(grown / 2**20, 1),
    }


def _load_and_measure(settings: Settings, tasks: int) -> tuple[int, int]:
    """(tasks on the wheels, resident bytes grown), in the spawned process."""
    return asyncio.run(_load(settings, tasks))


async def _load(settings: Settings, tasks: int) -> tuple[int, int]:
    gc.collect()
    before = resident_bytes()
    deadline = time.monotonic() + LOAD_SECONDS
    async with Node(settings=settings, roles=frozenset({Role.SCHEDULER})) as node:
        while (held := node.trigger.size()) < tasks and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        gc.collect()
        return held, resident_bytes() - before


async def _store(settings: Settings, tasks: int) -> None:
    rng = random.Random(1)
    async with Node(settings=settings, roles=frozenset({Role.API})) as node:
        soon = node.clock.now_ms() + 10 * MINUTE_MS
        await store_noops(node, tasks, lambda _: soon + rng.randrange(10 * MINUTE_MS))
