"""The last 15 minutes, second by second: what the dashboard reads, from merged counts.

Pure: takes the counts of each second (however a backend gathered them) and the time,
returns the per-second series of every event and the lateness percentiles of the last
minute.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from tickwheel.metrics.buckets import percentile
from tickwheel.metrics.recorder import FIELDS, Event, Lateness

WINDOW_SECONDS = 900
LATENESS_SECONDS = 60

Seconds = Mapping[int, Mapping[str, int]]  # second since the epoch -> field -> count


def window_range(now_ms: int, seconds: int = WINDOW_SECONDS) -> range:
    """The seconds of the window ending with the current one (included)."""
    now = now_ms // 1000
    return range(now - seconds + 1, now + 1)


@dataclass(frozen=True, slots=True)
class Series:
    start_ms: int
    counts: dict[Event, list[int]]  # one count per second, oldest first


@dataclass(frozen=True, slots=True)
class Percentiles:
    p50: float | None
    p99: float | None
    samples: int


def series(seconds: Seconds, now_ms: int) -> Series:
    span = window_range(now_ms)
    empty: Mapping[str, int] = {}
    rows = [seconds.get(s, empty) for s in span]
    return Series(
        start_ms=span.start * 1000,
        counts={event: [row.get(event, 0) for row in rows] for event in Event},
    )


def lateness(seconds: Seconds, now_ms: int, kind: Lateness) -> Percentiles:
    """p50 and p99 of one kind of lateness (ms) over the last minute."""
    counts: Counter[int] = Counter()
    names = FIELDS[kind]
    for s in window_range(now_ms, LATENESS_SECONDS):
        row = seconds.get(s)
        if row:
            for bucket, name in enumerate(names):
                n = row.get(name)
                if n:
                    counts[bucket] += n
    return Percentiles(percentile(counts, 0.5), percentile(counts, 0.99), counts.total())


ENDS = (Event.SUCCEEDED, Event.FAILED, Event.RETRIED)  # every end of an attempt
# Counts of a second keep growing while nodes flush into it (each flushes once a
# second); this is ample for that, and for nodes whose clocks disagree a little.
TALLY_SECONDS = 60


class EndedTally:
    """A running total of attempts ended, by every node whose counts were merged:
    what admission control divides by time. Each read adds what the recent seconds
    gained since the last one, so counts flushed late are counted when they arrive."""

    def __init__(self) -> None:
        self.total = 0
        self._counted: dict[int, int] = {}  # second -> its ends already in the total

    def update(self, seconds: Seconds, now_ms: int) -> int:
        oldest = now_ms // 1000 - TALLY_SECONDS
        counted: dict[int, int] = {}
        for second, row in seconds.items():
            if second >= oldest:
                ends = sum(row.get(event, 0) for event in ENDS)
                self.total += ends - self._counted.get(second, 0)
                counted[second] = ends
        self._counted = counted
        return self.total
