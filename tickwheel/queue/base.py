"""The ready queue: where due tasks wait for a worker to pull them.

It holds no truth. Everything in it can be rebuilt from the store, so losing it
delays tasks but loses none.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import NamedTuple, Protocol

# How far ahead the trigger engine may stage: enough to hand over a 300,000 burst.
DEFAULT_STAGE_AHEAD_MS = 3000


def wall_ms() -> int:
    """This host's clock, epoch ms: the default of a queue used outside a node."""
    return time.time_ns() // 1_000_000


class ReadyItem(NamedTuple):
    seq: int
    queue: str
    priority: int
    due_ms: int
    triggered_ms: int


class ReadyQueue(Protocol):
    # How far ahead of their due time the trigger engine hands tasks to `stage`; 0: it
    # pushes each task when due.
    stage_ahead_ms: int

    async def push(self, items: Sequence[ReadyItem]) -> None:
        """Add due tasks; within a priority they leave in the order pushed."""
        ...

    async def stage(self, items: Sequence[ReadyItem]) -> None:
        """Add tasks ahead of their due time: each waits, counted in the depth, until
        its `due_ms` by the queue's clock, then joins the tail of its lane."""
        ...

    async def pull(
        self, queues: Collection[str], *, limit: int, wait_seconds: float
    ) -> list[ReadyItem]:
        """Up to `limit` items from `queues`, highest priority first; waits up to
        `wait_seconds` for the first one."""
        ...

    async def put_back(self, items: Sequence[ReadyItem]) -> None:
        """Put pulled items that were not taken back at the head of their lanes, in the
        order given (the order they were pulled in): they leave next, as if never pulled."""
        ...

    def depth(self) -> dict[str, int]:
        """Items waiting per queue, as last seen (cheap: for gauges and admission)."""
        ...

    async def fresh_depth(self) -> dict[str, int]:
        """Items waiting per queue, asked of the queue itself now."""
        ...

    async def oldest_release(self, queues: Collection[str]) -> dict[str, int]:
        """Per queue of `queues` that holds items, the earliest `triggered_ms` among
        the heads of its lanes: everything released before it has left the queue."""
        ...

    async def wiped(self) -> bool:
        """Whether the queue lost what it held since the last call (its server restarted
        empty, or its keys were deleted); the first call only notes what it holds now."""
        ...

    def failing(self) -> bool:
        """Whether a call to the queue failed a moment ago (it is down, or was)."""
        ...

    async def close(self) -> None: ...
