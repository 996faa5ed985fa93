"""How the suite counts runs outside Tickwheel: each task's body notes its own start.

`TargetRuns`: the built-in `http` task type calls the suite's target server, which
notes every call (task id, attempt, time); exact even for a worker killed mid-run, at a
few hundred tasks a second. `RecordedRuns`: a handler of the workers' own app appends
"index start_ms" to a buffer that a thread ships to a Redis list in batches (the
benchmarks' recorder), for scenarios that need thousands a second; a worker killed
within a shipment's 25 ms would lose its last records, so scenarios that kill workers
use the target.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from harness import Target

from bench import pythonpath
from bench.peers import tickwheel_tasks
from bench.peers.sink import SINK_URL_ENV, Sink

T = TypeVar("T")


class Runs(Protocol):
    def body(self, index: int) -> tuple[str, dict[str, Any]]:
        """The task type and payload of the suite's `index`-th task."""
        ...

    def starts(self, task_of: dict[int, str]) -> dict[str, list[float]]:
        """Task id -> the epoch seconds of each of its runs; `task_of`: index -> id."""
        ...


class TargetRuns:
    PATH = "/fault"

    def __init__(self, target: Target, task_seconds: float) -> None:
        self.target = target
        target.delays[self.PATH] = task_seconds

    def body(self, index: int) -> tuple[str, dict[str, Any]]:
        return "http", {"url": f"{self.target.url}{self.PATH}", "method": "POST"}

    def starts(self, task_of: dict[int, str]) -> dict[str, list[float]]:
        runs: dict[str, list[float]] = defaultdict(list)
        for call in self.target.calls_to(self.PATH):
            runs[call.task_id].append(call.at)
        return runs


class RecordedRuns:
    """Runs noted in a Redis list of `redis_url`, deleted by `forget`."""

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self.run = f"fault-{uuid.uuid4().hex[:12]}"

    def env(self) -> dict[str, str]:
        """The settings that give the workers the recording handler (it lives in bench/)."""
        return {
            "TICKWHEEL_APP": tickwheel_tasks.APP,
            SINK_URL_ENV: self.redis_url,
            "PYTHONPATH": pythonpath(),
        }

    def body(self, index: int) -> tuple[str, dict[str, Any]]:
        return tickwheel_tasks.TASK, {"run": self.run, "index": index}

    def starts(self, task_of: dict[int, str]) -> dict[str, list[float]]:
        runs: dict[str, list[float]] = defaultdict(list)
        for index, start_ms in asyncio.run(self._with_sink(lambda sink: sink.starts(self.run))):
            if index in task_of:
                runs[task_of[index]].append(start_ms / 1000)
        return runs

    def forget(self) -> None:
        asyncio.run(self._with_sink(lambda sink: sink.forget(self.run)))

    async def _with_sink(self, use: Callable[[Sink], Awaitable[T]]) -> T:
        sink = Sink(self.redis_url)
        try:
            return await use(sink)
        finally:
            await sink.aclose()
