"""Keeping a node on the cluster's clock: the store's clock read every few seconds,
and a loud warning while this host's own clock disagrees with it."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from tickwheel.clock import ClusterClock, Reading
from tickwheel.periodic import Periodic

log = logging.getLogger(__name__)

READ_EVERY_SECONDS = 5.0
# Beyond this the host's clock is wrong, not merely imprecise: its operator should know.
SKEW_WARNING_MS = 1_000
WARN_EVERY_SECONDS = 60.0


class Timekeeper:
    def __init__(self, clock: ClusterClock, store_now_ms: Callable[[], Awaitable[int]]) -> None:
        self._clock = clock
        self._store_now_ms = store_now_ms
        self._skewed = False
        self._warned_at = -WARN_EVERY_SECONDS
        # Between readings, and while the store is away, time is kept from the last offset.
        self._loop = Periodic(
            "reading the store's clock",
            self.read,
            clock=clock,
            every_seconds=READ_EVERY_SECONDS,
            log=log,
            wait_first=True,
            quiet=(Exception,),  # the store is away: its health log tells why
        )

    async def read(self) -> Reading:
        reading = await self._clock.read(self._store_now_ms)
        self._judge(reading)
        return reading

    async def run(self) -> None:
        await self._loop.run()

    def _judge(self, reading: Reading) -> None:
        skewed = abs(reading.skew_ms) > SKEW_WARNING_MS + reading.uncertainty_ms
        now = time.monotonic()
        if skewed and now - self._warned_at >= WARN_EVERY_SECONDS:
            self._warned_at = now
            log.warning(
                "this host's clock is %.1f s %s the store's: Tickwheel keeps time by the"
                " store's clock, but this host's needs fixing (is NTP running?)",
                abs(reading.skew_ms) / 1000,
                "ahead of" if reading.skew_ms > 0 else "behind",
            )
        elif self._skewed and not skewed:
            log.warning("this host's clock agrees with the store's again")
        self._skewed = skewed
