"""A dependency's outage is told in a few lines however many calls fail: when it
starts, a reminder while it lasts, when it ends."""

from __future__ import annotations

import logging

import pytest

from tickwheel.errors import StoreUnavailable
from tickwheel.outage import FAILING_SECONDS, Outage

log = logging.getLogger("test.outage")


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == log.name]


def test_a_spell_of_thousands_of_failures_is_a_few_lines(caplog: pytest.LogCaptureFixture) -> None:
    ticks = Ticks()
    outage = Outage("the store", log, remind_seconds=30, now=ticks)
    caplog.set_level(logging.INFO)
    for _ in range(70 * 100):  # 100 failures a second for 70 s
        outage.failed(StoreUnavailable("connection refused"))
        ticks.now += 0.01
    ticks.now += 2
    outage.succeeded()
    told = lines(caplog)
    assert told[0] == "the store is unavailable: StoreUnavailable: connection refused"
    assert [line.split(" (")[0] for line in told[1:3]] == [
        "the store is still unavailable after 30 s",
        "the store is still unavailable after 60 s",
    ]
    assert "store_unavailable); last: StoreUnavailable: connection refused" in told[2]
    assert told[3].startswith("the store is available again after 72.0 s (7000 calls failed")
    assert len(told) == 4
    assert not any(r.exc_info for r in caplog.records)


def test_causes_are_counted_by_code(caplog: pytest.LogCaptureFixture) -> None:
    ticks = Ticks()
    outage = Outage("the ready queue", log, now=ticks)
    caplog.set_level(logging.INFO)
    outage.failed(ConnectionRefusedError("refused"))
    outage.failed(TimeoutError())
    ticks.now += 5
    outage.succeeded()
    assert lines(caplog)[-1] == (
        "the ready queue is available again after 5.0 s"
        " (2 calls failed: 1 ConnectionRefusedError, 1 TimeoutError)"
    )


def test_a_call_answered_just_after_a_failure_does_not_end_the_spell(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ticks = Ticks()
    outage = Outage("the store", log, now=ticks)
    caplog.set_level(logging.INFO)
    outage.failed(StoreUnavailable("reset"))
    ticks.now += 0.1
    outage.succeeded()  # sent before the failure
    outage.failed(StoreUnavailable("reset"))
    assert len(lines(caplog)) == 1


def test_failing_while_failures_are_recent() -> None:
    ticks = Ticks()
    outage = Outage("the store", log, now=ticks)
    assert not outage.failing()
    outage.failed(StoreUnavailable())
    assert outage.failing()
    ticks.now += FAILING_SECONDS
    assert not outage.failing()


def test_a_call_that_goes_through_ends_failing_at_once() -> None:
    """Submissions are refused while the queue is down, not for seconds after it is back."""
    ticks = Ticks()
    outage = Outage("the ready queue", log, now=ticks)
    outage.failed(ConnectionRefusedError())
    ticks.now += 0.5
    assert outage.failing()
    outage.succeeded()
    assert not outage.failing()
    outage.failed(ConnectionRefusedError())
    assert outage.failing()
