"""burst: N no-op tasks due in the same second, submitted ahead through the batch API.

Trigger lateness is a task's release to the ready queue minus its due time, start
lateness its claim minus its due time (both as the store records them), drain the due
time to the last completion. A task not run `window` seconds after the due time counts
as never run.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from bench.figures import spread
from bench.progress import say
from bench.stores import Mode, labels
from bench.targets import running, submit_batches, wait_succeeded


async def run(
    mode: Mode,
    tasks: int = 300_000,
    lead_seconds: float | None = None,
    window: float = 600.0,
    concurrency: int = 512,
    count_writes: bool = False,
) -> dict[str, Any]:
    async with running(mode, concurrency=concurrency) as target:
        writes = await target.row_writes() if count_writes else None
        if lead_seconds is None:  # time to submit at 4,000 tasks/s, and 10 s more
            lead_seconds = 10 + tasks / 4_000
        due_ms = (int(time.time()) + 1 + round(lead_seconds)) * 1000
        began = time.perf_counter()
        due = datetime.fromtimestamp(due_ms / 1000, UTC).isoformat()
        await submit_batches(target.url, tasks, {"type": "delayed", "due_time": due})
        submit_seconds = time.perf_counter() - began
        late_submission = time.time() * 1000 > due_ms
        if late_submission:
            say(f"submission outlasted the {lead_seconds:.0f} s lead: raise --lead-seconds")
        deadline = time.monotonic() + (due_ms - time.time() * 1000) / 1000 + window
        await wait_succeeded(target, tasks, "running the burst", deadline)
        rows = await target.rows(
            "SELECT triggered_at, started_at, completed_at FROM tasks WHERE status = 'succeeded'"
        )
        after = await target.row_writes() if writes is not None else None
    started = [float(r[1] - due_ms) for r in rows]
    in_window = [x for x in started if x <= window * 1000]
    result: dict[str, Any] = {
        **labels(mode, "burst"),
        "tasks": tasks,
        "ran": len(in_window),
        "never_ran": tasks - len(in_window),
        "submit_tasks_per_s": round(tasks / submit_seconds),
        "trigger_lateness_ms": spread([float(r[0] - due_ms) for r in rows]),
        "start_lateness_ms": spread(started),
        "early": sum(x < 0 for x in started),
        "drain_seconds": round((max((r[2] for r in rows), default=due_ms) - due_ms) / 1000, 2),
        "lead_seconds": round(lead_seconds, 1),
        "submission_outlasted_lead": late_submission,
    }
    if writes is not None and after is not None:
        result["row_writes_per_task"] = round((after - writes) / tasks, 2)
    return result
