"""The recorder and the in-memory store, driven by a manual clock."""

from __future__ import annotations

from prometheus_client import generate_latest

from tickwheel.clock import ManualClock
from tickwheel.metrics import prometheus
from tickwheel.metrics.buckets import midpoint
from tickwheel.metrics.memory import MemoryMetrics
from tickwheel.metrics.recorder import Event, Lateness, Recorder
from tickwheel.metrics.window import WINDOW_SECONDS, lateness, series
from tickwheel.models import Finish, Outcome, Status
from tickwheel.queue.base import ReadyItem

T0 = 1_767_225_600_000  # a whole second


def released(*lateness_ms: int, due: int = T0) -> list[ReadyItem]:
    return [ReadyItem(i, "default", 0, due, due + ms) for i, ms in enumerate(lateness_ms)]


def end(status: Status, *, started: int | None = None, at: int = T0) -> Finish:
    return Finish(1, 1, Outcome.SUCCEEDED, status, at, started_ms=started)


async def test_counts_land_in_the_second_of_the_clock() -> None:
    clock = ManualClock(T0 + 999)
    recorder = Recorder(clock)
    store = MemoryMetrics(recorder)
    recorder.released(released(0, 1, 2))
    clock.advance(0.001)  # the next second
    recorder.count(Event.STARTED, 2)

    got = series(await store.seconds(clock.now_ms()), clock.now_ms())

    assert got.start_ms == T0 + 1000 - (WINDOW_SECONDS - 1) * 1000
    assert {e: len(v) for e, v in got.counts.items()} == dict.fromkeys(Event, WINDOW_SECONDS)
    assert got.counts[Event.TRIGGERED][-2:] == [3, 0]
    assert got.counts[Event.STARTED][-2:] == [0, 2]
    assert sum(got.counts[Event.SUCCEEDED]) == 0


async def test_a_second_leaves_the_series_after_fifteen_minutes() -> None:
    clock = ManualClock(T0)
    recorder = Recorder(clock)
    store = MemoryMetrics(recorder)
    recorder.count(Event.FAILED)

    clock.advance(WINDOW_SECONDS - 1)
    at_edge = series(await store.seconds(clock.now_ms()), clock.now_ms())
    clock.advance(1)
    gone = series(await store.seconds(clock.now_ms()), clock.now_ms())

    assert at_edge.counts[Event.FAILED][0] == 1  # the oldest second still shown
    assert sum(gone.counts[Event.FAILED]) == 0


async def test_memory_keeps_no_more_seconds_than_the_window() -> None:
    clock = ManualClock(T0)
    recorder = Recorder(clock)
    store = MemoryMetrics(recorder)
    for _ in range(WINDOW_SECONDS + 100):
        recorder.count(Event.TRIGGERED)
        await store.flush()
        clock.advance(1)

    kept = await store.seconds(clock.now_ms())

    assert len(kept) <= WINDOW_SECONDS
    assert min(kept) >= clock.now_ms() // 1000 - WINDOW_SECONDS


async def test_lateness_percentiles_cover_the_last_minute_only() -> None:
    clock = ManualClock(T0)
    recorder = Recorder(clock)
    store = MemoryMetrics(recorder)
    recorder.released(released(*[5000] * 50))  # a minute and a second before the read
    clock.advance(61)
    recorder.released(released(*[3] * 98, 400, 400, due=clock.now_ms()))
    recorder.started([], clock.now_ms())

    seconds = await store.seconds(clock.now_ms())
    trigger = lateness(seconds, clock.now_ms(), Lateness.TRIGGER)
    start = lateness(seconds, clock.now_ms(), Lateness.START)

    assert (trigger.p50, trigger.p99, trigger.samples) == (midpoint(7), midpoint(35), 100)
    assert abs((trigger.p99 or 0) - 400) <= 50
    assert (start.p50, start.p99, start.samples) == (None, None, 0)


async def test_ends_count_by_their_final_state_and_refused_ones_not_at_all() -> None:
    clock = ManualClock(T0)
    recorder = Recorder(clock)
    store = MemoryMetrics(recorder)
    ends = [
        end(Status.SUCCEEDED, started=T0 - 250),
        end(Status.PENDING),  # a retry
        end(Status.FAILED),
        end(Status.SUCCEEDED),  # refused below: a stale fence
        end(Status.EXPIRED),  # claimed ahead, its expiry came before a slot
    ]

    recorder.ended(ends, [True, True, True, False, True])

    got = series(await store.seconds(T0), T0).counts
    assert [got[e][-1] for e in Event] == [0, 0, 1, 1, 1, 1]
    assert recorder.lifetime.run_time_sum_ms == 250
    assert sum(recorder.lifetime.run_time) == 1


async def test_counts_given_back_are_taken_again() -> None:
    recorder = Recorder(ManualClock(T0))
    recorder.count(Event.TRIGGERED, 4)
    taken = recorder.take()
    assert recorder.take() == {}
    recorder.count(Event.TRIGGERED)

    recorder.give_back(taken)

    assert recorder.take() == {T0 // 1000: {"triggered": 5}}


def test_prometheus_exposes_lifetime_totals_and_live_gauges() -> None:
    clock = ManualClock(T0)
    recorder = Recorder(clock)
    recorder.released(released(0, 1, 3, 5000))
    recorder.leases_changed(gained=3)
    recorder.leases_changed(lost=1)
    live = prometheus.LiveState(
        depth=lambda: {"default": 7, "mail": 0}, wheel_size=lambda: 42, partitions_owned=lambda: 3
    )

    text = generate_latest(prometheus.registry(recorder.lifetime, live)).decode()

    for line in (
        'tickwheel_task_events_total{event="triggered"} 4.0',
        'tickwheel_trigger_lateness_seconds_bucket{le="0.0"} 1.0',
        'tickwheel_trigger_lateness_seconds_bucket{le="0.001"} 2.0',
        'tickwheel_trigger_lateness_seconds_bucket{le="0.003"} 3.0',
        'tickwheel_trigger_lateness_seconds_bucket{le="4.095"} 3.0',
        'tickwheel_trigger_lateness_seconds_bucket{le="8.191"} 4.0',
        'tickwheel_trigger_lateness_seconds_bucket{le="+Inf"} 4.0',
        "tickwheel_trigger_lateness_seconds_sum 5.004",
        'tickwheel_ready_depth{queue="default"} 7.0',
        "tickwheel_wheel_size 42.0",
        "tickwheel_partitions_owned 3.0",
        "tickwheel_partition_lease_gains_total 3.0",
        "tickwheel_partition_lease_losses_total 1.0",
    ):
        assert line in text.splitlines(), line
