"""The hot path of the metrics: counts kept in memory per second, taken by a backend.

Engine parts call the recorder once per batch (a release, a claim, a group commit of
ends); it adds to a counter for the current second by the engine's clock, plus
lifetime totals that Prometheus reads. Nothing here does I/O: the backend takes the
seconds counted so far (`take`) and keeps or ships them.

One second's counts are a flat map of field -> count: an event's name
("triggered", ...) or "<lateness>:<bucket>" ("trigger:17"), the layout of the Redis
hash too, so counts from many nodes merge by adding field by field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from enum import StrEnum

from tickwheel.clock import Clock
from tickwheel.metrics.buckets import BUCKETS, bucket_of
from tickwheel.models import ClaimedTask, Finish, Status
from tickwheel.queue.base import ReadyItem

Second = Counter[str]  # field -> count within one second


class Event(StrEnum):
    TRIGGERED = "triggered"  # released to the ready queue (staged ones included)
    STARTED = "started"  # claimed by a worker
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # for good: no retry left
    RETRIED = "retried"  # failed, pending again after its backoff
    EXPIRED = "expired"  # not started by its expiry: ended without running


class Lateness(StrEnum):
    TRIGGER = "trigger"  # release stamp minus due time
    START = "start"  # claim time minus due time


# Field names made once, not per task.
FIELDS = {kind: [f"{kind}:{b}" for b in range(BUCKETS)] for kind in Lateness}
_ENDED_AS = {
    Status.SUCCEEDED: Event.SUCCEEDED,
    Status.FAILED: Event.FAILED,
    Status.EXPIRED: Event.EXPIRED,
}


class Lifetime:
    """Totals since this process started: what Prometheus exposes."""

    def __init__(self) -> None:
        self.events: Counter[Event] = Counter()
        self.lateness = {kind: [0] * BUCKETS for kind in Lateness}
        self.lateness_sum_ms = dict.fromkeys(Lateness, 0)
        self.run_time = [0] * BUCKETS
        self.run_time_sum_ms = 0
        self.leases_gained = 0
        self.leases_lost = 0


class Recorder:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._seconds: dict[int, Second] = {}
        self.lifetime = Lifetime()

    def _now(self) -> Second:
        second = self._clock.now_ms() // 1000
        counts = self._seconds.get(second)
        if counts is None:
            counts = self._seconds[second] = Counter()
        return counts

    # -- what the engine reports ----------------------------------------------

    def count(self, event: Event, n: int = 1) -> None:
        if n:
            self._now()[event] += n
            self.lifetime.events[event] += n

    def late(self, kind: Lateness, lateness_ms: Iterable[int]) -> None:
        counts, names = self._now(), FIELDS[kind]
        totals = self.lifetime.lateness[kind]
        total_ms = 0
        for ms in lateness_ms:
            bucket = bucket_of(ms)
            counts[names[bucket]] += 1
            totals[bucket] += 1
            total_ms += max(ms, 0)
        self.lifetime.lateness_sum_ms[kind] += total_ms

    def released(self, items: Sequence[ReadyItem]) -> None:
        """Tasks handed to the ready queue, stamped with their release time."""
        self.count(Event.TRIGGERED, len(items))
        self.late(Lateness.TRIGGER, [i.triggered_ms - i.due_ms for i in items])

    def started(self, claimed: Sequence[ClaimedTask], now_ms: int) -> None:
        self.count(Event.STARTED, len(claimed))
        self.late(Lateness.START, [now_ms - t.due_ms for t in claimed])

    def ended(self, ends: Sequence[Finish], written: Sequence[bool]) -> None:
        """Ends of attempts as committed: those refused (stale fences) changed nothing."""
        events: Counter[Event] = Counter()
        run_time, total_ms = self.lifetime.run_time, 0
        for end, ok in zip(ends, written, strict=True):
            if not ok:
                continue
            events[_ENDED_AS.get(end.status, Event.RETRIED)] += 1
            if end.started_ms is not None:
                ms = end.ended_ms - end.started_ms
                run_time[bucket_of(ms)] += 1
                total_ms += max(ms, 0)
        self.lifetime.run_time_sum_ms += total_ms
        for event, n in events.items():
            self.count(event, n)

    def leases_changed(self, *, gained: int = 0, lost: int = 0) -> None:
        self.lifetime.leases_gained += gained
        self.lifetime.leases_lost += lost

    # -- what a backend takes -------------------------------------------------

    def take(self) -> dict[int, Second]:
        """The seconds counted since the last take (second -> counts), handed over."""
        taken, self._seconds = self._seconds, {}
        return taken

    def give_back(self, seconds: dict[int, Second]) -> None:
        """Counts a backend could not ship: kept for its next try."""
        for second, counts in seconds.items():
            self._seconds.setdefault(second, Counter()).update(counts)
