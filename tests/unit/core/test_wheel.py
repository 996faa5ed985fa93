"""TimingWheel against a plain sorted model, plus the boundary cases by name."""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tickwheel.core.wheel import TimingWheel

SECOND = 1_000
MINUTE = 60_000
HOUR = 3_600_000
DAY = 86_400_000
YEAR = 365 * DAY
ROTATION = 64 * DAY  # the default day_slots
# 2023-11-14T22:13:20Z, a realistic epoch time that is aligned to nothing in particular.
T0 = 1_700_000_000_000
# 2023-12-26T00:00:00Z: a day boundary that is also a 64-day rotation boundary.
ROTATION_START = (T0 // ROTATION + 1) * ROTATION


@dataclass(frozen=True)
class Due:
    """A due time relative to the wheel's clock, drawn before that clock is known."""

    offset: int = 0  # ms after now (negative: in the past)
    unit: int = 0  # when set: the k-th multiple of unit after now, plus jitter ms
    k: int = 0
    jitter: int = 0

    def at(self, now_ms: int) -> int:
        if self.unit:
            return (now_ms // self.unit + self.k) * self.unit + self.jitter
        return now_ms + self.offset


dues = st.one_of(
    st.builds(Due, offset=st.integers(-10 * SECOND, 0)),
    st.builds(Due, offset=st.integers(0, 3 * SECOND)),
    st.builds(Due, offset=st.integers(0, 2 * HOUR)),
    st.builds(Due, offset=st.integers(0, 3 * DAY)),
    st.builds(Due, offset=st.integers(0, 2 * YEAR)),
    st.builds(
        Due,
        unit=st.sampled_from([SECOND, MINUTE, HOUR, DAY, ROTATION]),
        k=st.integers(0, 3),
        jitter=st.sampled_from([-1, 0, 1]),
    ),
)
steps = st.one_of(
    st.integers(0, 2 * SECOND),
    st.integers(0, 3 * MINUTE),
    st.integers(0, 3 * HOUR),
    st.integers(0, 3 * DAY),
    st.integers(0, 2 * YEAR),
    st.builds(Due, unit=st.sampled_from([MINUTE, HOUR, DAY, ROTATION]), k=st.integers(1, 2)),
    st.integers(-5 * SECOND, -1),  # a clock that goes backwards must not move time back
)


class WheelMachine(RuleBasedStateMachine):
    """The model is a heap of live (due, seq, key); seq is the insertion order."""

    wheel: TimingWheel

    def __init__(self) -> None:
        super().__init__()
        self.model: list[tuple[int, int, int]] = []
        self.popped: list[tuple[int, int]] = []
        self.seq = 0

    @initialize(
        now_ms=st.one_of(
            st.sampled_from([T0, ROTATION_START, ROTATION_START - 1, 0]),
            st.integers(0, 4_000_000_000_000),
        ),
        day_slots=st.sampled_from([1, 2, 64]),
    )
    def start(self, now_ms: int, day_slots: int) -> None:
        self.wheel = TimingWheel(now_ms, day_slots=day_slots)

    def _insert(self, key: int, due_ms: int) -> None:
        self.wheel.insert(key, due_ms)
        heapq.heappush(self.model, (due_ms, self.seq, key))
        self.seq += 1

    def _live(self, key: int, due_ms: int) -> tuple[int, int, int] | None:
        # Entries that share (key, due) are indistinguishable; cancel the oldest one.
        same = [e for e in self.model if e[0] == due_ms and e[2] == key]
        return min(same, default=None)

    @rule(key=st.integers(0, 7), due=dues)
    def insert(self, key: int, due: Due) -> None:
        self._insert(key, due.at(self.wheel.now_ms))

    @rule(keys=st.lists(st.integers(0, 7), min_size=2, max_size=30), due=dues)
    def burst(self, keys: list[int], due: Due) -> None:
        due_ms = due.at(self.wheel.now_ms)
        for key in keys:
            self._insert(key, due_ms)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def cancel_live(self, data: st.DataObject) -> None:
        due_ms, _, key = data.draw(st.sampled_from(sorted(self.model)))
        assert self.wheel.cancel(key, due_ms)
        entry = self._live(key, due_ms)
        assert entry is not None
        self.model.remove(entry)
        heapq.heapify(self.model)

    @precondition(lambda self: bool(self.popped))
    @rule(data=st.data())
    def cancel_popped(self, data: st.DataObject) -> None:
        key, due_ms = data.draw(st.sampled_from(self.popped))
        entry = self._live(key, due_ms)  # an identical entry inserted again is fair game
        assert self.wheel.cancel(key, due_ms) is (entry is not None)
        if entry is not None:
            self.model.remove(entry)
            heapq.heapify(self.model)

    @rule(step=steps)
    def advance(self, step: int | Due) -> None:
        before = self.wheel.now_ms
        self._pop(step.at(before) if isinstance(step, Due) else before + step)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), delta=st.sampled_from([-1, 0, 1]))
    def advance_to_a_due(self, data: st.DataObject, delta: int) -> None:
        # Popping exactly at a due time (as an engine does) is where off-by-ones hide.
        due_ms, _, _ = data.draw(st.sampled_from(sorted(self.model)))
        self._pop(due_ms + delta)

    @rule()
    def advance_to_next_due(self) -> None:
        next_due = self.wheel.next_due_ms()
        if next_due is not None:
            self._pop(next_due)

    @rule(ahead=st.integers(0, 5_000))
    def prepare_ahead(self, ahead: int) -> None:
        # Staging the next seconds must change nothing that pop_due returns, when.
        self.wheel.prepare(self.wheel.now_ms + ahead)
        assert len(self.wheel) == len(self.model)

    def _pop(self, now_ms: int) -> None:
        before = self.wheel.now_ms
        next_due = self.wheel.next_due_ms()
        if self.model:
            assert next_due is not None
            assert next_due <= self.model[0][0]
        got = self.wheel.pop_due(now_ms)
        assert self.wheel.now_ms == max(before, now_ms)
        expected = []
        while self.model and self.model[0][0] <= self.wheel.now_ms:
            due_ms, _, key = heapq.heappop(self.model)
            expected.append((key, due_ms))
        assert got == expected
        self.popped.extend(got)

    @invariant()
    def counts_match(self) -> None:
        if hasattr(self, "wheel"):
            assert len(self.wheel) == len(self.model)


WheelMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
TestWheelAgainstModel = WheelMachine.TestCase


# -- boundaries ------------------------------------------------------------------------


def assert_released_exactly_on_time(wheel: TimingWheel, entries: list[tuple[int, int]]) -> None:
    """Pop 1 ms before each due (nothing), then at it (exactly the entries due then)."""
    for due_ms in sorted({d for _, d in entries}):
        assert wheel.pop_due(due_ms - 1) == []
        assert wheel.pop_due(due_ms) == [(k, d) for k, d in entries if d == due_ms]


@pytest.mark.parametrize(
    "boundary",
    [
        pytest.param((T0 // MINUTE + 1) * MINUTE, id="minute"),
        pytest.param((T0 // HOUR + 1) * HOUR, id="hour"),
        pytest.param((T0 // DAY + 1) * DAY, id="day"),
        pytest.param(ROTATION_START, id="rotation"),
        pytest.param(ROTATION_START + 3 * ROTATION, id="overflow"),
    ],
)
@pytest.mark.parametrize("jump", [True, False], ids=["jump", "walk"])
def test_cascade_across_boundary(boundary: int, jump: bool) -> None:
    wheel = TimingWheel(T0)
    entries = [
        (key, boundary + delta)
        for key, delta in enumerate([-SECOND, -1, 0, 1, 999, SECOND, MINUTE, HOUR + 5])
    ]
    for key, due_ms in reversed(entries):  # filed out of order on purpose
        wheel.insert(key, due_ms)
    entries.sort(key=lambda e: e[1])
    if not jump:
        # Walk up to just before the boundary, so the cascade happens from a live minute.
        assert wheel.pop_due(boundary - 2 * SECOND - 1) == []
    assert_released_exactly_on_time(wheel, entries)
    assert len(wheel) == 0
    assert wheel.next_due_ms() is None


def test_every_level_and_overflow_at_once() -> None:
    wheel = TimingWheel(T0)
    offsets = [1, SECOND, MINUTE, HOUR, DAY, 10 * DAY, ROTATION, 3 * YEAR]
    entries = [(key, T0 + offset) for key, offset in enumerate(offsets)]
    for key, due_ms in entries:
        wheel.insert(key, due_ms)
    assert_released_exactly_on_time(wheel, entries)


def test_a_year_jump_is_not_a_walk() -> None:
    # Stepping second by second would take ~10^8 iterations here and never finish.
    wheel = TimingWheel(T0)
    dues_ms = [T0 + YEAR * n + n for n in range(1, 6)]
    for key, due_ms in enumerate(dues_ms):
        wheel.insert(key, due_ms)
    assert wheel.pop_due(T0 + 10 * YEAR) == list(enumerate(dues_ms))


def test_small_day_slots() -> None:
    wheel = TimingWheel(T0, day_slots=1)
    entries = [(0, T0 + DAY), (1, T0 + 2 * DAY + 7), (2, T0 + 40 * DAY)]
    for key, due_ms in entries:
        wheel.insert(key, due_ms)
    assert_released_exactly_on_time(wheel, entries)


def test_day_slots_must_be_positive() -> None:
    with pytest.raises(ValueError, match="day_slots"):
        TimingWheel(T0, day_slots=0)


# -- ordering --------------------------------------------------------------------------

BURST = 100_000


@pytest.mark.parametrize("ahead", [True, False], ids=["future-second", "current-second"])
def test_same_second_burst_comes_out_sorted_and_complete(ahead: bool) -> None:
    rng = random.Random(7)
    start = (T0 // SECOND) * SECOND
    wheel = TimingWheel(start - (5 * SECOND if ahead else 0))
    dues_ms = [start + rng.randrange(SECOND) for _ in range(BURST)]
    for key, due_ms in enumerate(dues_ms):
        wheel.insert(key, due_ms)
    assert len(wheel) == BURST
    # Half now, the rest later in the same second: nothing early, nothing lost.
    first = wheel.pop_due(start + 499)
    rest = wheel.pop_due(start + 999)
    assert all(due_ms <= start + 499 for _, due_ms in first)
    expected = sorted(enumerate(dues_ms), key=lambda e: (e[1], e[0]))
    assert first + rest == expected
    assert len(wheel) == 0


def test_ties_keep_insertion_order_across_cascades() -> None:
    wheel = TimingWheel(T0)
    due_ms = T0 + 2 * DAY
    clock = T0
    for key in range(6):
        wheel.insert(key, due_ms)
        clock += 9 * HOUR  # each insert lands after one more cascade
        assert wheel.pop_due(min(clock, due_ms - 1)) == []
    assert wheel.pop_due(due_ms) == [(key, due_ms) for key in range(6)]


def test_insert_in_the_past_comes_out_next() -> None:
    wheel = TimingWheel(T0)
    wheel.insert(1, T0 + 10)
    wheel.insert(2, T0 - HOUR)
    wheel.insert(3, T0 - 5)
    assert wheel.pop_due(T0) == [(2, T0 - HOUR), (3, T0 - 5)]
    assert wheel.pop_due(T0 + 10) == [(1, T0 + 10)]


def test_past_inserts_keep_insertion_order_after_a_cancel_in_the_run() -> None:
    wheel = TimingWheel(T0)
    wheel.insert(1, T0 - 5)
    wheel.insert(2, T0 - 10)  # out of order: waits to be merged
    assert wheel.cancel(1, T0 - 5)  # the run is empty again, but 2 is still waiting
    wheel.insert(3, T0 - 10)
    assert wheel.pop_due(T0) == [(2, T0 - 10), (3, T0 - 10)]


def test_time_never_moves_backwards() -> None:
    wheel = TimingWheel(T0)
    wheel.insert(1, T0 + 2 * SECOND)
    assert wheel.pop_due(T0 + MINUTE) == [(1, T0 + 2 * SECOND)]
    assert wheel.now_ms == T0 + MINUTE
    wheel.insert(2, T0 + 30 * SECOND)  # already past for the wheel
    assert wheel.pop_due(T0) == [(2, T0 + 30 * SECOND)]
    assert wheel.now_ms == T0 + MINUTE
    wheel.insert(3, T0 + MINUTE + 1)
    assert wheel.pop_due(T0 + 5) == []
    assert wheel.pop_due(T0 + MINUTE + 1) == [(3, T0 + MINUTE + 1)]


# -- cancel ----------------------------------------------------------------------------


def test_cancel_future_current_and_popped() -> None:
    wheel = TimingWheel(T0)
    wheel.insert(1, T0 + HOUR)
    wheel.insert(2, T0 + 100)
    wheel.insert(3, T0 + 200)
    assert wheel.cancel(1, T0 + HOUR)  # future slot: tombstone
    assert wheel.pop_due(T0 + 100) == [(2, T0 + 100)]
    assert wheel.cancel(3, T0 + 200)  # in the current run
    assert not wheel.cancel(2, T0 + 100)  # already popped
    assert not wheel.cancel(3, T0 + 200)  # already cancelled
    assert len(wheel) == 0
    assert wheel.pop_due(T0 + DAY) == []


def test_cancel_removes_one_of_identical_entries() -> None:
    wheel = TimingWheel(T0)
    for _ in range(3):
        wheel.insert(5, T0 + DAY)
    assert wheel.cancel(5, T0 + DAY)
    assert len(wheel) == 2
    assert wheel.pop_due(T0 + DAY) == [(5, T0 + DAY)] * 2


def test_never_inserted_cancel_does_not_suppress_later_inserts() -> None:
    wheel = TimingWheel(T0)
    ghost = T0 + 3 * MINUTE
    assert wheel.cancel(9, ghost)  # cannot be checked without an index
    wheel.insert(9, T0 + 4 * MINUTE)  # same key, another due
    assert wheel.pop_due(ghost) == []
    # The ghost's second is released: its tombstone is gone and the count is right again.
    assert len(wheel) == 1
    wheel.insert(9, ghost)  # the very entry, now in the past
    assert wheel.pop_due(T0 + 4 * MINUTE) == [(9, ghost), (9, T0 + 4 * MINUTE)]
    assert len(wheel) == 0


def test_tombstones_for_skipped_seconds_are_dropped() -> None:
    wheel = TimingWheel(T0)
    assert wheel.cancel(1, T0 + DAY)  # nothing is ever filed at that second
    assert wheel.pop_due(T0 + YEAR) == []
    wheel.insert(1, T0 + DAY)
    assert len(wheel) == 1  # the unmatched cancel was given back when its second passed
    assert wheel.pop_due(T0 + YEAR) == [(1, T0 + DAY)]


# -- next_due_ms -----------------------------------------------------------------------


def test_next_due_ms_empty() -> None:
    wheel = TimingWheel(T0)
    assert wheel.next_due_ms() is None
    wheel.insert(1, T0 + 5)
    wheel.pop_due(T0 + 5)
    assert wheel.next_due_ms() is None


def test_next_due_ms_is_exact_for_the_run_and_level_zero() -> None:
    start = (T0 // MINUTE) * MINUTE
    wheel = TimingWheel(start)
    wheel.insert(1, start + 7_250)
    wheel.insert(2, start + 7_100)
    assert wheel.next_due_ms() == start + 7_100  # level 0: exact
    wheel.insert(3, start - 40)
    assert wheel.next_due_ms() == start - 40  # past insert waiting in the run
    wheel.pop_due(start + 7_100)
    assert wheel.next_due_ms() == start + 7_250  # the rest of the current second


@pytest.mark.parametrize("offset", [MINUTE + 1, HOUR + 1, DAY + 1, 20 * DAY + 1, YEAR + 1])
def test_next_due_ms_is_a_lower_bound_that_converges(offset: int) -> None:
    wheel = TimingWheel(T0)
    due_ms = T0 + offset
    wheel.insert(1, due_ms)
    wakeups = 0
    while True:
        next_due = wheel.next_due_ms()
        assert next_due is not None and next_due <= due_ms
        got = wheel.pop_due(next_due)
        wakeups += 1
        if got:
            break
    assert got == [(1, due_ms)]
    assert wakeups <= 6  # an engine sleeping until next_due_ms wakes only a few times
