"""What rate and concurrency limits cost a claim: tasks claimed per second through the
store's claim (batches of 256, each batch's ends written before the next, so running
tasks stay as few as a worker's slots), with no limit, with limits on the tasks that
never bind, and with a rate limit that binds (most tasks are judged and held back).

    .venv/bin/python -m bench.limits_claim --mode embedded --tasks 20000 --runs 3

Prints the median of the runs per case; the cases are interleaved, run by run, so a
noisy machine weighs on each alike. `--plain`: only `Store.claim` with no limit, with
nothing this program needs of limits imported, so that a copy of it measures a checkout
from before limits existed the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass
from typing import Any

from bench.stores import Mode, fresh_settings
from tickwheel.ids import new_id
from tickwheel.models import Finish, NewTask, Outcome, ScheduleType, Status
from tickwheel.storage.base import Store
from tickwheel.storage.factory import open_store

BATCH = 256
LEASE_MS = 30_000


@dataclass(frozen=True)
class Case:
    name: str
    limits: tuple[Any, ...]  # of `tickwheel.core.limits.Limit`


def cases() -> tuple[Case, ...]:
    from tickwheel.core.limits import Limit, Rate, Scope

    declared = (
        Limit(Scope.TASK_TYPE, "bench", rate=Rate(1_000_000, 1000), concurrency=1_000_000),
        Limit(Scope.KEY, "tenant", concurrency=1_000_000),
    )
    binding = (Limit(Scope.TASK_TYPE, "bench", rate=Rate(1000, 1000)),)
    return (
        Case("no limits", ()),
        Case("declared, not binding", declared),
        Case("binding (1,000/s)", binding),
    )


PLAIN = Case("plain claim, no limits", ())


async def one_run(mode: Mode, case: Case, tasks: int) -> tuple[float, int]:
    """(items judged per second by the claims, how many were claimed)."""
    async with fresh_settings(mode) as settings:
        store: Store = await open_store(settings.database_url, partitions=16, name="bench")
        try:
            now = int(time.time() * 1000)
            for limit in case.limits:
                await store.put_limit(limit, now)
            keyed: dict[str, Any] = {} if case is PLAIN else {"limit_key": "tenant"}
            kind = ScheduleType.IMMEDIATE
            new = [
                NewTask(new_id(), n % 16, "bench", {}, kind, now, now, **keyed)
                for n in range(tasks)
            ]
            seqs: list[int] = []
            for first in range(0, tasks, 1000):
                seqs += await store.insert_tasks(new[first : first + 1000])
            spent, claimed = 0.0, 0
            for first in range(0, tasks, BATCH):
                items = [(s, now) for s in seqs[first : first + BATCH]]
                began = time.perf_counter()
                found = await claim(store, items, plain=case is PLAIN)
                spent += time.perf_counter() - began
                claimed += len(found)
                ended = int(time.time() * 1000)
                await store.finish(
                    [
                        Finish(t.seq, t.fence, Outcome.SUCCEEDED, Status.SUCCEEDED, ended)
                        for t in found
                    ]
                )
            return tasks / spent, claimed
        finally:
            await store.close()


async def claim(store: Store, items: list[tuple[int, int]], *, plain: bool) -> list[Any]:
    now = int(time.time() * 1000)
    if plain:
        return await store.claim(items, now_ms=now, lease_ms=LEASE_MS, worker_id="bench")
    found = await store.claim_some(
        items, now_ms=now, lease_ms=LEASE_MS, worker_id="bench", start_now=None
    )
    return found.tasks


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", type=Mode, choices=list(Mode), default=Mode.EMBEDDED)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--plain", action="store_true", help="Store.claim, no limit only")
    args = parser.parse_args()
    chosen = (PLAIN,) if args.plain else cases()
    rates: dict[str, list[float]] = {c.name: [] for c in chosen}
    claimed: dict[str, int] = {}
    for _ in range(args.runs):
        for case in chosen:
            rate, claimed[case.name] = await one_run(args.mode, case, args.tasks)
            rates[case.name].append(rate)
    base = statistics.median(rates[chosen[0].name])
    print(f"{args.mode}: {args.tasks:,} tasks, claims of {BATCH}, median of {args.runs} runs")
    for case in chosen:
        median = statistics.median(rates[case.name])
        print(
            f"  {case.name:24} {median:10,.0f} judged/s  ({median / base:.2f}x)"
            f"  claimed {claimed[case.name]:,}  runs: "
            + ", ".join(f"{r:,.0f}" for r in rates[case.name])
        )


if __name__ == "__main__":
    asyncio.run(main())
