"""What a task's writes cost PostgreSQL: its CPU time per task for the inserts, and for
the claims and ends, made through the store as a cluster makes them.

    .venv/bin/python -m bench.store_writes --tasks 40000 --runs 3

On a fresh schema: the tasks are inserted 1,000 a statement, as the API inserts a batch;
then two workers, each on its own connections and at once, claim them 64 at a time and
end each batch four batches after claiming it, as a worker with slots busy does. The
CPU time of every PostgreSQL process (user + system, from /proc) is divided by the
tasks, for each phase; prints the median of the runs. Run it on a quiet machine (every
backend is counted), from each of two checkouts to compare them: a task's CPU time in
the database follows how many index entries and rows its writes make, which this
isolates from the Python processes that share the cores in `cpu_per_task`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import deque

from bench.cpu_per_task import cpu_of_named
from bench.stores import Mode, fresh_settings
from tickwheel.ids import new_id
from tickwheel.models import Finish, NewTask, Outcome, ScheduleType, Status
from tickwheel.storage.base import Store
from tickwheel.storage.factory import open_store

INSERT_BATCH = 1_000
CLAIM_BATCH = 64
ENDS_BEHIND = 4  # batches claimed and not yet ended, per worker
LEASE_MS = 60_000


async def one_run(tasks: int) -> dict[str, float]:
    async with fresh_settings(Mode.DISTRIBUTED) as settings:
        store: Store = await open_store(settings.database_url, partitions=16, name="bench")
        try:
            now = int(time.time() * 1000)
            kind = ScheduleType.IMMEDIATE
            new = [
                NewTask(new_id(), n % 16, "bench", {"n": n}, kind, now, now) for n in range(tasks)
            ]
            began = cpu_of_named("postgres")
            seqs: list[int] = []
            for first in range(0, tasks, INSERT_BATCH):
                seqs += await store.insert_tasks(new[first : first + INSERT_BATCH])
            inserted = cpu_of_named("postgres")
            batches = deque(seqs[i : i + CLAIM_BATCH] for i in range(0, tasks, CLAIM_BATCH))
            await asyncio.gather(work(store, batches, "w1"), work(store, batches, "w2"))
            ended = cpu_of_named("postgres")
        finally:
            await store.close()
    return {
        "insert": (inserted - began) / tasks * 1e6,
        "claim and end": (ended - inserted) / tasks * 1e6,
    }


async def work(store: Store, batches: deque[list[int]], worker_id: str) -> None:
    """Claim batches until none is left, ending each `ENDS_BEHIND` batches later."""
    running: deque[list[Finish]] = deque()
    while batches or running:
        if batches:
            now = int(time.time() * 1000)
            items = [(seq, now) for seq in batches.popleft()]
            claimed = await store.claim(items, now_ms=now, lease_ms=LEASE_MS, worker_id=worker_id)
            running.append(
                [Finish(t.seq, t.fence, Outcome.SUCCEEDED, Status.SUCCEEDED, now) for t in claimed]
            )
        if len(running) > ENDS_BEHIND or (running and not batches):
            await store.finish(running.popleft())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [await one_run(args.tasks) for _ in range(args.runs)]
    print(f"PostgreSQL CPU per task, {args.tasks:,} tasks, median of {args.runs} runs:")
    for phase in runs[0]:
        values = [r[phase] for r in runs]
        print(
            f"  {phase:14} {statistics.median(values):6.1f} µs  (runs: "
            + ", ".join(f"{v:.1f}" for v in values)
            + ")"
        )
    total = [sum(r.values()) for r in runs]
    print(f"  {'total':14} {statistics.median(total):6.1f} µs")


if __name__ == "__main__":
    asyncio.run(main())
