"""Burst: N tasks due in the same second, through the embedded engine (SQLite, in-process
queue and worker). Prints trigger and start lateness, drain time and wheel memory per task.

    .venv/bin/python bench/burst.py --tasks 100000

Trigger lateness is the time a task reached the ready queue minus its due time; start
lateness is its claim (started_at) minus its due time; drain is due time to the last
completion. The last line is the result as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import uvloop

from tickwheel.config import Settings
from tickwheel.core.wheel import TimingWheel
from tickwheel.engine.node import Node
from tickwheel.engine.tasks import ScheduleRequest, TaskRequest
from tickwheel.models import ScheduleType
from tickwheel.storage.base import TaskFilter


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def wheel_bytes_per_task(entries: list[tuple[int, int]]) -> float:
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    wheel = TimingWheel(time.time_ns() // 1_000_000)
    for key, due in entries:
        wheel.insert(key, due)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert len(wheel) == len(entries)
    return grown / len(entries)


async def run(tasks: int, lead_seconds: float, concurrency: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="tickwheel-bench-"))
    settings = Settings(
        database_url=f"sqlite:///{folder / 'burst.db'}", concurrency=concurrency, lease_seconds=60
    )
    pushed: list[tuple[float, int]] = []  # (monotonic-free wall time in ms, due_ms) per task

    async with Node(settings=settings) as node:
        push = node.queue.push

        async def timed_push(items: Any) -> None:
            await push(items)
            at = time.time_ns() / 1e6
            pushed.extend((at, item.due_ms) for item in items)

        node.queue.push = timed_push  # type: ignore[method-assign]
        due_ms = (time.time_ns() // 1_000_000 // 1000 + int(lead_seconds)) * 1000
        request = TaskRequest("noop", None, ScheduleRequest(ScheduleType.DELAYED, due_ms=due_ms))
        started = time.perf_counter()
        for offset in range(0, tasks, 10_000):
            await node.service.submit_many([request] * min(10_000, tasks - offset))
        submit_seconds = time.perf_counter() - started
        if time.time_ns() / 1e6 > due_ms - 1000:
            raise SystemExit("submission took longer than the lead time: raise --lead-seconds")
        while node.worker.completed < tasks:
            await asyncio.sleep(0.01)
        drained_ms = time.time_ns() / 1e6
        rows = await node.store.list_tasks(
            TaskFilter(),
            before_seq=None,
            limit=tasks,
        )
    trigger_lateness = [at - due for at, due in pushed]
    start_lateness = [float(r.started_ms - r.due_ms) for r in rows if r.started_ms is not None]
    wheel_entries = [(r.seq << 24, r.due_ms) for r in rows]
    return {
        "scenario": "burst",
        "tasks": tasks,
        "submit_tasks_per_s": round(tasks / submit_seconds),
        "trigger_lateness_ms": {
            "p50": round(percentile(trigger_lateness, 0.50), 1),
            "p99": round(percentile(trigger_lateness, 0.99), 1),
            "max": round(max(trigger_lateness), 1),
            "min": round(min(trigger_lateness), 1),
        },
        "start_lateness_ms": {
            "p50": round(percentile(start_lateness, 0.50), 1),
            "p99": round(percentile(start_lateness, 0.99), 1),
            "max": round(max(start_lateness), 1),
        },
        "drain_seconds": round((drained_ms - due_ms) / 1000, 3),
        "run_tasks_per_s": round(tasks / max((drained_ms - due_ms) / 1000, 1e-9)),
        "wheel_bytes_per_task": round(wheel_bytes_per_task(wheel_entries), 1),
        "early": sum(1 for x in trigger_lateness if x < 0),
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--lead-seconds", type=float, default=8.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    results = [
        uvloop.run(run(args.tasks, args.lead_seconds, args.concurrency)) for _ in range(args.runs)
    ]
    for result in results:
        print(json.dumps(result))
    if len(results) > 1:
        p99 = statistics.median(r["trigger_lateness_ms"]["p99"] for r in results)
        print(json.dumps({"median_trigger_p99_ms": p99, "runs": len(results)}))


if __name__ == "__main__":
    main()
