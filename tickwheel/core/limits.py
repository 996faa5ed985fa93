"""Rate and concurrency limits, and which tasks they admit (pure rules).

A limit applies to the tasks of one task type, one queue or one limit key, across the
whole cluster. Its rate: at most `count` starts in any window of `period`; its
concurrency: at most `concurrency` running at once. Both are judged where a task is
claimed, in the claim's transaction, so no coordinator is needed.

The rate is a sliding window over the limit's recent claims, kept with the limit as
(claimed at, how many) pairs. A window is the period plus a twentieth of it (at most
100 ms): a task starts a moment after its claim, and that moment varies, so counting
claims over a slightly longer window keeps the starts, as a handler sees them, within
the limit. A token bucket would let twice the count start within one period (a full
bucket, then its refill); the window never does.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

MAX_COUNT = 1_000_000  # starts per period, or tasks running at once
MAX_PERIOD_MS = 86_400_000  # a day
MAX_NAME_CHARS = 200
# Pairs kept per window: beyond it the oldest two merge into the later one's time,
# which only holds a start back longer (never lets one through early).
MAX_WINDOW_ENTRIES = 256

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*(ms|s|m|h|d)\s*$")


class InvalidLimit(ValueError):
    """A limit that cannot be: the message says why, `field` names what is at fault."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class Scope(StrEnum):
    TASK_TYPE = "task_type"
    QUEUE = "queue"
    KEY = "key"


