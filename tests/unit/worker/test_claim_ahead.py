"""Claiming ahead follows the start rate: a full pipeline for short tasks on a far
store, nothing held back behind long ones."""

from __future__ import annotations

from tickwheel.worker.ahead import ClaimAhead


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run(ahead: ClaimAhead, ticks: Ticks, *, per_second: int, seconds: float) -> None:
    """Start tasks at `per_second` for `seconds`, in steps of 10 ms."""
    for _ in range(round(seconds * 100)):
        ticks.now += 0.01
        ahead.started(round(per_second / 100))


def test_nothing_ahead_before_a_fetch_or_a_start_is_measured() -> None:
    ticks = Ticks()
    ahead = ClaimAhead(64, ticks)
    assert ahead.amount() == 0
    run(ahead, ticks, per_second=4000, seconds=2)
    assert ahead.amount() == 0  # no fetch timed yet: no round trip to hide


def test_short_tasks_on_a_far_store_claim_what_two_fetches_take_to_start() -> None:
    ticks = Ticks()
    ahead = ClaimAhead(512, ticks)
    ahead.fetched(0.040)  # 10 ms each way to Redis, then to PostgreSQL
    run(ahead, ticks, per_second=2000, seconds=2)
    assert ahead.amount() == 160  # 2,000/s x 40 ms x 2


def test_never_more_than_the_most_it_may() -> None:
    ticks = Ticks()
    ahead = ClaimAhead(64, ticks)
    ahead.fetched(0.5)
    run(ahead, ticks, per_second=5000, seconds=2)
    assert ahead.amount() == 64
    assert ClaimAhead(0, ticks).amount() == 0


def test_long_tasks_are_claimed_as_slots_free() -> None:
    ticks = Ticks()
    ahead = ClaimAhead(64, ticks)
    ahead.fetched(0.002)
    run(ahead, ticks, per_second=100, seconds=3)  # 64 slots, tasks of 0.64 s
    assert ahead.amount() == 1


def test_a_burst_after_a_quiet_spell_is_claimed_ahead_within_a_tenth_of_a_second() -> None:
    ticks = Ticks()
    ahead = ClaimAhead(512, ticks)
    ahead.fetched(0.01)
    run(ahead, ticks, per_second=100, seconds=2)
    ticks.now += 60  # nothing due for a minute
    run(ahead, ticks, per_second=10_000, seconds=0.2)
    assert ahead.amount() in (200, 201)  # 10,000/s x 10 ms x 2 already (and rounding)


def test_the_rate_falls_when_work_stops() -> None:
    ticks = Ticks()
    ahead = ClaimAhead(512, ticks)
    ahead.fetched(0.04)
    run(ahead, ticks, per_second=4000, seconds=2)
    busy = ahead.amount()
    ticks.now += 5  # idle
    ahead.started(0)
    run(ahead, ticks, per_second=0, seconds=2)
    assert ahead.amount() < busy / 8


def test_a_claimed_task_starts_within_a_quarter_of_its_lease() -> None:
    """Under load a fetch slows down; what it claims ahead must still start long
    before its lease runs out, heartbeats or not."""
    ticks = Ticks()
    ahead = ClaimAhead(10_000, ticks, lease_seconds=2)
    ahead.fetched(1.5)  # a saturated machine
    run(ahead, ticks, per_second=1000, seconds=2)
    assert ahead.amount() == 500  # 1,000/s x 2 s x 1/4, not 1,000/s x 1.5 s x 2
