"""The cluster's clock: the store's time, carried by the monotonic clock between
readings, whatever this host's wall clock does."""

from __future__ import annotations

import logging

import pytest

from tickwheel.clock import ClusterClock
from tickwheel.engine.timekeeper import Timekeeper

MS = 1_000_000  # ns
STORE_MS = 1_800_000_000_000  # the store's time at the first reading


class Host:
    """A host's two clocks, set by hand; its wall clock may be off from the store's."""

    def __init__(self, wall_ahead_ms: int) -> None:
        self.monotonic = 5_000 * MS
        self.wall = (STORE_MS + wall_ahead_ms) * MS

    def pass_ms(self, ms: int) -> None:
        self.monotonic += ms * MS
        self.wall += ms * MS

    def clock(self) -> ClusterClock:
        return ClusterClock(monotonic_ns=lambda: self.monotonic, wall_ns=lambda: self.wall)


class Store:
    """The store's clock, answering after `trips_ms` (one per reading, in turn)."""

    def __init__(self, host: Host, *trips_ms: int) -> None:
        self.host, self.trips = host, list(trips_ms)
        self.now = STORE_MS

    async def now_ms(self) -> int:
        trip = self.trips.pop(0) if self.trips else 2
        self.host.pass_ms(trip // 2)
        self.now += trip // 2
        answer = self.now
        self.host.pass_ms(trip - trip // 2)
        self.now += trip - trip // 2
        return answer


async def test_until_its_first_reading_it_is_the_host_wall_clock() -> None:
    host = Host(wall_ahead_ms=60_000)
    assert host.clock().now_ms() == STORE_MS + 60_000


@pytest.mark.parametrize("wall_ahead_ms", [60_000, -60_000])
async def test_after_a_reading_it_keeps_the_store_time_and_says_how_far_off_the_host_is(
    wall_ahead_ms: int,
) -> None:
    host = Host(wall_ahead_ms)
    clock = host.clock()
    store = Store(host, 4, 4, 4)

    reading = await clock.read(store.now_ms)

    assert abs(clock.now_ms() - store.now) <= 1
    assert abs(reading.skew_ms - wall_ahead_ms) <= 1
    assert reading.uncertainty_ms == 2


async def test_a_step_of_the_host_wall_clock_moves_nothing() -> None:
    host = Host(wall_ahead_ms=0)
    clock = host.clock()
    store = Store(host)
    await clock.read(store.now_ms)
    before = clock.now_ms()

    host.wall += 30_000 * MS  # an operator's `date`, NTP stepping
    host.pass_ms(1_000)

    assert clock.now_ms() - before == 1_000
    assert clock.skew_ms() >= 29_999


async def test_the_reading_with_the_shortest_round_trip_is_the_one_kept() -> None:
    host = Host(wall_ahead_ms=0)
    clock = host.clock()
    # The second reading is quick; the others wait 400 ms, all on the way back.
    store = Store(host, 800, 2, 800)

    reading = await clock.read(store.now_ms)

    assert reading.uncertainty_ms == 1
    assert abs(clock.now_ms() - store.now) <= 1


async def test_it_never_goes_backwards_when_a_later_reading_lowers_it() -> None:
    host = Host(wall_ahead_ms=0)
    clock = host.clock()
    store = Store(host)
    await clock.read(store.now_ms)
    seen = clock.now_ms()

    store.now -= 500  # the store's clock is stepped back half a second
    await clock.read(store.now_ms)

    assert clock.now_ms() >= seen
    host.pass_ms(1_000)
    assert clock.now_ms() >= seen + 400


async def test_a_host_clock_off_by_more_than_a_second_is_said_loudly_and_its_return(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = Host(wall_ahead_ms=60_000)
    clock = host.clock()
    store = Store(host)
    keeper = Timekeeper(clock, store.now_ms)

    with caplog.at_level(logging.WARNING, logger="tickwheel.engine.timekeeper"):
        await keeper.read()
        await keeper.read()  # still off: not said again within the minute
        host.wall -= 60_000 * MS  # the host's clock is fixed
        await keeper.read()

    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2, said
    assert "60.0 s ahead of the store's" in said[0]
    assert "agrees with the store's again" in said[1]


async def test_a_host_clock_within_a_second_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    host = Host(wall_ahead_ms=-300)
    store = Store(host)
    with caplog.at_level(logging.WARNING, logger="tickwheel.engine.timekeeper"):
        await Timekeeper(host.clock(), store.now_ms).read()
    assert caplog.records == []
