"""The background loop, driven by a `ManualClock`: a step at once and then every
interval of the clock, sooner when woken; a spell of failures logged when it starts and
when it ends; stopped by cancellation wherever it is."""

from __future__ import annotations

import asyncio
import logging

import pytest
from looping import settle

from tickwheel.clock import ManualClock
from tickwheel.errors import StoreUnavailable
from tickwheel.periodic import Periodic

log = logging.getLogger("tickwheel.test_periodic")
T0_MS = 1_700_000_000_000


class Step:
    """A step that counts its runs, fails with `error` while it is set, and waits for
    `held` to be set while it is given."""

    def __init__(self) -> None:
        self.runs = 0
        self.error: Exception | None = None
        self.held: asyncio.Event | None = None

    async def __call__(self) -> None:
        self.runs += 1
        if self.held is not None:
            await self.held.wait()
        if self.error is not None:
            raise self.error


async def passing(clock: ManualClock, seconds: int) -> None:
    """Move the clock a second at a time, the loop running through each."""
    for _ in range(seconds):
        clock.advance(1)
        await settle()


def looping(
    step: Step, clock: ManualClock, *, wait_first: bool = False
) -> tuple[Periodic, asyncio.Task[None]]:
    """A loop of `step` every second of `clock`, running."""
    loop = Periodic(
        "stepping", step, clock=clock, every_seconds=1.0, log=log, wait_first=wait_first
    )
    return loop, asyncio.create_task(loop.run())


async def stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_step_at_once_then_one_each_interval_of_the_clock() -> None:
    clock, step = ManualClock(T0_MS), Step()
    _, task = looping(step, clock)
    await settle()
    assert step.runs == 1
    clock.advance(0.999)
    await settle()
    assert step.runs == 1  # never early
    clock.advance(0.001)
    await settle()
    assert step.runs == 2
    clock.advance(1)
    await settle()
    assert step.runs == 3 and clock.sleeping() == 1
    await stopped(task)


async def test_wait_first_waits_an_interval_before_the_first_step() -> None:
    clock, step = ManualClock(T0_MS), Step()
    _, task = looping(step, clock, wait_first=True)
    await settle()
    assert step.runs == 0
    clock.advance(1)
    await settle()
    assert step.runs == 1
    await stopped(task)


async def test_a_wake_steps_at_once_and_one_during_a_step_is_kept() -> None:
    clock, step = ManualClock(T0_MS), Step()
    loop, task = looping(step, clock)
    await settle()
    loop.wake()
    await settle()
    assert step.runs == 2  # the clock never moved
    step.held = asyncio.Event()
    loop.wake()
    await settle()
    assert step.runs == 3  # in the step, held
    loop.wake()  # news while it runs: the step may have read before it
    step.held.set()
    step.held = None
    await settle()
    assert step.runs == 4
    await settle()
    assert step.runs == 4  # then it waits for the clock again
    await stopped(task)


async def test_a_wake_before_the_loop_runs_is_kept() -> None:
    clock, step = ManualClock(T0_MS), Step()
    loop = Periodic("stepping", step, clock=clock, every_seconds=1.0, log=log, wait_first=True)
    loop.wake()
    task = asyncio.create_task(loop.run())
    await settle()
    assert step.runs == 1
    await stopped(task)


async def test_a_store_outage_is_left_to_the_store_to_tell(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every loop meets the outage; the store's `Outage` tells it, once."""
    clock, step = ManualClock(T0_MS), Step()
    step.error = StoreUnavailable("connection refused")
    with caplog.at_level(logging.INFO, logger=log.name):
        _, task = looping(step, clock)
        await settle()
        await passing(clock, 99)
        assert step.runs == 100  # the interval holds through the outage
        step.error = None
        await passing(clock, 2)
        await stopped(task)

    assert caplog.records == []


async def test_an_unexpected_error_logs_its_traceback_once_and_its_spell_ends_in_a_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, step = ManualClock(T0_MS), Step()
    step.error = KeyError("seq")
    with caplog.at_level(logging.INFO, logger=log.name):
        _, task = looping(step, clock)
        await settle()
        await passing(clock, 5)
        step.error = StoreUnavailable("connection refused")  # told by the store
        await passing(clock, 5)
        step.error = None
        await passing(clock, 1)
        await stopped(task)

    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, "stepping failed (KeyError: 'seq'); trying again every 1 s"),
        (logging.WARNING, "stepping works again (failures: 11 in 11 s)"),
    ]
    error = caplog.records[0].exc_info
    assert error is not None and error[0] is KeyError


async def test_a_flapping_step_logs_a_line_per_interval_with_the_count_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, step = ManualClock(T0_MS), Step()
    with caplog.at_level(logging.INFO, logger=log.name):
        _, task = looping(step, clock)
        for second in range(20):  # fails one second in two
            step.error = KeyError("seq") if second % 2 == 0 else None
            await settle()
            clock.advance(1)
        await stopped(task)

    assert [r.getMessage() for r in caplog.records] == [
        "stepping failed (KeyError: 'seq'); trying again every 1 s",
        "stepping works again (failures: 1 in 1 s)",
        "stepping failed (KeyError: 'seq'); trying again every 1 s"
        " (4 more like it in the last 10 s were not logged)",
        "stepping works again (failures: 1 in 1 s)"
        " (4 more like it in the last 10 s were not logged)",
    ]


async def test_cancelling_stops_the_loop_asleep_or_in_a_step_and_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, step = ManualClock(T0_MS), Step()
    with caplog.at_level(logging.DEBUG, logger=log.name):
        _, asleep = looping(step, clock)
        await settle()
        await stopped(asleep)
        step.held = asyncio.Event()
        _, busy = looping(step, clock)
        await settle()
        assert step.runs == 2
        await stopped(busy)
    clock.advance(60)
    await settle()
    assert step.runs == 2
    assert clock.sleeping() == 0
    assert caplog.records == []


async def test_one_step_by_hand_reports_how_it_went() -> None:
    clock, step = ManualClock(T0_MS), Step()
    loop = Periodic("stepping", step, clock=clock, every_seconds=1.0, log=log)
    assert await loop.step()
    step.error = StoreUnavailable("down")
    assert not await loop.step()
