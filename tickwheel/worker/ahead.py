"""How many tasks a worker claims ahead of its free slots.

Claiming ahead hides the round trips of pulling and claiming behind running: while one
batch runs, the next is on its way. It costs what Celery's prefetch costs its users
when tasks are long: claimed tasks wait behind running handlers while another worker
may be idle, and their leases tick meanwhile. So the worker claims ahead only what it
will start within about two fetches' time at its recent start rate (Little's law):
short tasks on a far store keep a full pipeline, long tasks are claimed as slots free.

The rate rises at once and falls gradually: a burst after a quiet spell (20,000 tasks
due at one instant) is claimed ahead from its first tenth of a second, where a rate
smoothed both ways from near zero took most of a second to catch up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

WINDOW_SECONDS = 0.1  # starts are counted over windows this long
FETCHES_AHEAD = 2  # claim what will start within this many fetches' time
SMOOTHING = 0.5  # weight of the newest window (when slower) and fetch in the averages
LEASE_SHARE = 0.25  # claimed ahead: what starts within this share of a lease


class ClaimAhead:
    def __init__(
        self,
        most: int,
        now: Callable[[], float] = time.monotonic,
        *,
        lease_seconds: float | None = None,
    ) -> None:
        """`most`: the most claimed ahead at once (0: never ahead of a free slot).
        `lease_seconds`: a claimed task must start well within its lease: no more is
        claimed ahead than starts within a quarter of it."""
        self.most = most
        self._lease_seconds = lease_seconds
        self._now = now
        self._window_start = now()
        self._starts = 0  # in the current window
        self._rate = 0.0  # starts a second, smoothed over windows
        self._fetch_seconds = 0.0  # a fetch's duration while the queue had depth

    def started(self, count: int = 1) -> None:
        self._starts += count
        self._roll()

    def fetched(self, seconds: float) -> None:
        """A fetch that found the queue deep took `seconds` from pull to claim (one that
        waited on an empty queue says nothing about the round trips)."""
        self._fetch_seconds = _smooth(self._fetch_seconds, seconds)

    def amount(self) -> int:
        self._roll()
        wanted = math.ceil(self._rate * self._fetch_seconds * FETCHES_AHEAD)
        if self._lease_seconds is not None:
            wanted = min(wanted, round(self._rate * self._lease_seconds * LEASE_SHARE))
        return min(self.most, wanted)

    def _roll(self) -> None:
        now = self._now()
        elapsed = now - self._window_start
        if elapsed < WINDOW_SECONDS:
            return
        # A stretch of several windows (an idle worker rolls only when asked) counts
        # as one: its starts over its whole length.
        sample = self._starts / elapsed
        self._rate = max(sample, _smooth(self._rate, sample))
        self._starts = 0
        self._window_start = now


def _smooth(average: float, sample: float) -> float:
    return sample if average == 0 else average + SMOOTHING * (sample - average)
