"""Time, injected: the engine reads a `Clock`, tests drive a `ManualClock`."""

from __future__ import annotations

import asyncio
import time
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


class ManualClock:
    """A clock that moves only when told to; `sleep` yields without waiting."""

    def __init__(self, now_ms: int = 0) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, seconds: float) -> None:
        self._now_ms += round(seconds * 1000)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)


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
