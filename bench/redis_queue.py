"""Push and pull throughput of RedisReadyQueue, in batches of 5,000 items.

    .venv/bin/python -m bench.redis_queue [--url redis://127.0.0.1:6379/15]
        [--batch 5000] [--batches 20] [--priorities 4] [--runs 3]

Each run pushes ``--batches`` batches (priorities spread over ``--priorities`` lanes of
one queue), then pulls with ``limit=--batch`` until the queue is empty, on a fresh key
prefix that is deleted afterwards. Prints the median of ``--runs`` runs; the last line
of output is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid

from tickwheel.queue.base import ReadyItem
from tickwheel.queue.redis import RedisReadyQueue

DEFAULT_URL = os.environ.get("TICKWHEEL_REDIS_URL", "redis://127.0.0.1:6379/15")
NOW_MS = 1_700_000_000_000


async def one_run(url: str, batch: int, batches: int, priorities: int) -> tuple[float, float]:
    """(push, pull) items/s of one run."""
    prefix = f"tickwheel-bench:{uuid.uuid4().hex}:"
    queue = RedisReadyQueue.from_url(url, prefix=prefix)
    chunks = [
        [
            ReadyItem(seq, "default", seq % priorities, NOW_MS + seq, NOW_MS + seq)
            for seq in range(start, start + batch)
        ]
        for start in range(0, batch * batches, batch)
    ]
    try:
        started = time.perf_counter()
        for chunk in chunks:
            await queue.push(chunk)
        pushed = time.perf_counter()
        pulled = 0
        while items := await queue.pull(["default"], limit=batch, wait_seconds=0):
            pulled += len(items)
        done = time.perf_counter()
    finally:
        await queue.close()
        await RedisReadyQueue.wipe(url, prefix)
    assert pulled == batch * batches
    return pulled / (pushed - started), pulled / (done - pushed)


async def bench(args: argparse.Namespace) -> None:
    runs = [
        await one_run(args.url, args.batch, args.batches, args.priorities) for _ in range(args.runs)
    ]
    push = statistics.median(r[0] for r in runs)
    pull = statistics.median(r[1] for r in runs)
    total = args.batch * args.batches
    print(
        f"{total:,} items in batches of {args.batch:,} over {args.priorities} priorities "
        f"(median of {args.runs}): push {push:,.0f} items/s, pull {pull:,.0f} items/s"
    )
    print(
        json.dumps(
            {
                "batch": args.batch,
                "items": total,
                "push_per_s": round(push),
                "pull_per_s": round(pull),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL, help="Redis URL (db included)")
    parser.add_argument("--batch", type=int, default=5_000, help="items per push and pull")
    parser.add_argument("--batches", type=int, default=20, help="batches per run")
    parser.add_argument("--priorities", type=int, default=4, help="distinct priorities")
    parser.add_argument("--runs", type=int, default=3, help="runs (median is kept)")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
