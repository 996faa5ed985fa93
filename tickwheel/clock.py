"""Time, injected: the engine reads a `Clock`, tests drive a `ManualClock`."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The wall clock. Trigger times are wall-clock instants, so monotonic time won't do."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


@dataclass(frozen=True, slots=True)
class Reading:
    """One comparison of this process's clocks with the store's."""

    skew_ms: int  # this host's wall clock minus the cluster's: positive when ahead
    uncertainty_ms: int  # half the round trip of the reading


class ClusterClock:
    """The one clock of a cluster: the store's, carried between readings by this
    process's monotonic clock.

    A node's wall clock may be off, or be stepped (NTP, a resumed VM, an operator's
    `date`). Were triggers, staging and lease expiry to follow it, a node ahead would fire
    early and expire leases that still hold, and one behind would hold its tasks late.
    The monotonic clock is never stepped, so between readings the cluster's time moves
    as real time does, and a reading of the store's clock every few seconds bounds the
    drift. Until the first reading it is this host's wall clock."""

    def __init__(
        self,
        *,
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self._monotonic_ns = monotonic_ns
        self._wall_ns = wall_ns
        self._offset_ns = wall_ns() - monotonic_ns()  # cluster time minus monotonic time
        self._last_ms = 0

    def now_ms(self) -> int:
        # Never backwards: a later reading may lower the offset by a fraction of a round
        # trip, and a lease or a trigger must not see time undone.
        self._last_ms = max(self._last_ms, (self._monotonic_ns() + self._offset_ns) // 1_000_000)
        return self._last_ms

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    async def read(
        self, store_now_ms: Callable[[], Awaitable[int]], *, samples: int = 3
    ) -> Reading:
        """Sets the offset from the store's clock: of `samples` readings, the one with the
        shortest round trip, taken to be read half way through it."""
        best: tuple[int, int] | None = None  # (round trip, offset), in ns
        for _ in range(samples):
            sent = self._monotonic_ns()
            store_ms = await store_now_ms()
            came = self._monotonic_ns()
            # The store reports whole milliseconds: its time is half of one later, on average.
            offset = store_ms * 1_000_000 + 500_000 - (sent + came) // 2
            if best is None or came - sent < best[0]:
                best = (came - sent, offset)
        assert best is not None, "samples must be at least 1"
        self._offset_ns = best[1]
        return Reading(self.skew_ms(), best[0] // 2_000_000)

    def skew_ms(self) -> int:
        """How far this host's wall clock is ahead of the cluster's (negative: behind)."""
        return (self._wall_ns() - self._monotonic_ns() - self._offset_ns) // 1_000_000


class ManualClock:
    """A clock that moves only when told to. A `sleep` ends once the clock has been
    moved past its end (a sleep of nothing yields once), so a test drives background
    loops by moving the clock, without waiting."""

    def __init__(self, now_ms: int = 0) -> None:
        self._now_ms = now_ms
        self._sleepers: list[tuple[int, int, asyncio.Future[None]]] = []  # a heap by end
        self._order = itertools.count()

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, seconds: float) -> None:
        self._now_ms += round(seconds * 1000)
        while self._sleepers and self._sleepers[0][0] <= self._now_ms:
            woken = heapq.heappop(self._sleepers)[2]
            if not woken.done():  # a cancelled sleep is done already
                woken.set_result(None)

    async def sleep(self, seconds: float) -> None:
        end = self._now_ms + round(seconds * 1000)
        if end <= self._now_ms:
            await asyncio.sleep(0)
            return
        woken = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (end, next(self._order), woken))
        await woken

    def sleeping(self) -> int:
        """How many sleeps wait for the clock to move."""
        return sum(not woken.done() for _, _, woken in self._sleepers)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_datetime(ms: int | None) -> datetime | None:
    # Integer arithmetic: a float of seconds loses microseconds beyond the year 2242.
    return None if ms is None else _EPOCH + timedelta(milliseconds=ms)


def to_ms(moment: datetime) -> int:
    """Milliseconds since the epoch, rounded up so that a due time is never early."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime: give a time zone or an offset")
    micros = (moment - _EPOCH) // timedelta(microseconds=1)
    return -(-micros // 1000)
