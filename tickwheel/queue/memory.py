"""The embedded ready queue: per queue, one FIFO lane per priority.

The trigger engine pushes tasks in due order, so a FIFO lane keeps due order
within a priority without the cost of a heap. Staged tasks wait in a heap per lane,
by due time, and join their lane when a pull of that queue finds them due, at most as
many per lane as the pull asks for (as the Redis queue's pop does): a burst staged
ahead costs its first pull no more than the batch it takes, so its first task starts
right at its due time, with nothing left to do at that instant but the claim. A pull
waiting for work wakes when the earliest task staged in its queues falls due.
"""

from __future__ import annotations

import asyncio
import heapq
from collections import Counter, deque
from collections.abc import Callable, Collection, Sequence

from tickwheel.queue.base import ReadyItem, wall_ms
from tickwheel.waiting import wait_event


class _Lanes:
    __slots__ = ("count", "lanes")

    def __init__(self) -> None:
        self.lanes: dict[int, deque[ReadyItem]] = {}
        self.count = 0

    def push(self, item: ReadyItem) -> None:
        self._lane(item.priority).append(item)
        self.count += 1

    def push_head(self, item: ReadyItem) -> None:
        self._lane(item.priority).appendleft(item)
        self.count += 1

    def _lane(self, priority: int) -> deque[ReadyItem]:
        lane = self.lanes.get(priority)
        if lane is None:
            # Keep lanes ordered by priority, highest first, so popping walks them in order.
            self.lanes[priority] = lane = deque()
            self.lanes = dict(sorted(self.lanes.items(), reverse=True))
        return lane

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
    def __init__(self, *, stage_ahead_ms: int = 0, now_ms: Callable[[], int] = wall_ms) -> None:
        self._queues: dict[str, _Lanes] = {}
        self._arrived = asyncio.Event()
        # queue -> priority -> heap of (due_ms, order, item)
        self._staged: dict[str, dict[int, list[tuple[int, int, ReadyItem]]]] = {}
        self._staged_count = 0
        self._now_ms = now_ms
        self.stage_ahead_ms = stage_ahead_ms

    async def push(self, items: Sequence[ReadyItem]) -> None:
        for item in items:
            self._lanes(item.queue).push(item)
        if items:
            self._arrived.set()

    async def put_back(self, items: Sequence[ReadyItem]) -> None:
        for item in reversed(items):  # each to the head: the last first keeps the order
            self._lanes(item.queue).push_head(item)
        if items:
            self._arrived.set()

    async def stage(self, items: Sequence[ReadyItem]) -> None:
        for item in items:
            heap = self._staged.setdefault(item.queue, {}).setdefault(item.priority, [])
            heapq.heappush(heap, (item.due_ms, self._staged_count, item))
            self._staged_count += 1
        if items:
            self._arrived.set()

    def _lanes(self, queue: str) -> _Lanes:
        lanes = self._queues.get(queue)
        if lanes is None:
            self._queues[queue] = lanes = _Lanes()
        return lanes

    def _promote(self, queues: Collection[str], limit: int) -> float | None:
        """Move up to `limit` items per lane of `queues` that are staged and now due to
        their lane; seconds until the next is due (0 or less: some are due already)."""
        now, next_due = self._now_ms(), None
        for name in queues:
            for heap in self._staged.get(name, {}).values():
                moved = 0
                while heap and heap[0][0] <= now and moved < limit:
                    self._lanes(name).push(heapq.heappop(heap)[2])
                    moved += 1
                if heap and (next_due is None or heap[0][0] < next_due):
                    next_due = heap[0][0]
        return None if next_due is None else (next_due - now) / 1000

    async def pull(
        self, queues: Collection[str], *, limit: int, wait_seconds: float
    ) -> list[ReadyItem]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while True:
            staged_in = self._promote(queues, limit)
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
        depth.update({name: _count(lanes) for name, lanes in self._staged.items()})
        return {name: count for name, count in depth.items() if count or name in self._queues}

    async def wiped(self) -> bool:
        return False  # it lives and dies with this process

    async def oldest_release(self, queues: Collection[str]) -> dict[str, int]:
        oldest: dict[str, int] = {}
        for name in queues:
            lanes = self._queues.get(name)
            heads = lanes.lanes.values() if lanes else ()
            stamps = [lane[0].triggered_ms for lane in heads if lane]
            for heap in self._staged.get(name, {}).values():
                stamps.extend(item.triggered_ms for _, _, item in heap)
            if stamps:
                oldest[name] = min(stamps)
        return oldest

    async def fresh_depth(self) -> dict[str, int]:
        return self.depth()

    def failing(self) -> bool:
        return False  # it lives in this process

    async def close(self) -> None:
        """Nothing to release: the queue lives in this process."""


def _count(heaps: dict[int, list[tuple[int, int, ReadyItem]]]) -> int:
    return sum(len(heap) for heap in heaps.values())
