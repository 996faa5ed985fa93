"""sustained: `rate` no-op tasks due each second for `seconds` seconds, stored ahead,
with no worker: what is measured is triggering, not running. Every release is stamped,
so trigger lateness (release minus due) and the releases per second are known for each
task.

embedded: a node in this process stores the tasks in SQLite and closes; a scheduler node
on the same file then triggers them into its in-process queue, stamped as the trigger
hands each batch over. distributed: a local cluster (schedulers and an
API, no worker), its releases read back from Redis with the stamp the queue gave each.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from redis.asyncio import Redis

from bench.figures import spread
from bench.progress import steps
from bench.stores import REDIS, Mode, fresh_settings, labels
from bench.storing import store_noops
from bench.targets import running
from tickwheel.config import Role, Settings
from tickwheel.engine.node import Node
from tickwheel.queue.base import ReadyItem

ITEM = struct.Struct("<qqq")  # a ready-queue item in Redis: seq, due_ms, triggered_ms
Stamp = tuple[int, int, int]  # seq, due_ms, released_ms


async def run(
    mode: Mode, rate: int = 50_000, seconds: int = 60, lead_seconds: float | None = None
) -> dict[str, Any]:
    count = rate * seconds
    # long enough to store them all at 10,000/s (either store here stores more)
    lead = lead_seconds if lead_seconds is not None else 10 + count / 10_000
    if mode is Mode.EMBEDDED:
        first_due, stamps, stored_in = await _embedded(lead, rate, seconds)
    else:
        first_due, stamps, stored_in = await _distributed(lead, rate, seconds)
    return (
        labels(mode, "sustained")
        | summary(stamps, first_due, rate, seconds)
        | {"stored_per_s": round(count / stored_in)}
    )


def first_due_after(lead_seconds: float) -> int:
    """The whole second (epoch ms) `lead_seconds` or a little more from now."""
    return (int(time.time()) + 1 + round(lead_seconds)) * 1000


async def store_evenly(node: Node, first_due_ms: int, rate: int, count: int) -> float:
    """Store `count` no-op tasks due `rate` per second from `first_due_ms`; the seconds
    it took. Fails if storing outlasted the lead."""
    began = time.perf_counter()
    await store_noops(node, count, lambda i: first_due_ms + i * 1000 // rate)
    if time.time() * 1000 > first_due_ms - 1000:
        raise SystemExit("storing outlasted the lead time: raise --lead-seconds")
    return time.perf_counter() - began


async def _embedded(lead: float, rate: int, seconds: int) -> tuple[int, list[Stamp], float]:
    """Stored by one node, then triggered by another on the same file: storing millions
    in one process must not compete with the trigger being measured."""
    stamps: list[Stamp] = []
    async with fresh_settings(Mode.EMBEDDED, max_ready_depth=10**9) as settings:
        async with Node(settings=settings, roles=frozenset({Role.API})) as node:
            first_due = first_due_after(lead)
            stored_in = await store_evenly(node, first_due, rate, rate * seconds)
        async with Node(settings=settings, roles=frozenset({Role.SCHEDULER})) as node:
            push, stage = node.queue.push, node.queue.stage

            async def stamped_push(items: Sequence[ReadyItem]) -> None:
                await push(items)
                at = time.time_ns() // 1_000_000
                stamps.extend((item.seq, item.due_ms, at) for item in items)

            async def stamped_stage(items: Sequence[ReadyItem]) -> None:
                # Staged ahead: the queue shows each from its due time, or from now.
                await stage(items)
                at = time.time_ns() // 1_000_000
                stamps.extend((item.seq, item.due_ms, max(at, item.due_ms)) for item in items)

            node.queue.push = stamped_push  # type: ignore[method-assign]
            node.queue.stage = stamped_stage  # type: ignore[method-assign]
            await _wait_out(first_due, seconds)
    return first_due, stamps, stored_in


async def _distributed(lead: float, rate: int, seconds: int) -> tuple[int, list[Stamp], float]:
    async with running(Mode.DISTRIBUTED, concurrency=1, workers=0) as target:
        api = replace(target.settings, max_ready_depth=10**9)
        async with Node(settings=api, roles=frozenset({Role.API})) as node:
            first_due = first_due_after(lead)
            stored_in = await store_evenly(node, first_due, rate, rate * seconds)
        await _wait_out(first_due, seconds)
        return first_due, await released_stamps(target.settings), stored_in


async def _wait_out(first_due: int, seconds: int) -> None:
    """Until the last task has been due 3 s, with a bar over the triggering seconds."""
    end = first_due / 1000 + seconds + 3
    with steps("triggering", seconds + 3) as done:
        while (now := time.time()) < end:
            done(max(0, round(now - first_due / 1000)))
            await asyncio.sleep(min(0.5, end - now))


async def released_stamps(settings: Settings) -> list[Stamp]:
    """(seq, due_ms, released_ms) of every item in the Redis queue's lanes and stages."""
    redis, prefix = Redis.from_url(settings.redis_url or REDIS), settings.redis_prefix
    found: list[Stamp] = []
    try:
        for pattern, read in (("lane:*", redis.lrange), ("stage:*", redis.zrange)):
            async for key in redis.scan_iter(match=f"{prefix}{pattern}"):
                for start in range(0, 10**9, 100_000):
                    chunk = await read(key, start, start + 99_999)
                    if not chunk:
                        break
                    found += ITEM.iter_unpack(b"".join(chunk))
    finally:
        await redis.aclose()
    return found


def summary(stamps: list[Stamp], first_due: int, rate: int, seconds: int) -> dict[str, Any]:
    lateness = [float(at - due) for _, due, at in stamps]
    per_second = Counter((at - first_due) // 1000 for _, _, at in stamps)
    windows = {
        f"{w * 10}-{w * 10 + 10}s": spread(
            [float(at - due) for _, due, at in stamps if (due - first_due) // 10_000 == w]
        )
        for w in range(max(1, seconds // 10))
    }
    achieved = sorted(per_second[s] for s in range(seconds))
    return {
        "rate": rate,
        "seconds": seconds,
        "tasks": rate * seconds,
        "released": len(stamps),
        "missing": rate * seconds - len({seq for seq, _, _ in stamps}),
        "trigger_lateness_ms": spread(lateness),
        "triggered_per_s": {"median": achieved[len(achieved) // 2], "min": achieved[0]},
        "lateness_by_window": windows,
    }
