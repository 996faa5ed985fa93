from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwheel.core.cron import (
    CronSpec,
    InvalidCronExpression,
    MisfirePolicy,
    OverlapPolicy,
    UnknownTimezone,
    jitter_offset,
    next_fire,
    validate,
)

KEY = "schedule-1"


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def fires(spec: CronSpec, after: datetime, count: int, key: str = KEY) -> list[datetime]:
    found: list[datetime] = []
    for _ in range(count):
        after = next_fire(spec, after, schedule_key=key)
        found.append(after)
    return found


# --- expressions and macros -------------------------------------------------

FRIDAY = utc(2026, 5, 15, 10, 20)


@pytest.mark.parametrize(
    ("macro", "expected"),
    [
        ("@yearly", utc(2027, 1, 1)),
        ("@annually", utc(2027, 1, 1)),
        ("@monthly", utc(2026, 6, 1)),
        ("@weekly", utc(2026, 5, 17)),  # the next Sunday
        ("@daily", utc(2026, 5, 16)),
        ("@midnight", utc(2026, 5, 16)),
        ("@hourly", utc(2026, 5, 15, 11)),
    ],
)
def test_macros(macro: str, expected: datetime) -> None:
    assert next_fire(CronSpec(macro), FRIDAY, schedule_key=KEY) == expected


@pytest.mark.parametrize("macro", [" @Daily ", "@HOURLY"])
def test_macros_ignore_case_and_surrounding_space(macro: str) -> None:
    validate(macro, "UTC")


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "0 fields"),
        ("banana", "1 fields"),
        ("* * * *", "4 fields, expected 5"),
        ("0 0 * * * *", "seconds are not supported"),
        ("* * * * * * *", "7 fields"),
        ("60 * * * *", "bad minute field '60'"),
        ("0 24 * * *", "bad hour field '24'"),
        ("0 0 32 * *", "bad day-of-month field '32'"),
        ("0 0 0 * *", "bad day-of-month field '0'"),
        ("0 0 * 13 *", "bad month field '13'"),
        ("0 0 * * 8", "bad day-of-week field '8'"),
        ("*/0 * * * *", "bad minute field '*/0'"),
        ("5-1 * * * *", "bad minute field '5-1'"),
        ("a b c d e", "bad minute field 'a'"),
        ("0 0 * JANUARY *", "bad month field 'JANUARY'"),
        ("0 0 31 2 *", "never match together"),
        ("* * */10 4 5L", "never fires"),
        ("@reboot", "unsupported macro '@reboot'"),
        ("@every 5m", "unsupported macro"),
    ],
)
def test_invalid_expressions(expression: str, message: str) -> None:
    with pytest.raises(InvalidCronExpression, match=re.escape(message)) as caught:
        validate(expression, "UTC")
    assert isinstance(caught.value, ValueError)
    with pytest.raises(InvalidCronExpression):
        CronSpec(expression)


@pytest.mark.parametrize(
    "expression", ["*/5 9-17 * * MON-FRI", "0 0 L * *", "0 12 * * 5L", "15 3 1,15 JAN,JUL *"]
)
def test_valid_expressions(expression: str) -> None:
    validate(expression, "Europe/Berlin")


@given(st.text(alphabet="0123456789*/-,#LW ADEFJMNOSTU", max_size=30))
def test_arbitrary_text_is_valid_or_invalid_cron_expression(expression: str) -> None:
    with contextlib.suppress(InvalidCronExpression):
        validate(expression, "UTC")


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "", "America", "../etc/passwd", "/etc/x"])
def test_unknown_timezone(zone: str) -> None:
    with pytest.raises(UnknownTimezone, match="unknown time zone") as caught:
        validate("* * * * *", zone)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(UnknownTimezone):
        CronSpec("* * * * *", timezone=zone)


@pytest.mark.parametrize("jitter", [-1, 86_401])
def test_jitter_out_of_range(jitter: int) -> None:
    with pytest.raises(ValueError, match="jitter_seconds"):
        CronSpec("* * * * *", jitter_seconds=jitter)


def test_spec_defaults_and_bounds() -> None:
    assert CronSpec("* * * * *") == CronSpec("* * * * *", "UTC", 0)
    CronSpec("* * * * *", jitter_seconds=86_400)


def test_policies_are_string_enums() -> None:
    assert MisfirePolicy("run_once") is MisfirePolicy.RUN_ONCE
    assert [p.value for p in MisfirePolicy] == ["run_once", "skip", "run_all"]
    assert [p.value for p in OverlapPolicy] == ["allow", "skip"]


# --- next_fire --------------------------------------------------------------


def test_naive_datetimes_are_rejected() -> None:
    spec = CronSpec("* * * * *")
    with pytest.raises(ValueError, match="after must be timezone-aware"):
        next_fire(spec, datetime(2026, 1, 1), schedule_key=KEY)


