"""Storing many no-op tasks ahead through a node in the benchmark's own process, for the
scenarios that measure triggering rather than submission."""

from __future__ import annotations

from collections.abc import Callable

from bench.progress import steps
from tickwheel.engine.node import Node
from tickwheel.engine.tasks import ScheduleRequest, TaskRequest
from tickwheel.models import ScheduleType

BATCH = 10_000


def noop_at(due_ms: int) -> TaskRequest:
    return TaskRequest("noop", None, ScheduleRequest(ScheduleType.DELAYED, due_ms=due_ms))


async def store_noops(node: Node, count: int, due_of: Callable[[int], int]) -> None:
    """Store `count` no-op tasks through `node`, task i due at `due_of(i)`, in batches
    of 10,000, with a progress bar."""
    with steps(f"storing {count:,}", count) as done:
        for start in range(0, count, BATCH):
            end = min(start + BATCH, count)
            await node.service.submit_many([noop_at(due_of(i)) for i in range(start, end)])
            done(end)
