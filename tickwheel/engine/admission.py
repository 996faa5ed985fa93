"""Admission control: refuse new work while the ready queue cannot drain in time.

Seed 002 "Backpressure": when the backlog of due tasks would take longer than a set time
to drain at the rate workers are finishing tasks (or simply exceeds a depth), new
submissions are refused with a hint of when to retry, so an overwhelmed system sheds
load at its door instead of falling over. Reads are never refused.

The drain rate is what the workers can do, so it is measured only over time in which
work was waiting for them: attempts ended divided by that time. A spell with an empty
queue says nothing of their capacity, so it neither counts nor decays the rate; a
server that has not been busy yet has no rate and is judged by the depth alone. The
ends are the cluster's (every worker's, see `EndedTally`), so each API node judges
the whole pool, not its own share of it. In one process (`tickwheel up`), spells in
which the API itself admitted work are measured apart (see `DrainRate`).

A backlog that waits on a failing store (workers cannot record their ends, nothing can
be claimed) says nothing of the workers either: while the store fails, time neither
counts toward the rate nor may the backlog refuse a submission. The submission goes to
the store and is answered with what the store did (a `503` naming the cause, if it
still fails), never with a `429` that blames the workers.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from tickwheel.clock import Clock
from tickwheel.errors import Overloaded, QueueUnavailable

# How often a node feeds the rate: the depth and the ends are read that often, never
# once per request.
SAMPLE_SECONDS = 0.5
# The rate is measured over windows of this much time in which work waited...
WINDOW_MS = 2_000
# ...and the best window of the last this-much of such time stands for the capacity:
# the pool could do that, and a moment of contention does not make it look slow.
RECENT_MS = 60_000
MAX_RETRY_AFTER_SECONDS = 60


class DrainRate:
    """Attempts ended per second while work waited for the workers. Pure: the caller
    reads the time, the running total of ends and the depth, and says so.

    A span is `contended` when the workers share their process with an API that
    admitted work meanwhile: the submissions themselves took the event loop from the
    workers (a flood of batches into `tickwheel up` drains ~350 tasks/s, and ~6,000/s
    the moment it stops). Such spans say little of capacity: they are measured apart
    and judged by only after a whole recent period of nothing else."""

    def __init__(self) -> None:
        self._last: tuple[int, int, bool] | None = None  # now_ms, ended, work waited
        self._clear = _Track()
        self._contended = _Track()
        self._contended_ms = 0  # busy time contended since the last clear span

    def observe(self, now_ms: int, ended: int, waiting: int, *, contended: bool = False) -> None:
        """At `now_ms`, `ended` attempts had ended so far and `waiting` tasks waited;
        `contended`: the API of this process admitted work since the last call."""
        last, self._last = self._last, (now_ms, ended, waiting > 0)
        if last is None:
            return
        then_ms, ended_then, waited = last
        span_ms = now_ms - then_ms
        if span_ms <= 0 or not (waited and waiting > 0):
            return  # idle at one end (or time went back): nothing learned about capacity
        track = self._contended if contended else self._clear
        track.add(span_ms, max(0, ended - ended_then))
        self._contended_ms = self._contended_ms + span_ms if contended else 0

    def skip(self, now_ms: int, ended: int) -> None:
        """At `now_ms`, `ended` attempts had ended, in a span that says nothing of the
        workers (the store was failing): it does not count, and the next starts here."""
        self._last = (now_ms, ended, False)

    def per_second(self) -> float | None:
        """What the pool can drain; None while there is nothing to judge by yet."""
        track = self._judged()
        return None if track is None else track.best()

    def steady(self) -> float | None:
        """What the pool drained on average over its recent busy time: for how long a
        backlog takes to go down (never more than `per_second`)."""
        track = self._judged()
        return None if track is None else track.steady()

    def _judged(self) -> _Track | None:
        if self._contended_ms >= RECENT_MS and self._contended.known():
            return self._contended
        return self._clear if self._clear.known() else None


class _Track:
    """Spans of busy time and the windows they make."""

    def __init__(self) -> None:
        self.busy_ms = 0  # time in which work waited, ever: the clock of what follows
        self._spans: deque[tuple[int, int]] = deque()  # (ms, ends) of the recent busy time
        self._recent = (0, 0)  # sums of the spans: ms, ends
        self._best: deque[tuple[int, float]] = deque()  # (busy ms, window rate), decreasing
        self._ended = False

    def add(self, span_ms: int, ends: int) -> None:
        self.busy_ms += span_ms
        self._ended |= ends > 0
        spans = self._spans
        spans.append((span_ms, ends))
        ms, total = self._recent[0] + span_ms, self._recent[1] + ends
        while ms - spans[0][0] >= RECENT_MS:
            old_ms, old_ends = spans.popleft()
            ms, total = ms - old_ms, total - old_ends
        self._recent = (ms, total)
        window = self._window_rate()
        if window is not None:
            self._remember(window)

    def known(self) -> bool:
        """A window was measured and some task ended while work waited (or work waited
        a whole recent period for nothing: a stuck pool drains 0)."""
        return bool(self._best) and (self._ended or self.busy_ms >= RECENT_MS)

    def best(self) -> float:
        return self._best[0][1]

    def steady(self) -> float:
        ms, ends = self._recent
        return min(self.best(), ends * 1000 / ms)

    def _window_rate(self) -> float | None:
        """Ends per second over the last `WINDOW_MS` (or a little more) of busy time."""
        ms = ends = 0
        for span_ms, span_ends in reversed(self._spans):
            ms, ends = ms + span_ms, ends + span_ends
            if ms >= WINDOW_MS:
                return ends * 1000 / ms
        return None

    def _remember(self, rate: float) -> None:
        best, now = self._best, self.busy_ms
        while best and best[-1][1] <= rate:
            best.pop()
        best.append((now, rate))
        while best[0][0] < now - RECENT_MS:
            best.popleft()


@dataclass(frozen=True, slots=True)
class AdmissionState:
    depth: dict[str, int]
    backlog: int
    drain_per_second: float  # 0.0 until measured
    seconds_to_drain: float | None  # None: not known
    open: bool


class Admission:
    def __init__(
        self,
        *,
        clock: Clock,
        depth: Callable[[], dict[str, int]],
        max_depth: int,
        max_drain_seconds: float,
        store_failing: Callable[[], bool] = lambda: False,
        queue_failing: Callable[[], bool] = lambda: False,
    ) -> None:
        """`store_failing`, `queue_failing`: whether the store or the ready queue failed
        a moment ago. A backlog that waits on them says nothing of the workers."""
        self._clock = clock
        self._depth = depth
        self._store_failing = store_failing
        self._queue_failing = queue_failing
        self.max_depth = max_depth
        self.max_drain_seconds = max_drain_seconds
        self.rate = DrainRate()
        self.admitted = 0  # submissions let in: whether the API was busy meanwhile

    def observe(self, ended: int, depth: dict[str, int], *, contended: bool = False) -> None:
        """Feed the rate: the running total of attempts ended cluster-wide, the depth
        read with it, and whether this process's API took the workers' time meanwhile."""
        if self._store_failing() or self._queue_failing():
            self.rate.skip(self._clock.now_ms(), ended)
            return
        self.rate.observe(self._clock.now_ms(), ended, sum(depth.values()), contended=contended)

    def state(self) -> AdmissionState:
        depth = self._depth()
        backlog = sum(depth.values())
        rate = self.rate.per_second()
        if rate:
            to_drain: float | None = backlog / rate
        else:
            to_drain = None if backlog else 0.0
        return AdmissionState(
            depth, backlog, round(rate or 0.0, 1), to_drain, backlog <= self._allowed(rate)
        )

    def check(self) -> None:
        """Raise `Overloaded` with a retry hint when new submissions must wait, and
        `QueueUnavailable` while the ready queue is down: nothing could be handed on."""
        if self._queue_failing():
            raise QueueUnavailable("the ready queue is unavailable: no task can be handed on")
        state = self.state()
        if state.open or self._store_failing():
            self.admitted += 1
            return
        # Long enough for the backlog to drain, at the pace it has been draining, to what
        # would be admitted.
        rate, pace = self.rate.per_second(), self.rate.steady()
        excess = state.backlog - self._allowed(rate)
        wait = excess / pace if pace else MAX_RETRY_AFTER_SECONDS
        retry_after = max(1, min(MAX_RETRY_AFTER_SECONDS, math.ceil(wait)))
        raise Overloaded(
            retry_after,
            f"{state.backlog} due tasks are waiting for workers; retry in {retry_after} s",
        )

    def _allowed(self, rate: float | None) -> float:
        """The largest backlog admitted: the depth limit, and what drains in time."""
        if rate is None:
            return self.max_depth
        return min(self.max_depth, rate * self.max_drain_seconds)
