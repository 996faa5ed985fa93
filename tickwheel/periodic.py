"""The background loop of a node's parts: a step run every interval, or sooner when
woken, timed by the injected clock, its failures logged when they start and when they
end.

The reaper, the loader, the dependency resolver, the reconciler, retention, the leases,
the timekeeper, the worker's heartbeats and reports and the metrics flush are all this
loop. Written once, each is
driven in tests by a `ManualClock` instead of real seconds.

A store that is down fails every step of every loop for as long as it is down: a
traceback a second from each loop would bury the log, and the store's (or the ready
queue's) own `Outage` already tells the outage in a few lines. So expected errors
(`StoreUnavailable` and its kinds) are logged at debug only, and any other spell of
failures is logged twice: when it starts, with its traceback, and when a step succeeds
again, with how many failed. A failure of another kind during the spell is news and is
logged too. A loop that keeps flapping logs at most a line per kind per `LogTally`
interval, with the count of those left out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import NoReturn

from tickwheel.clock import Clock
from tickwheel.errors import StoreUnavailable, describe
from tickwheel.log_tally import LogTally


class Periodic:
    def __init__(
        self,
        doing: str,
        step: Callable[[], Awaitable[object]],
        *,
        clock: Clock,
        every_seconds: float,
        log: logging.Logger,
        wait_first: bool = False,
        quiet: tuple[type[Exception], ...] = (StoreUnavailable,),
    ) -> None:
        """`doing` names the step in the log ("reaping expired leases"); `log` is the
        logger of the loop's owner. With `wait_first` the first step waits one interval.
        Errors of the `quiet` types are logged at debug: they are expected, and told
        elsewhere (the dependency's `Outage`)."""
        self._doing = doing
        self._step = step
        self._clock = clock
        self._every = every_seconds
        self._wait_first = wait_first
        self._quiet = quiet
        self._tally = LogTally(log, clock=lambda: clock.now_ms() / 1000)
        self._woken = asyncio.Event()
        self._failures = 0  # in the current spell
        self._failing_since = 0  # ms, by the clock
        self._last_error: type[Exception] | None = None
        self._told = False  # a failure of the spell was logged: so is its end
        self._log = log

    def wake(self) -> None:
        """Run the step now rather than at the end of the interval; if it is running,
        once more as soon as it ends."""
        self._woken.set()

    async def run(self) -> NoReturn:
        """Step, wait, step again, until cancelled (the node stopping)."""
        if self._wait_first:
            await self._pause()
        while True:
            await self.step()
            await self._pause()

    async def step(self) -> bool:
        """Run the step once, logging a failure as the loop does; True if it succeeded."""
        try:
            await self._step()
        except Exception as error:
            self._failed(error)
            return False
        self._succeeded()
        return True

    async def _pause(self) -> None:
        """One interval of the clock, or less if woken (a wake meanwhile counts)."""
        if not self._woken.is_set():
            sleep = asyncio.ensure_future(self._clock.sleep(self._every))
            woken = asyncio.ensure_future(self._woken.wait())
            try:
                await asyncio.wait((sleep, woken), return_when=asyncio.FIRST_COMPLETED)
            finally:  # cancelled (the node stopping) or not, neither outlives the pause
                sleep.cancel()
                woken.cancel()
                await asyncio.gather(sleep, woken, return_exceptions=True)
        self._woken.clear()

    def _failed(self, error: Exception) -> None:
        now_ms = self._clock.now_ms()
        if not self._failures:
            self._failing_since = now_ms
        self._failures += 1
        if isinstance(error, self._quiet):
            self._log.debug("%s failed (%s)", self._doing, describe(error))
            return
        self._told = True
        if type(error) is self._last_error:
            return  # the spell goes on: its end tells how long
        self._last_error = type(error)
        self._tally.log(
            logging.ERROR,
            f"failed: {type(error).__name__}",
            "%s failed (%s); trying again every %g s",
            self._doing,
            describe(error),
            self._every,
            exc_info=error,
        )

    def _succeeded(self) -> None:
        if not self._failures:
            return
        if self._told:
            self._tally.log(
                logging.WARNING,
                "works again",
                "%s works again (failures: %d in %.0f s)",
                self._doing,
                self._failures,
                (self._clock.now_ms() - self._failing_since) / 1000,
            )
        self._failures = 0
        self._last_error = None
        self._told = False
