"""The rules of limits: rates as written, the sliding window, and admission."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickwheel.core.limits import (
    Candidate,
    InvalidLimit,
    Limit,
    LimitState,
    Rate,
    Scope,
    Window,
    admit,
    next_wake,
)


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("100/s", Rate(100, 1000)),
        ("10/m", Rate(10, 60_000)),
        ("20/10s", Rate(20, 10_000)),
        ("1/500ms", Rate(1, 500)),
        ("5 / h", Rate(5, 3_600_000)),
        ("1000/d", Rate(1000, 86_400_000)),
    ],
)
def test_rates_read_as_written_and_print_back(text: str, rate: Rate) -> None:
    assert Rate.parse(text) == rate
    assert Rate.parse(str(rate)) == rate


@pytest.mark.parametrize("text", ["", "100", "0/s", "10/x", "-1/s", "5/2d", "10/0s", "1/s/s"])
def test_a_bad_rate_names_the_field(text: str) -> None:
    with pytest.raises(InvalidLimit) as raised:
        Rate.parse(text)
    assert raised.value.field == "rate"


def test_a_limit_needs_a_rule() -> None:
    with pytest.raises(InvalidLimit):
        Limit(Scope.QUEUE, "q")
    with pytest.raises(InvalidLimit) as raised:
        Limit(Scope.QUEUE, "q", concurrency=0)
    assert raised.value.field == "concurrency"


@given(
    count=st.integers(1, 20),
    period=st.integers(1, 5000),
    gaps=st.lists(st.tuples(st.integers(0, 700), st.integers(0, 30)), max_size=200),
)
def test_no_window_ever_holds_more_than_the_count(
    count: int, period: int, gaps: list[tuple[int, int]]
) -> None:
    """Claims taken whenever the window has room never put more than `count` in any
    window of the period (and its guard)."""
    rate = Rate(count, period)
    window, now, claims = Window(), 0, []
    for gap, wanted in gaps:
        now += gap
        taken = min(wanted, window.room(now, rate))
        window = window.spend(now, rate, taken)
        claims += [now] * taken
    for start in claims:
        assert sum(start <= at < start + rate.window_ms for at in claims) <= count


@given(count=st.integers(1, 20), taken=st.lists(st.integers(0, 5000), min_size=1, max_size=30))
def test_next_free_is_the_first_moment_with_room(count: int, taken: list[int]) -> None:
    rate = Rate(count, 1000)
    window = Window()
    for at in sorted(taken):
        window = window.spend(at, rate, min(1, window.room(at, rate)))
    now = max(taken)
    free = window.next_free(now, rate)
    assert window.room(free, rate) >= 1
    assert free == now or window.room(free - 1, rate) == 0


def test_admission_goes_in_priority_then_due_order_within_every_limit() -> None:
    limit = Limit(Scope.TASK_TYPE, "t", rate=Rate(2, 1000), concurrency=5)
    states = {limit.id: LimitState(limit, running=4)}
    ids = ["task_type:t", "queue:default"]
    found = admit(
        [Candidate(1, 0, 10, ids), Candidate(2, 5, 20, ids), Candidate(3, 0, 5, ids)],
        states,
        0,
    )
    assert found.admitted == [2]  # the highest priority; then the concurrency is full
    assert found.held == {3: limit.id, 1: limit.id}


def test_held_tasks_go_before_new_ones() -> None:
    limit = Limit(Scope.QUEUE, "q", concurrency=10)
    state = LimitState(limit, held_head=(0, 100, 7))  # priority 0, due 100, seq 7
    ids = ["queue:q"]
    found = admit([Candidate(8, 0, 200, ids), Candidate(7, 0, 100, ids)], {limit.id: state}, 0)
    assert found.admitted == [7] and found.held == {8: limit.id}


def test_admitted_beyond_start_now_are_deferred() -> None:
    limit = Limit(Scope.QUEUE, "q", concurrency=10)
    found = admit(
        [Candidate(n, 0, n, ["queue:q"]) for n in range(5)],
        {limit.id: LimitState(limit)},
        0,
        start_now=2,
    )
    assert (found.admitted, found.deferred) == ([0, 1], [2, 3, 4])


def test_a_full_limit_wakes_when_a_cancelled_slot_comes_back() -> None:
    limit = Limit(Scope.QUEUE, "q", concurrency=1)
    assert next_wake(LimitState(limit, running=1), 0) is None
    assert next_wake(LimitState(limit, running=1, slot_back_at=500), 0) == 500
    assert next_wake(LimitState(limit), 0) == 0
