"""The settings SAQ's workers run: `saq bench.peers.saq_tasks.settings`.

As SAQ's README sets a worker up: a settings dict with the queue and the functions, and
its example's `concurrency` of 10 (also the worker's default). The queue is on the
sink's Redis URL, read once, at import; nothing connects until the worker starts.
"""

from __future__ import annotations

from typing import Any

from saq import Queue

from bench.peers import recorder
from bench.peers.sink import sink_url

TASK = "record"


async def record(ctx: Any, *, run: str, index: int) -> None:
    recorder.record(run, index)


settings: dict[str, Any] = {
    "queue": Queue.from_url(sink_url()),
    "functions": [record],
    "concurrency": 10,
}
