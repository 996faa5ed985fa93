"""The embedded ready queue: per queue, one FIFO lane per priority.

The trigger engine pushes tasks in due order, so a FIFO lane keeps due order
within a priority without the cost of a heap.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Collection, Sequence

from tickwheel.queue.base import ReadyItem
from tickwheel.waiting import wait_event


class _Lanes:
    __slots__ = ("count", "lanes")

    def __init__(self) -> None:
        self.lanes: dict[int, deque[ReadyItem]] = {}
        self.count = 0

    def push(self, item: ReadyItem) -> None:
        lane = self.lanes.get(item.priority)
        if lane is None:
            # Keep lanes ordered by priority, highest first, so popping walks them in order.
            self.lanes[item.priority] = lane = deque()
            self.lanes = dict(sorted(self.lanes.items(), reverse=True))
        lane.append(item)
        self.count += 1

    def head_priority(self) -> int | None:
        for priority, lane in self.lanes.items():
            if lane:
                return priority
        return None

    def pop_head(self, limit: int) -> list[ReadyItem]:
        """Up to `limit` items of the highest non-empty priority."""
        for lane in self.lanes.values():
            if lane:
                taken = [lane.popleft() for _ in range(min(limit, len(lane)))]
                self.count -= len(taken)
                return taken
        return []


class MemoryReadyQueue:
    def __init__(self) -> None:
        self._queues: dict[str, _Lanes] = {}
        self._arrived = asyncio.Event()

    async def push(self, items: Sequence[ReadyItem]) -> None:
        queues = self._queues
        for item in items:
            lanes = queues.get(item.queue)
            if lanes is None:
                queues[item.queue] = lanes = _Lanes()
            lanes.push(item)
        if items:
            self._arrived.set()

    async def pull(
        self, queues: Collection[str], *, limit: int, wait_seconds: float
    ) -> list[ReadyItem]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while True:
            taken = self._take(queues, limit)
            remaining = deadline - loop.time()
            if taken or remaining <= 0:
                return taken
            self._arrived.clear()
            await wait_event(self._arrived, remaining)

    def _take(self, queues: Collection[str], limit: int) -> list[ReadyItem]:
        taken: list[ReadyItem] = []
        while len(taken) < limit:
            best: _Lanes | None = None
            best_priority = 0
            for name in queues:
                lanes = self._queues.get(name)
                priority = lanes.head_priority() if lanes else None
                if lanes and priority is not None and (best is None or priority > best_priority):
                    best, best_priority = lanes, priority
            if best is None:
                break
            taken.extend(best.pop_head(limit - len(taken)))
        if taken and any(self._queues[n].count for n in queues if n in self._queues):
            self._arrived.set()  # wake the next puller: more is waiting
        return taken

    def depth(self) -> dict[str, int]:
        return {name: lanes.count for name, lanes in self._queues.items()}

    async def oldest_release(self, queues: Collection[str]) -> dict[str, int]:
        oldest = {}
        for name in queues:
            lanes = self._queues.get(name)
            heads = [lane[0].triggered_ms for lane in lanes.lanes.values() if lane] if lanes else []
            if heads:
                oldest[name] = min(heads)
        return oldest

    async def fresh_depth(self) -> dict[str, int]:
        return self.depth()

    async def close(self) -> None:
        """Nothing to release: the queue lives in this process."""