def test_next_fire_is_strictly_after() -> None:
    spec = CronSpec("0 * * * *")
    assert next_fire(spec, utc(2026, 1, 1, 5), schedule_key=KEY) == utc(2026, 1, 1, 6)
    just_before = utc(2026, 1, 1, 5) - timedelta(microseconds=1)
    assert next_fire(spec, just_before, schedule_key=KEY) == utc(2026, 1, 1, 5)


def test_next_fire_returns_utc_for_any_input_zone() -> None:
    spec = CronSpec("0 9 * * *", "Europe/Berlin")
    in_tokyo = utc(2026, 6, 1).astimezone(ZoneInfo("Asia/Tokyo"))
    fired = next_fire(spec, in_tokyo, schedule_key=KEY)
    assert fired == utc(2026, 6, 1, 7)  # 09:00 CEST
    assert fired.tzinfo is UTC


# --- daylight saving --------------------------------------------------------

NEW_YORK, BERLIN = "America/New_York", "Europe/Berlin"


@pytest.mark.parametrize(
    ("expression", "zone", "after", "expected"),
    [
        # New York, 2026-03-08: 02:00 EST (07:00Z) jumps to 03:00 EDT.
        pytest.param(
            "30 2 * * *", NEW_YORK, utc(2026, 3, 7, 12),
            [utc(2026, 3, 8, 7), utc(2026, 3, 9, 6, 30)],
            id="ny-gap-fixed-time-runs-once-at-03:00-EDT",
        ),
        pytest.param(
            "0 2 * * *", NEW_YORK, utc(2026, 3, 7, 12),
            [utc(2026, 3, 8, 7), utc(2026, 3, 9, 6)],
            id="ny-gap-fixed-time-on-the-hour",
        ),
        pytest.param(
            "*/15 * * * *", NEW_YORK, utc(2026, 3, 8, 6, 40),
            [utc(2026, 3, 8, 6, 45), utc(2026, 3, 8, 7), utc(2026, 3, 8, 7, 15)],
            id="ny-gap-wildcard-runs-on-elapsed-time",
        ),
        pytest.param(
            "0 */2 * * *", NEW_YORK, utc(2026, 3, 8, 4, 30),
            [utc(2026, 3, 8, 5), utc(2026, 3, 8, 8)],
            id="ny-gap-step-hour-skips-the-missing-02:00",
        ),
        # New York, 2026-11-01: 02:00 EDT (06:00Z) falls back to 01:00 EST.
        pytest.param(
            "30 1 * * *", NEW_YORK, utc(2026, 10, 31, 12),
            [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)],
            id="ny-repeat-fixed-time-runs-once-in-first-copy",
        ),
        pytest.param(
            "30 1 * * *", NEW_YORK, utc(2026, 11, 1, 6, 10),
            [utc(2026, 11, 2, 6, 30)],
            id="ny-repeat-fixed-time-not-again-from-second-copy",
        ),
        pytest.param(
            "*/15 * * * *", NEW_YORK, utc(2026, 11, 1, 4, 50),
            [utc(2026, 11, 1, 5) + timedelta(minutes=15 * i) for i in range(9)],
            id="ny-repeat-wildcard-runs-through-both-copies",
        ),
        pytest.param(
            "0 * * * *", NEW_YORK, utc(2026, 11, 1, 4, 30),
            [utc(2026, 11, 1, 5), utc(2026, 11, 1, 6), utc(2026, 11, 1, 7)],
            id="ny-repeat-hourly-runs-in-both-copies",
        ),
        # Berlin, 2026-03-29: 02:00 CET (01:00Z) jumps to 03:00 CEST.
        pytest.param(
            "30 2 * * *", BERLIN, utc(2026, 3, 28, 12),
            [utc(2026, 3, 29, 1), utc(2026, 3, 30, 0, 30)],
            id="berlin-gap-fixed-time-runs-once-at-03:00-CEST",
        ),
        pytest.param(
            "*/15 * * * *", BERLIN, utc(2026, 3, 29, 0, 40),
            [utc(2026, 3, 29, 0, 45), utc(2026, 3, 29, 1), utc(2026, 3, 29, 1, 15)],
            id="berlin-gap-wildcard-runs-on-elapsed-time",
        ),
        # Berlin, 2026-10-25: 03:00 CEST (01:00Z) falls back to 02:00 CET.
        pytest.param(
            "30 2 * * *", BERLIN, utc(2026, 10, 24, 12),
            [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)],
            id="berlin-repeat-fixed-time-runs-once-in-first-copy",
        ),
        pytest.param(
            "30 2 * * *", BERLIN, utc(2026, 10, 25, 1, 10),
            [utc(2026, 10, 26, 1, 30)],
            id="berlin-repeat-fixed-time-not-again-from-second-copy",
        ),
        pytest.param(
            "*/15 * * * *", BERLIN, utc(2026, 10, 24, 23, 50),
            [utc(2026, 10, 25) + timedelta(minutes=15 * i) for i in range(10)],
            id="berlin-repeat-wildcard-runs-through-both-copies",
        ),
        pytest.param(
            "0 */2 * * *", BERLIN, utc(2026, 10, 24, 23, 30),
            [utc(2026, 10, 25, 0), utc(2026, 10, 25, 1), utc(2026, 10, 25, 3)],
            id="berlin-repeat-step-hour-runs-in-both-copies",
        ),
    ],
)  # fmt: skip
def test_daylight_saving(
    expression: str, zone: str, after: datetime, expected: list[datetime]
) -> None:
    assert fires(CronSpec(expression, zone), after, len(expected)) == expected


