"""A flood of one kind of line logs one line per interval, with the count left out."""

from __future__ import annotations

import logging

import pytest

from tickwheel.log_tally import LogTally

log = logging.getLogger("tickwheel.test_tally")


def test_one_line_per_kind_and_interval_then_the_count_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    tally = LogTally(log, every_seconds=10, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger=log.name):
        assert tally.log(logging.WARNING, "stale fence", "refused %s", "a", extra={"task_id": "a"})
        for second in range(1, 10):  # 9 more within the interval: counted, not logged
            now[0] = 100.0 + second
            assert not tally.log(logging.WARNING, "stale fence", "refused %s", f"b{second}")
        assert tally.log(logging.INFO, "other", "another kind %d", 1)  # kinds apart
        now[0] = 110.0
        assert tally.log(logging.WARNING, "stale fence", "refused %s", "c")
        now[0] = 125.0
        assert tally.log(logging.WARNING, "stale fence", "refused %s", "d")

    assert [r.getMessage() for r in caplog.records] == [
        "refused a",
        "another kind 1",
        "refused c (9 more like it in the last 10 s were not logged)",
        "refused d",
    ]
    assert getattr(caplog.records[0], "task_id", None) == "a"
