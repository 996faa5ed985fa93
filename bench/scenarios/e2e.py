"""e2e: N no-op tasks due now, submitted through the batch API as fast as it takes them,
then triggered, claimed, run and completed: tasks/s from the first submission to the
last completion (as the store records it)."""

from __future__ import annotations

import time
from typing import Any

from bench.stores import Mode, labels
from bench.targets import running, submit_batches, wait_succeeded


async def run(
    mode: Mode,
    tasks: int = 50_000,
    concurrency: int = 512,
    limit_seconds: float = 600.0,
    count_writes: bool = False,
) -> dict[str, Any]:
    async with running(mode, concurrency=concurrency) as target:
        writes = await target.row_writes() if count_writes else None
        began_ms = time.time() * 1000
        await submit_batches(target.url, tasks, {"type": "immediate"}, concurrency=4)
        submitted_ms = time.time() * 1000
        deadline = time.monotonic() + limit_seconds
        ran = await wait_succeeded(target, tasks, "running", deadline)
        last = await target.rows("SELECT max(completed_at) FROM tasks")
        after = await target.row_writes() if writes is not None else None
    seconds = max(float(last[0][0] or submitted_ms) - began_ms, 1.0) / 1000
    result: dict[str, Any] = {
        **labels(mode, "e2e"),
        "tasks": tasks,
        "ran": ran,
        "seconds": round(seconds, 2),
        "tasks_per_s": round(ran / seconds),
        "submit_per_s": round(tasks / max(submitted_ms - began_ms, 1.0) * 1000),
    }
    if writes is not None and after is not None:
        result["row_writes_per_task"] = round((after - writes) / tasks, 2)
    return result
