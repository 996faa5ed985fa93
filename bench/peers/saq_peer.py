"""SAQ (Simple Async Queue) on Redis, as its documentation runs it.

Worker: `saq bench.peers.saq_tasks.settings --workers N`, one command with N =
cores: the CLI's own way to more processes (`--workers`, "Number of worker processes"),
each an asyncio worker with the README's `concurrency` of 10. Its defaults otherwise (a
look for due scheduled jobs every second). The CLI logs at WARNING unless `-v` is given.
The queue is on the sink's Redis URL (`reset` deletes its keys).

Submission: `queue.enqueue("record", run=..., index=..., scheduled=...)`, one call per
task, as SAQ has no bulk enqueue (`map` enqueues one by one and waits for the results);
the calls of a chunk run concurrently, as asyncio code ordinarily does, within the
queue's own limit on concurrent operations (`max_concurrent_ops`, 20 by default).
`scheduled` is in epoch seconds, which the due instant always falls on.
"""

from __future__ import annotations

import asyncio

from saq import Queue

from bench.peers import saq_tasks
from bench.peers.redis_brokered import CORES, script
from bench.peers.shared import InSinkRedis
from bench.peers.sink import sink_url


class SaqPeer(InSinkRedis):
    name = "SAQ"
    distribution = "saq"
    broker_keys = ("saq:*",)

    def __init__(self) -> None:
        self.queue: Queue | None = None

    def worker_commands(self) -> list[list[str]]:
        settings = f"{saq_tasks.__name__}.settings"
        return [[script("saq"), settings, "--workers", str(CORES)]]

    async def submit(self, run: str, indexes: range, due_ms: int | None) -> None:
        if self.queue is None:
            self.queue = Queue.from_url(sink_url())
            await self.queue.connect()
        scheduled = 0 if due_ms is None else due_ms // 1000
        queue = self.queue
        await asyncio.gather(
            *(queue.enqueue(saq_tasks.TASK, run=run, index=i, scheduled=scheduled) for i in indexes)
        )

    async def close(self) -> None:
        if self.queue is not None:
            await self.queue.disconnect()
            self.queue = None


def peer() -> SaqPeer:
    return SaqPeer()
