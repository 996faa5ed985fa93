"""Millisecond conversions (never early) and time-ordered task ids with stable partitions."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickwheel.clock import ManualClock, to_datetime, to_ms
from tickwheel.ids import new_id, partition_of

T0 = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
T0_MS = 1_700_000_000_000
# The API accepts any aware due_time; the largest is the last millisecond of year 9999.
MAX_MS = 253_402_300_799_999
MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z

aware_datetimes = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)


# --- to_ms ------------------------------------------------------------------------


def test_to_ms_of_a_known_instant() -> None:
    assert to_ms(T0) == T0_MS
    assert to_ms(datetime(1970, 1, 1, tzinfo=UTC)) == 0


@pytest.mark.parametrize(
    ("micros", "expected"),
    [(0, T0_MS), (1, T0_MS + 1), (500, T0_MS + 1), (999, T0_MS + 1), (1000, T0_MS + 1)],
)
def test_to_ms_rounds_sub_millisecond_times_up(micros: int, expected: int) -> None:
    assert to_ms(T0 + timedelta(microseconds=micros)) == expected


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC), 0),
        (datetime(1969, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC), -1),
        (datetime(1969, 12, 31, 23, 59, 59, 998_001, tzinfo=UTC), -1),
    ],
)
def test_to_ms_rounds_up_before_the_epoch_too(moment: datetime, expected: int) -> None:
    assert to_ms(moment) == expected


@given(moment=aware_datetimes)
def test_to_ms_is_never_early_and_less_than_a_ms_late(moment: datetime) -> None:
    ms = to_ms(moment)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert epoch + timedelta(milliseconds=ms - 1) < moment <= epoch + timedelta(milliseconds=ms)


@given(ms=st.integers(min_value=MIN_MS + 86_400_000, max_value=MAX_MS))
def test_to_ms_is_exact_for_whole_milliseconds(ms: int) -> None:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    assert to_ms(moment) == ms


def test_to_ms_depends_on_the_instant_not_the_offset() -> None:
    tokyo = T0.astimezone(timezone(timedelta(hours=9)))
    minus = T0.astimezone(timezone(timedelta(hours=-3, minutes=-30)))
    assert to_ms(tokyo) == to_ms(minus) == T0_MS


def test_to_ms_rejects_naive_datetimes() -> None:
    with pytest.raises(ValueError, match="naive"):
        to_ms(datetime(2024, 1, 1, 12, 0))


# --- to_datetime ------------------------------------------------------------------


def test_to_datetime_of_none_is_none() -> None:
    assert to_datetime(None) is None


def test_to_datetime_is_aware_utc() -> None:
    moment = to_datetime(T0_MS)
    assert moment == T0
    assert moment is not None and moment.utcoffset() == timedelta(0)


# 2 ** 33 seconds after the epoch (year 2242): beyond it a float of seconds is coarser
# than a microsecond.
FLOAT_EXACT_MS = 2**33 * 1000


@given(ms=st.integers(min_value=-(2**33) * 1000, max_value=FLOAT_EXACT_MS))
def test_to_datetime_round_trips_in_this_era(ms: int) -> None:
    moment = to_datetime(ms)
    assert moment is not None
    assert to_ms(moment) == ms
    assert moment.microsecond % 1000 == 0


@pytest.mark.parametrize(
    "ms",
    [
        8_615_791_432_179,  # 2243-01-09T19:23:52.179Z
        32_503_680_000_001,  # 3000-01-01T00:00:00.001Z
        MAX_MS,  # 9999-12-31T23:59:59.999Z
    ],
)
def test_to_datetime_round_trips_for_far_future_due_times(ms: int) -> None:
    moment = to_datetime(ms)
    assert moment == datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    assert moment is not None and to_ms(moment) == ms


# --- ManualClock -------------------------------------------------------------------


async def test_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock(T0_MS)
    await clock.sleep(0)  # nothing to wait for
    hour = asyncio.create_task(clock.sleep(3600))
    await asyncio.sleep(0)
    assert clock.now_ms() == T0_MS
    clock.advance(1.5)
    assert clock.now_ms() == T0_MS + 1_500
    await asyncio.sleep(0)
    assert not hour.done() and clock.sleeping() == 1


async def test_a_manual_sleep_ends_once_the_clock_moved_past_it() -> None:
    clock = ManualClock(T0_MS)
    second, hour = (asyncio.create_task(clock.sleep(s)) for s in (1, 3600))
    cancelled = asyncio.create_task(clock.sleep(2))
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    clock.advance(3599)  # past the second, and the cancelled sleep is left alone
    await second
    assert not hour.done() and clock.sleeping() == 1
    clock.advance(1)
    await hour
    assert clock.sleeping() == 0


# --- ids ---------------------------------------------------------------------------


def test_new_id_is_a_uuid_version_7_with_the_rfc_variant() -> None:
    for _ in range(100):
        text = new_id()
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # canonical lower-case hyphenated form
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122


def test_new_id_carries_the_current_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    parsed = uuid.UUID(new_id())
    after = time.time_ns() // 1_000_000
    assert before <= parsed.int >> 80 <= after


def test_new_ids_are_unique() -> None:
    ids = [new_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)


def test_later_ids_sort_after_earlier_ones() -> None:
    ids = []
    for _ in range(10):
        ids.append(new_id())
        time.sleep(0.002)
    assert sorted(ids) == ids
    assert len(set(ids)) == len(ids)


def test_partition_is_stable_across_processes() -> None:
    # Fixed values: a process-seeded hash (Python's hash()) would break these.
    assert partition_of("00000000-0000-7000-8000-000000000000", 16) == 7
    assert partition_of("0190f3a2-1c2b-7d4e-9f00-123456789abc", 16) == 13
    assert partition_of("0190f3a2-1c2b-7d4e-9f00-123456789abc", 1024) == 221


@given(task_id=st.text(max_size=64), partitions=st.integers(min_value=1, max_value=4096))
def test_partition_is_within_range_and_repeatable(task_id: str, partitions: int) -> None:
    partition = partition_of(task_id, partitions)
    assert 0 <= partition < partitions
    assert partition_of(task_id, partitions) == partition


def test_partitions_spread_new_ids_evenly() -> None:
    counts = Counter(partition_of(new_id(), 16) for _ in range(10_000))
    assert set(counts) == set(range(16))
    assert all(400 <= count <= 850 for count in counts.values()), counts
