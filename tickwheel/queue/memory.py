"""The embedded ready queue: per queue, one FIFO lane per priority.

The trigger engine pushes tasks in due order, so a FIFO lane keeps due order
within a priority without the cost of a heap. Staged tasks wait in one heap by due
time and join their lanes when a pull finds them due.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Sequence

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


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class MemoryReadyQueue:
    def __init__(self, *, stage_ahead_ms: int = 0, now_ms: Callable[[], int] = _wall_ms) -> None:
        self._queues: dict[str, _Lanes] = {}
        self._arrived = asyncio.Event()
        self._staged: list[tuple[int, int, ReadyItem]] = []  # (due_ms, order, item) heap
        self._staged_count = 0
        self._staged_depth: Counter[str] = Counter()
        self._now_ms = now_ms
        self.stage_ahead_ms = stage_ahead_ms

    async def push(self, items: Sequence[ReadyItem]) -> None:
        for item in items:
            self._lanes(item.queue).push(item)
        if items:
            self._arrived.set()

    async def stage(self, items: Sequence[ReadyItem]) -> None:
        for item in items:
            heapq.heappush(self._staged, (item.due_ms, self._staged_count, item))
            self._staged_count += 1
            self._staged_depth[item.queue] += 1
        if items:
            self._arrived.set()

    def _lanes(self, queue: str) -> _Lanes:
        lanes = self._queues.get(queue)
        if lanes is None:
            self._queues[queue] = lanes = _Lanes()
        return lanes

    def _promote(self) -> float | None:
        """Move staged items now due to their lanes; seconds until the next is due."""
        staged, now = self._staged, self._now_ms()
        while staged and staged[0][0] <= now:
            item = heapq.heappop(staged)[2]
            self._staged_depth[item.queue] -= 1
            self._lanes(item.queue).push(item)
        return (staged[0][0] - now) / 1000 if staged else None

    async def pull(
        self, queues: Collection[str], *, limit: int, wait_seconds: float
    ) -> list[ReadyItem]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while True:
            staged_in = self._promote()
            taken = self._take(queues, limit)
            remaining = deadline - loop.time()
            if taken or remaining <= 0:
                return taken
            self._arrived.clear()
            if staged_in is not None:
                remaining = min(remaining, staged_in)
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
        depth = Counter({name: lanes.count for name, lanes in self._queues.items()})
        depth.update(self._staged_depth)
        return {name: count for name, count in depth.items() if count or name in self._queues}

    async def oldest_release(self, queues: Collection[str]) -> dict[str, int]:
        oldest: dict[str, int] = {}
        for name in queues:
            lanes = self._queues.get(name)
            heads = [lane[0].triggered_ms for lane in lanes.lanes.values() if lane] if lanes else []
            if heads:
                oldest[name] = min(heads)
        for _, _, item in self._staged:
            if item.queue in queues:
                stamp = item.triggered_ms
                oldest[item.queue] = min(oldest.get(item.queue, stamp), stamp)
        return oldest

    async def fresh_depth(self) -> dict[str, int]:
        return self.depth()

    async def close(self) -> None:
        """Nothing to release: the queue lives in this process."""