# --- jitter -----------------------------------------------------------------


def test_jitter_offset_is_stable_across_calls_and_processes() -> None:
    # A fixed value: hash() would change with PYTHONHASHSEED, sha256 does not.
    assert jitter_offset("nightly-report", 3600) == 743
    assert jitter_offset("nightly-report", 3600) == jitter_offset("nightly-report", 3600)


@given(st.text(), st.integers(1, 86_400))
def test_jitter_offset_is_within_range(key: str, jitter: int) -> None:
    assert 0 <= jitter_offset(key, jitter) < jitter


def test_jitter_offset_spreads_schedules() -> None:
    assert len({jitter_offset(f"schedule-{i}", 3600) for i in range(50)}) > 40


def test_jitter_offset_rejects_negative() -> None:
    with pytest.raises(ValueError, match="jitter_seconds"):
        jitter_offset(KEY, -1)


def test_zero_jitter_is_exact() -> None:
    assert jitter_offset(KEY, 0) == 0
    spec = CronSpec("0 * * * *", jitter_seconds=0)
    assert next_fire(spec, utc(2026, 1, 1, 5, 30), schedule_key=KEY) == utc(2026, 1, 1, 6)


def test_jitter_shifts_and_preserves_the_period() -> None:
    spec = CronSpec("0 * * * *", jitter_seconds=3600)
    offset = timedelta(seconds=jitter_offset(KEY, 3600))
    after = utc(2026, 1, 1, 5, 30)
    found = fires(spec, after, 5)
    assert found[0] > after
    assert all(later - earlier == timedelta(hours=1) for earlier, later in pairwise(found))
    assert all((fired - offset).minute == (fired - offset).second == 0 for fired in found)


def test_jittered_fire_is_strictly_after_a_previous_fire() -> None:
    spec = CronSpec("0 * * * *", jitter_seconds=3600)
    fired = next_fire(spec, utc(2026, 1, 1), schedule_key=KEY)
    assert next_fire(spec, fired, schedule_key=KEY) == fired + timedelta(hours=1)


# --- properties -------------------------------------------------------------

# Zones with whole-hour DST away from midnight. Zones that spring forward at local
# midnight (America/Santiago, America/Havana) are a documented limit of cronsim: a
# range-of-hours job can skip the first hour after the gap (see tickwheel/core/cron.py).
ZONES = ["UTC", BERLIN, NEW_YORK, "Asia/Kolkata"]
TRANSITIONS = [
    utc(2026, 3, 8, 7),  # New York spring forward
    utc(2026, 11, 1, 6),  # New York fall back
    utc(2026, 3, 29, 1),  # Berlin spring forward
    utc(2026, 10, 25, 1),  # Berlin fall back
    utc(2026, 4, 5, 3),  # Santiago fall back
    utc(2026, 9, 6, 4),  # Santiago spring forward
]

expressions = st.builds(
    " ".join,
    st.tuples(
        st.sampled_from(["*", "0", "30", "*/15", "5,35", "0-10/5", "59"]),
        st.sampled_from(["*", "0", "1", "2", "*/2", "1-3", "0,12", "23"]),
        st.sampled_from(["*", "1", "15", "L", "*/10"]),
        st.sampled_from(["*", "3", "*/3", "10,11"]),
        st.sampled_from(["*", "0", "1-5", "SUN"]),
    ),
) | st.sampled_from(["@hourly", "@daily", "@weekly", "@monthly", "@yearly"])
specs = st.builds(
    CronSpec, expressions, st.sampled_from(ZONES), st.sampled_from([0, 0, 1, 59, 3600, 5400])
)
zones = st.sampled_from([ZoneInfo(name) for name in ZONES])
near_transitions = st.builds(
    lambda at, seconds, zone: (at + timedelta(seconds=seconds)).astimezone(zone),
    st.sampled_from(TRANSITIONS),
    st.integers(-6 * 3600, 6 * 3600),
    zones,
)
moments = near_transitions | st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2028, 1, 1), timezones=zones
)


@settings(max_examples=300, deadline=None)
@given(specs, moments, st.text(max_size=8), st.floats(0, 1, exclude_max=True), zones)
def test_next_fire_is_after_and_stable_until_it_fires(
    spec: CronSpec, after: datetime, key: str, fraction: float, zone: ZoneInfo
) -> None:
    fired = next_fire(spec, after, schedule_key=key)
    assert fired > after
    # Arithmetic in UTC: wall-clock arithmetic on an aware local time ignores fold.
    start = after.astimezone(UTC)
    between = (start + (fired - start) * fraction).astimezone(zone)
    if between < fired:
        assert next_fire(spec, between, schedule_key=key) == fired
