"""Dramatiq with its Redis broker, as its documentation sets it up for production.

Worker: `dramatiq bench.peers.dramatiq_tasks`, one command, with the CLI's
defaults: it forks one worker process per core (`--processes` defaults to the CPU
count) with 8 threads each, and prefetches from the queues as it does by default. The
broker is at the sink's Redis URL (`reset` deletes its keys).

Submission: `send_with_options(args=..., delay=ms)`, one call per task, since Dramatiq has
no bulk enqueue (a `group` sends its messages one by one too). The delay is computed per
message at send time, so each message's ETA is the due instant. The client is
synchronous, so the harness sends from a thread.

Logging: the CLI sets INFO and offers no level flag; the tasks module raises Dramatiq's
logger to WARNING.
"""

from __future__ import annotations

import asyncio
import sys
import time

from bench.peers import dramatiq_tasks
from bench.peers.shared import InSinkRedis


class DramatiqPeer(InSinkRedis):
    name = "Dramatiq"
    distribution = "dramatiq"
    broker_keys = ("dramatiq:*",)

    def worker_commands(self) -> list[list[str]]:
        return [[sys.executable, "-m", "dramatiq", dramatiq_tasks.__name__]]

    async def submit(self, run: str, indexes: range, due_ms: int | None) -> None:
        await asyncio.to_thread(_send, run, indexes, due_ms)

    async def close(self) -> None:
        dramatiq_tasks.broker.client.connection_pool.disconnect()


def _send(run: str, indexes: range, due_ms: int | None) -> None:
    for index in indexes:
        delay = None if due_ms is None else max(0, due_ms - round(time.time() * 1000))
        dramatiq_tasks.record.send_with_options(args=(run, index), delay=delay)


def peer() -> DramatiqPeer:
    return DramatiqPeer()