@dataclass(frozen=True, slots=True)
class Rate:
    count: int
    period_ms: int

    @classmethod
    def parse(cls, text: str) -> Rate:
        """ "100/s", "10/m", "5/h", "1000/d", "20/10s", "1/500ms"."""
        found = _RATE.match(text)
        if found is None:
            raise InvalidLimit(
                f"rate {text!r} is not COUNT/PERIOD, such as 100/s, 10/m or 20/10s",
                field="rate",
            )
        count, times, unit = found.groups()
        rate = cls(int(count), int(times or 1) * _UNITS_MS[unit])
        rate.check()
        return rate

    def check(self) -> None:
        if not 1 <= self.count <= MAX_COUNT:
            raise InvalidLimit(f"a rate's count must be 1 to {MAX_COUNT:,}", field="rate")
        if not 1 <= self.period_ms <= MAX_PERIOD_MS:
            raise InvalidLimit("a rate's period must be 1 ms to a day", field="rate")

    @property
    def window_ms(self) -> int:
        """The period, and the guard that keeps starts (not only claims) within it."""
        return self.period_ms + min(self.period_ms // 20, 100)

    def __str__(self) -> str:
        for unit in ("d", "h", "m", "s", "ms"):
            times, rest = divmod(self.period_ms, _UNITS_MS[unit])
            if not rest:
                return f"{self.count}/{'' if times == 1 else times}{unit}"
        raise AssertionError("every period is a whole number of ms")


def limit_id(scope: Scope | str, name: str) -> str:
    return f"{scope}:{name}"


@dataclass(frozen=True, slots=True)
class Limit:
    scope: Scope
    name: str
    rate: Rate | None = None
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= len(self.name) <= MAX_NAME_CHARS:
            raise InvalidLimit(
                f"a limit's name must be 1 to {MAX_NAME_CHARS} characters", field="name"
            )
        if self.rate is None and self.concurrency is None:
            raise InvalidLimit("a limit needs a rate, a concurrency or both", field="rate")
        if self.rate is not None:
            self.rate.check()
        if self.concurrency is not None and not 1 <= self.concurrency <= MAX_COUNT:
            raise InvalidLimit(f"concurrency must be 1 to {MAX_COUNT:,}", field="concurrency")

    @property
    def id(self) -> str:
        return limit_id(self.scope, self.name)


def ids_of(task_type: str, queue: str, limit_key: str | None) -> list[str]:
    """The ids of the limits that would apply to a task, whether declared or not."""
    ids = [limit_id(Scope.TASK_TYPE, task_type), limit_id(Scope.QUEUE, queue)]
    if limit_key is not None:
        ids.append(limit_id(Scope.KEY, limit_key))
    return ids


@dataclass(frozen=True, slots=True)
class Window:
    """A rate limit's recent claims: (claimed at ms, how many), oldest first."""

    entries: tuple[tuple[int, int], ...] = ()

    @classmethod
    def decode(cls, text: str | None) -> Window:
        return cls(tuple((int(at), int(n)) for at, n in json.loads(text or "[]")))

    def encode(self) -> str:
        return json.dumps([list(e) for e in self.entries], separators=(",", ":"))

    def used(self, now_ms: int, rate: Rate) -> int:
        since = now_ms - rate.window_ms
        return sum(n for at, n in self.entries if at > since)

    def room(self, now_ms: int, rate: Rate) -> int:
        """How many may start at `now_ms`."""
        return max(0, rate.count - self.used(now_ms, rate))

    def next_free(self, now_ms: int, rate: Rate, wanted: int = 1) -> int:
        """The earliest time at or after `now_ms` at which `wanted` more may start (of
        the starts recorded; later ones push it further)."""
        wanted = min(wanted, rate.count)
        live = [(at, n) for at, n in self.entries if at > now_ms - rate.window_ms]
        over = sum(n for _, n in live) + wanted - rate.count
        for at, n in live:  # each pair leaves the window `window_ms` after its claim
            if over <= 0:
                break
            over -= n
            now_ms = max(now_ms, at + rate.window_ms)
        return now_ms

    def spend(self, now_ms: int, rate: Rate, count: int) -> Window:
        """Record `count` claimed at `now_ms`, forgetting what has left the window."""
        since = now_ms - rate.window_ms
        entries = [(at, n) for at, n in self.entries if at > since]
        if count:
            if entries and entries[-1][0] >= now_ms:  # a clock that went back: keep order
                at, n = entries.pop()
                entries.append((at, n + count))
            else:
                entries.append((now_ms, count))
        while len(entries) > MAX_WINDOW_ENTRIES:
            (_, first), (at, second) = entries[0], entries[1]
            entries[:2] = [(at, first + second)]
        return Window(tuple(entries))


@dataclass(frozen=True, slots=True)
class LimitState:
    """A limit as its claim reads it: its rule, its recent claims and its use."""

    limit: Limit
    window: Window = Window()
    running: int = 0  # tasks of the limit running (or cancelled, their lease not ended)
    held_head: tuple[int, int, int] | None = None  # the first task it holds (see `order`)
    # When the first slot a cancelled task keeps comes back (its lease's end).
    slot_back_at: int | None = None


class Candidate(NamedTuple):
    seq: int
    priority: int
    due_ms: int
    limit_ids: Sequence[str]


def order(priority: int, due_ms: int, seq: int) -> tuple[int, int, int]:
    """The order in which held tasks go: highest priority, then earliest due."""
    return (-priority, due_ms, seq)


@dataclass
class Admission:
    admitted: list[int] = field(default_factory=list)
    held: dict[int, str] = field(default_factory=dict)  # seq -> the limit holding it
    deferred: list[int] = field(default_factory=list)  # admissible, but no slot to start now
    taken: Counter[str] = field(default_factory=Counter)  # admitted per limit id


def admit(
    candidates: Iterable[Candidate],
    states: Mapping[str, LimitState],
    now_ms: int,
    *,
    start_now: int | None = None,
) -> Admission:
    """Which of `candidates` may start now, in priority and due order: each within every
    limit that applies to it (and behind the tasks a limit already holds, which go
    first), at most `start_now` of them (the claimer's free slots; None: no bound).
    The others are held by the first limit they do not fit."""
    result = Admission()
    rooms = {lid: s.window.room(now_ms, s.limit.rate) for lid, s in states.items() if s.limit.rate}
    for c in sorted(candidates, key=lambda c: order(c.priority, c.due_ms, c.seq)):
        applicable = [lid for lid in c.limit_ids if lid in states]
        blocking = next(
            (lid for lid in applicable if not _fits(c, states[lid], rooms, result.taken)), None
        )
        if blocking is not None:
            result.held[c.seq] = blocking
        elif start_now is not None and len(result.admitted) >= start_now:
            result.deferred.append(c.seq)
        else:
            result.admitted.append(c.seq)
            result.taken.update(applicable)
    return result


def _fits(c: Candidate, state: LimitState, rooms: Mapping[str, int], taken: Counter[str]) -> bool:
    lid = state.limit.id
    if state.held_head is not None and order(c.priority, c.due_ms, c.seq) > state.held_head:
        return False  # the limit's held tasks go first
    concurrency = state.limit.concurrency
    if concurrency is not None and state.running + taken[lid] >= concurrency:
        return False
    return state.limit.rate is None or rooms[lid] > taken[lid]


def wake_room(state: LimitState, now_ms: int) -> int:
    """How many of a limit's held tasks may go now."""
    room = []
    if state.limit.concurrency is not None:
        room.append(max(0, state.limit.concurrency - state.running))
    if state.limit.rate is not None:
        room.append(state.window.room(now_ms, state.limit.rate))
    return min(room)


def next_wake(state: LimitState, now_ms: int) -> int | None:
    """When a limit that holds tasks should look at them again: now while it has room,
    when its window next frees a start or a cancelled task's slot comes back, or None
    while only running tasks fill it (the end of one wakes it)."""
    if wake_room(state, now_ms) > 0:
        return now_ms
    limit = state.limit
    if limit.concurrency is not None and state.running >= limit.concurrency:
        return state.slot_back_at
    assert limit.rate is not None
    return state.window.next_free(now_ms, limit.rate)
