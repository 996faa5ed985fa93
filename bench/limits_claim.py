"""What rate and concurrency limits cost a claim: tasks claimed per second through the
store's claim (batches of 256, each batch's ends written before the next, so running
tasks stay as few as a worker's slots), with no limit, with limits on the tasks that
never bind, and with a rate limit that binds (most tasks are judged and held back).

    .venv/bin/python -m bench.limits_claim --mode embedded --tasks 20000 --runs 3

Prints the median of the runs per case; the cases are interleaved, run by run, so a
noisy machine weighs on each alike.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass

from bench.stores import Mode, fresh_settings
from tickwheel.core.limits import Limit, Rate, Scope
from tickwheel.ids import new_id
from tickwheel.models import Finish, NewTask, Outcome, ScheduleType, Status
from tickwheel.storage.base import Store
from tickwheel.storage.factory import open_store

BATCH = 256
LEASE_MS = 30_000


@dataclass(frozen=True)
class Case:
    name: str
    limits: tuple[Limit, ...]


CASES = (
    Case("no limits", ()),
    Case(
        "declared, not binding",
        (
            Limit(Scope.TASK_TYPE, "bench", rate=Rate(1_000_000, 1000), concurrency=1_000_000),
            Limit(Scope.KEY, "tenant", concurrency=1_000_000),
        ),
    ),
    Case("binding (1,000/s)", (Limit(Scope.TASK_TYPE, "bench", rate=Rate(1000, 1000)),)),
)


async def one_run(mode: Mode, case: Case, tasks: int) -> tuple[float, int]:
    """(items judged per second by the claims, how many were claimed)."""
    async with fresh_settings(mode) as settings:
        store: Store = await open_store(settings.database_url, partitions=16, name="bench")
        try:
            now = int(time.time() * 1000)
            for limit in case.limits:
                await store.put_limit(limit, now)
            new = [
                NewTask(
                    new_id(),
                    n % 16,
                    "bench",
                    {},
                    ScheduleType.IMMEDIATE,
                    now,
                    now,
                    limit_key="tenant",
                )
                for n in range(tasks)
            ]
            seqs: list[int] = []
            for first in range(0, tasks, 1000):
                seqs += await store.insert_tasks(new[first : first + 1000])
            spent, claimed = 0.0, 0
            for first in range(0, tasks, BATCH):
                items = [(s, now) for s in seqs[first : first + BATCH]]
                began = time.perf_counter()
                found = await store.claim_some(
                    items,
                    now_ms=int(time.time() * 1000),
                    lease_ms=LEASE_MS,
                    worker_id="bench",
                    start_now=None,
                )
                spent += time.perf_counter() - began
                claimed += len(found.tasks)
                ended = int(time.time() * 1000)
                await store.finish(
                    [
                        Finish(t.seq, t.fence, Outcome.SUCCEEDED, Status.SUCCEEDED, ended)
                        for t in found.tasks
                    ]
                )
            return tasks / spent, claimed
        finally:
            await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", type=Mode, choices=list(Mode), default=Mode.EMBEDDED)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {c.name: [] for c in CASES}
    claimed: dict[str, int] = {}
    for _ in range(args.runs):
        for case in CASES:
            rate, claimed[case.name] = await one_run(args.mode, case, args.tasks)
            rates[case.name].append(rate)
    base = statistics.median(rates[CASES[0].name])
    print(f"{args.mode}: {args.tasks:,} tasks, claims of {BATCH}, median of {args.runs} runs")
    for case in CASES:
        median = statistics.median(rates[case.name])
        print(
            f"  {case.name:24} {median:10,.0f} judged/s  ({median / base:.2f}x)"
            f"  claimed {claimed[case.name]:,}  runs: "
            + ", ".join(f"{r:,.0f}" for r in rates[case.name])
        )


if __name__ == "__main__":
    asyncio.run(main())
