"""Admission control: refuse new work while the ready queue cannot drain in time.

Seed 002 "Backpressure": when the backlog of due tasks would take longer than a set time
to drain at the rate workers are finishing tasks (or simply exceeds a depth), new
submissions are refused with a hint of when to retry, so an overwhelmed system sheds
load at its door instead of falling over. Reads are never refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from tickwheel.clock import Clock
from tickwheel.errors import Overloaded

# The drain rate is a moving average over about this many seconds.
RATE_WINDOW_SECONDS = 10.0
MAX_RETRY_AFTER_SECONDS = 60


@dataclass(frozen=True, slots=True)
class AdmissionState:
    depth: dict[str, int]
    backlog: int
    drain_per_second: float
    seconds_to_drain: float | None
    open: bool


class Admission:
    def __init__(
        self,
        *,
        clock: Clock,
        depth: Callable[[], dict[str, int]],
        ended: Callable[[], int],
        max_depth: int,
        max_drain_seconds: float,
    ) -> None:
        self._clock = clock
        self._depth = depth
        self._ended = ended
        self.max_depth = max_depth
        self.max_drain_seconds = max_drain_seconds
        self._rate = 0.0
        self._last = (clock.now_ms(), ended())

    def state(self) -> AdmissionState:
        depth = self._depth()
        backlog = sum(depth.values())
        rate = self._drain_rate()
        to_drain = backlog / rate if rate > 0 else (None if backlog else 0.0)
        too_slow = backlog > 0 and (to_drain is None or to_drain > self.max_drain_seconds)
        # With no completions yet there is no rate to judge by: only the depth counts.
        judged_by_rate = rate > 0 and too_slow
        open_ = backlog <= self.max_depth and not judged_by_rate
        return AdmissionState(depth, backlog, round(rate, 1), to_drain, open_)

    def check(self) -> None:
        """Raise `Overloaded` with a retry hint when new submissions must wait."""
        state = self.state()
        if state.open:
            return
        excess = state.backlog - self.max_depth
        if state.drain_per_second > 0:
            wait = max(
                excess / state.drain_per_second,
                (state.seconds_to_drain or 0) - self.max_drain_seconds,
            )
        else:
            wait = MAX_RETRY_AFTER_SECONDS
        retry_after = max(1, min(MAX_RETRY_AFTER_SECONDS, math.ceil(wait)))
        raise Overloaded(
            retry_after,
            f"{state.backlog} due tasks are waiting for workers; retry in {retry_after} s",
        )

    def _drain_rate(self) -> float:
        now, ended = self._clock.now_ms(), self._ended()
        last_ms, last_ended = self._last
        elapsed = (now - last_ms) / 1000
        if elapsed >= 0.5:
            instant = (ended - last_ended) / elapsed
            weight = min(1.0, elapsed / RATE_WINDOW_SECONDS)
            self._rate += (instant - self._rate) * weight
            self._last = (now, ended)
        return self._rate
