"""Fire-time previews: the same times the scheduler fires, with daylight saving told."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from tickwheel.core.cron import CronSpec, next_fire
from tickwheel.core.fire_times import ClockChange, upcoming

NEW_YORK = "America/New_York"


def local_times(spec: CronSpec, after: datetime, count: int) -> list[str]:
    return [f.local.strftime("%m-%d %H:%M %Z") for f in upcoming(spec, after, count)]


def test_a_fixed_time_job_in_the_spring_gap_runs_once_after_it_and_says_why() -> None:
    spec = CronSpec("30 2 * * *", NEW_YORK)
    firings = upcoming(spec, datetime(2026, 3, 7, 12, tzinfo=UTC), 3)
    assert [f.local.strftime("%m-%d %H:%M %Z") for f in firings] == [
        "03-08 03:00 EDT",  # 02:30 does not exist that day
        "03-09 02:30 EDT",
        "03-10 02:30 EDT",
    ]
    assert firings[0].change is ClockChange.FORWARD and not firings[0].repeated
    assert firings[0].note == (
        "clocks move forward 1 h at 02:00 on 2026-03-08 (EST to EDT): local times from"
        " 02:00 to 03:00 do not exist that day"
    )
    assert firings[1].change is None and firings[1].note is None


def test_a_wildcard_job_through_the_gap_skips_the_hour_that_does_not_exist() -> None:
    spec = CronSpec("0 */2 * * *", NEW_YORK)
    after = datetime(2026, 3, 8, 4, tzinfo=UTC)  # 23:00 EST the night before
    assert local_times(spec, after, 3) == ["03-08 00:00 EST", "03-08 04:00 EDT", "03-08 06:00 EDT"]
    assert [f.change for f in upcoming(spec, after, 3)] == [None, ClockChange.FORWARD, None]


def test_the_repeated_autumn_hour_is_named_copy_by_copy() -> None:
    wildcard = upcoming(CronSpec("30 * * * *", NEW_YORK), datetime(2026, 11, 1, 4, tzinfo=UTC), 4)
    assert [f.local.strftime("%H:%M %Z") for f in wildcard] == [
        "00:30 EDT",
        "01:30 EDT",
        "01:30 EST",
        "02:30 EST",
    ]
    assert [f.repeated for f in wildcard] == [False, True, True, False]
    assert wildcard[1].note == "01:30 happens twice on 2026-11-01: this is the first (EDT)"
    assert wildcard[2].change is ClockChange.BACK
    assert wildcard[2].note is not None and wildcard[2].note.startswith(
        "clocks move back 1 h at 02:00 on 2026-11-01 (EDT to EST): local times from 01:00"
        " to 02:00 happen twice that day; 01:30 happens twice on 2026-11-01: this is the second"
    )
    # A fixed-time job runs in the first copy only.
    fixed = upcoming(CronSpec("30 1 * * *", NEW_YORK), datetime(2026, 10, 31, 12, tzinfo=UTC), 3)
    assert [f.local.strftime("%m-%d %H:%M %Z") for f in fixed] == [
        "11-01 01:30 EDT",
        "11-02 01:30 EST",
        "11-03 01:30 EST",
    ]


def test_a_half_hour_shift_is_told_in_minutes() -> None:
    firings = upcoming(
        CronSpec("0 12 * * *", "Australia/Lord_Howe"), datetime(2026, 4, 4, tzinfo=UTC), 2
    )
    changed = [f for f in firings if f.change is not None]
    assert changed and "clocks move back 30 min" in (changed[0].note or "")


def test_an_expression_that_stops_firing_gives_what_there_is() -> None:
    assert upcoming(CronSpec("0 0 29 2 *"), datetime(2026, 1, 1, tzinfo=UTC), 2)[0].at == datetime(
        2028, 2, 29, tzinfo=UTC
    )


@given(
    expression=st.sampled_from(["*/7 * * * *", "30 2 * * *", "0 */3 * * 1-5", "@daily"]),
    timezone=st.sampled_from(["UTC", NEW_YORK, "Europe/Berlin", "Asia/Kolkata"]),
    jitter=st.integers(0, 3600),
    start=st.datetimes(datetime(2026, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC)),
)
def test_a_preview_is_what_the_scheduler_fires(
    expression: str, timezone: str, jitter: int, start: datetime
) -> None:
    spec = CronSpec(expression, timezone, jitter)
    previewed = [f.at for f in upcoming(spec, start, 5, schedule_key="s-1")]
    fired, moment = [], start
    for _ in range(5):
        moment = next_fire(spec, moment, schedule_key="s-1")
        fired.append(moment)
    assert previewed == fired
    assert all(
        f.local.utcoffset() == f.local.tzinfo.utcoffset(f.local) for f in upcoming(spec, start, 2)
    )  # type: ignore[union-attr]
