"""The running total of ends that admission control reads, from merged seconds."""

from __future__ import annotations

from tickwheel.metrics.window import TALLY_SECONDS, EndedTally

NOW_MS = 1_000_000_000


def test_counts_every_kind_of_end_and_nothing_else() -> None:
    tally = EndedTally()
    second = NOW_MS // 1000
    row = {"succeeded": 5, "failed": 1, "retried": 2, "started": 40, "trigger:3": 7}
    assert tally.update({second: row}, NOW_MS) == 8


def test_a_late_flush_into_a_second_already_read_is_added_once() -> None:
    tally = EndedTally()
    second = NOW_MS // 1000
    seconds = {second - 1: {"succeeded": 10}, second: {"succeeded": 3}}
    assert tally.update(seconds, NOW_MS) == 13
    assert tally.update(seconds, NOW_MS + 300) == 13  # read again: nothing new
    seconds = {second - 1: {"succeeded": 12}, second: {"succeeded": 9}}  # another node flushed
    assert tally.update(seconds, NOW_MS + 600) == 21


def test_seconds_long_past_are_let_go_without_taking_back_their_count() -> None:
    tally = EndedTally()
    second = NOW_MS // 1000
    assert tally.update({second: {"succeeded": 4}}, NOW_MS) == 4
    later = NOW_MS + (TALLY_SECONDS + 5) * 1000
    assert tally.update({second: {"succeeded": 4}}, later) == 4
    assert tally.update({later // 1000: {"failed": 1}}, later) == 5
