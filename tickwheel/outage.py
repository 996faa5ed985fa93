"""A dependency's spells of failure (the store, the ready queue), as its callers see them,
and a log of them that stays readable while they last.

A dependency that is down fails every request, thousands a second under load, from
every loop of every process. One line per failure (let alone a traceback) buries
everything else. So a spell is logged as a reader wants to follow it: one line when it
starts, a reminder every `remind_seconds` while it lasts (with how many calls failed,
by cause), and one line when the dependency answers again. The loops that met the
failures log nothing of their own (`Periodic` keeps them at debug). Admission and
readiness ask `failing()`.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tickwheel.errors import StoreUnavailable, describe

T = TypeVar("T")

REMIND_SECONDS = 30.0
# A dependency whose last call failed is taken as failing for this long after, unless a
# call goes through meanwhile (then it is back: submissions need not wait for it).
FAILING_SECONDS = 5.0
SETTLE_SECONDS = 1.0


class Outage:
    def __init__(
        self,
        name: str,
        log: logging.Logger,
        *,
        remind_seconds: float = REMIND_SECONDS,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        """`name` says what failed in the log ("the store", "the ready queue")."""
        self.name = name
        self._log = log
        self._remind = remind_seconds
        self._now = now
        self._since: float | None = None  # when the spell began; None: no spell
        self._told = 0.0  # when the spell's last line was logged
        self._last_failure: float | None = None
        self._last_answer = float("-inf")  # when a call last went through
        self._causes: Counter[str] = Counter()  # in the spell
        self.failures = 0  # ever: for tests and metrics

    def failed(self, error: BaseException) -> None:
        now = self._now()
        self.failures += 1
        self._last_failure = now
        self._causes[_cause(error)] += 1
        if self._since is None:
            self._since = self._told = now
            self._log.warning("%s is unavailable: %s", self.name, describe(error))
        elif now - self._told >= self._remind:
            self._told = now
            self._log.warning(
                "%s is still unavailable after %.0f s (%s); last: %s",
                self.name,
                now - self._since,
                _counts(self._causes),
                describe(error),
            )

    def succeeded(self) -> None:
        """A call went through: a spell, if one was on, is over once no call failed for
        `SETTLE_SECONDS` (calls sent before the failure can still succeed after it)."""
        self._last_answer = self._now()
        if self._since is None or self._now() - (self._last_failure or 0) < SETTLE_SECONDS:
            return
        self._log.warning(
            "%s is available again after %.1f s (%s)",
            self.name,
            self._now() - self._since,
            _counts(self._causes),
        )
        self._since = None
        self._causes.clear()

    async def call(
        self,
        call: Awaitable[T],
        *,
        fails_on: tuple[type[BaseException], ...],
        raise_as: type[StoreUnavailable],
    ) -> T:
        """Await a call to the dependency, telling this outage how it went; a failure
        of the kinds `fails_on` is raised as `raise_as` (expected: callers log it at
        debug, this outage tells it)."""
        try:
            answer = await call
        except fails_on as error:
            self.failed(error)
            raise raise_as(f"{self.name} failed: {describe(error)}") from error
        self.succeeded()
        return answer

    def failing(self) -> bool:
        """Whether the last call failed, within the last `FAILING_SECONDS`."""
        last = self._last_failure
        if last is None or last < self._last_answer:
            return False
        return self._now() - last < FAILING_SECONDS


def _cause(error: BaseException) -> str:
    return str(getattr(error, "code", "") or type(error).__name__)


def _counts(causes: Counter[str]) -> str:
    failed = sum(causes.values())
    by_cause = ", ".join(f"{count} {cause}" for cause, count in sorted(causes.items()))
    return f"{failed} {'call' if failed == 1 else 'calls'} failed: {by_cause}"


def log_failure(log: logging.Logger, error: BaseException, message: str, *args: object) -> None:
    """Log a failed call: with its traceback when unexpected; at debug when it is a
    dependency's outage (`StoreUnavailable` and its kinds), which its `Outage` tells."""
    if isinstance(error, StoreUnavailable):
        log.debug(message + " (%s)", *args, describe(error))
    else:
        log.error(message, *args, exc_info=error)
