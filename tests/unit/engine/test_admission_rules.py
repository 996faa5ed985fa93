"""Admission control's judgement: a drain rate measured only while work waited, on a
fake clock."""

from __future__ import annotations

import pytest

from tickwheel.clock import ManualClock
from tickwheel.engine.admission import (
    MAX_RETRY_AFTER_SECONDS,
    RECENT_MS,
    SAMPLE_SECONDS,
    Admission,
    DrainRate,
)
from tickwheel.errors import Overloaded

STEP_MS = round(SAMPLE_SECONDS * 1000)


class Pool:
    """A worker pool draining a ready queue, sampled as a node samples it."""

    def __init__(self, *, max_depth: int = 1_000_000, max_drain_seconds: float = 300) -> None:
        self.clock = ManualClock(1_000_000)
        self.depth = 0
        self.ended = 0
        self.store_failing = False
        self.admission = Admission(
            clock=self.clock,
            depth=lambda: {"default": self.depth} if self.depth else {},
            max_depth=max_depth,
            max_drain_seconds=max_drain_seconds,
            store_failing=lambda: self.store_failing,
        )
        self.sample()

    def sample(self, *, contended: bool = False) -> None:
        self.admission.observe(self.ended, {"default": self.depth}, contended=contended)

    def run(
        self, seconds: float, *, per_second: float, arriving: float = 0.0, flood: bool = False
    ) -> None:
        """Tasks arrive and the workers end up to `per_second` of those waiting;
        `flood`: the API of their own process admits work all along."""
        for _ in range(round(seconds * 1000 / STEP_MS)):
            self.clock.advance(SAMPLE_SECONDS)
            self.depth += round(arriving * SAMPLE_SECONDS)
            done = min(self.depth, round(per_second * SAMPLE_SECONDS))
            self.depth -= done
            self.ended += done
            self.sample(contended=flood)

    @property
    def rate(self) -> float | None:
        return self.admission.rate.per_second()


def test_a_cold_server_has_no_rate_and_admits_up_to_the_depth_limit() -> None:
    pool = Pool(max_depth=5000)
    pool.depth = 5000
    pool.sample()
    assert pool.rate is None
    pool.admission.check()  # 5,000 waiting, nothing measured: only the depth counts
    assert pool.admission.state().seconds_to_drain is None
    pool.depth = 5001
    with pytest.raises(Overloaded) as refused:
        pool.admission.check()
    assert refused.value.retry_after_seconds == MAX_RETRY_AFTER_SECONDS  # no rate to go by


def test_idle_time_neither_counts_nor_decays_the_rate() -> None:
    pool = Pool()
    pool.depth = 50_000
    pool.run(5, per_second=2000, arriving=2000)  # busy: work waits throughout
    busy_rate = pool.rate
    assert busy_rate == pytest.approx(2000)
    pool.run(30, per_second=100_000)  # the backlog is gone: an hour of idle follows
    pool.run(3600, per_second=0)
    assert pool.rate == busy_rate
    pool.depth = 30_000  # a burst: 15 s of work at the rate measured, well in time
    pool.admission.check()


def test_one_task_then_idle_then_a_burst_is_admitted() -> None:
    """The report of issue 13: one task, 3 s idle, then batches back to back."""
    pool = Pool()
    pool.depth = 1
    pool.run(1, per_second=2000)
    pool.run(3, per_second=2000)
    for _ in range(100):  # 1,000 a batch, faster than the workers drain
        pool.depth += 1000
        pool.admission.check()
        pool.run(0.5, per_second=400)
    assert pool.rate == pytest.approx(400)
    assert pool.depth > 50_000


def test_a_slow_pool_is_refused_with_a_wait_that_lets_the_backlog_drain() -> None:
    pool = Pool(max_drain_seconds=10)
    pool.depth = 20
    pool.run(4, per_second=4, arriving=4)  # 4 tasks a second, 20 always waiting
    assert pool.rate == pytest.approx(4)
    pool.depth = 70  # about 18 s of work: more than 10 s
    with pytest.raises(Overloaded) as refused:
        pool.admission.check()
    assert not pool.admission.state().open
    wait = refused.value.retry_after_seconds
    assert wait == 8  # (70 - 4 * 10) / 4 = 7.5, rounded up
    pool.run(wait, per_second=4)
    pool.admission.check()  # drained to what is admitted, as promised


def test_the_best_recent_window_stands_for_a_spell_of_contention() -> None:
    pool = Pool()
    pool.depth = 100_000
    pool.run(4, per_second=3000)
    pool.run(20, per_second=300)  # the workers starved for a while
    assert pool.rate == pytest.approx(3000)
    pace = pool.admission.rate.steady()
    assert pace is not None and pace < 1000  # a backlog's wait goes by the real pace
    pool.run(RECENT_MS / 1000, per_second=300)  # a minute of it: that is the pool now
    assert pool.rate == pytest.approx(300)


def test_a_pool_that_never_ends_anything_is_judged_stuck_after_a_while() -> None:
    pool = Pool(max_depth=10**6)
    pool.depth = 100
    pool.run(10, per_second=0)
    assert pool.rate is None  # slow tasks may simply not have ended yet
    pool.run(RECENT_MS / 1000, per_second=0)
    assert pool.rate == 0
    with pytest.raises(Overloaded) as refused:
        pool.admission.check()
    assert refused.value.retry_after_seconds == MAX_RETRY_AFTER_SECONDS


def test_a_backlog_that_waits_on_a_failing_store_blames_no_one() -> None:
    # The embedded store's disk filled: 15 due tasks wait, no end can be recorded.
    pool = Pool(max_depth=10**6, max_drain_seconds=60)
    pool.depth = 1000
    pool.run(10, per_second=200, arriving=200)
    assert pool.rate == pytest.approx(200)
    pool.depth = 15
    pool.store_failing = True
    pool.run(2 * RECENT_MS / 1000, per_second=0)
    pool.admission.check()  # not a 429: the submission meets the store and hears why
    pool.store_failing = False
    pool.run(1, per_second=200, arriving=200)
    assert pool.rate == pytest.approx(200)  # the outage taught nothing of the workers
    pool.admission.check()


def test_time_going_back_teaches_nothing() -> None:
    rate = DrainRate()
    rate.observe(10_000, 0, 5)
    rate.observe(9_000, 100, 5)
    rate.observe(8_000, 200, 5)
    assert rate.per_second() is None


def test_a_flood_into_one_process_is_judged_by_depth_until_it_lasts() -> None:
    """The workers of `tickwheel up` drain slowly while its API takes a flood: that is
    the flood's doing, not their capacity."""
    pool = Pool()
    pool.depth = 1000
    pool.run(30, per_second=350, arriving=6000, flood=True)
    assert pool.rate is None  # not judged by the starved rate
    pool.admission.check()  # 170,000 waiting: only the depth limit counts
    pool.run(RECENT_MS / 1000, per_second=350, arriving=6000, flood=True)
    assert pool.rate == pytest.approx(350)  # a flood that lasts is judged by what it leaves


def test_a_clear_measurement_stands_through_a_short_flood() -> None:
    pool = Pool()
    pool.depth = 50_000
    pool.run(5, per_second=6000, arriving=6000)
    pool.run(20, per_second=350, arriving=6000, flood=True)
    assert pool.rate == pytest.approx(6000)
