"""Cron resolution: when does a schedule fire next.

Pure functions over :class:`CronSpec`. Times come in as aware datetimes and go out in
UTC; nothing here reads the clock. Parsing and iteration are cronsim's; this module
adds macros, the 5-field rule, time zones, jitter and misfire handling.

Daylight saving follows Debian's cron (and cronsim). A job is *fixed-time* when
neither its minute nor its hour field starts with ``*`` (``30 2 * * *``,
``0 9-17 * * 1-5``, ``@daily``); every other job is *wildcard* (``*/15 * * * *``,
``0 * * * *``, ``0 */2 * * *``, ``@hourly``).

- Spring forward, fixed-time: an instance at a skipped local time runs once, at the
  first valid moment after the gap (``30 2 * * *`` in New York on 2026-03-08 runs at
  03:00 EDT).
- Spring forward, wildcard: real elapsed time; local times inside the gap do not
  exist, so their instances simply do not happen (``0 */2 * * *`` goes from 00:00 EST
  to 04:00 EDT that night).
- Fall back, fixed-time: an instance in the repeated hour runs once, in the first
  copy (``30 1 * * *`` in New York on 2026-11-01 runs at 01:30 EDT only).
- Fall back, wildcard: real elapsed time through both copies of the hour
  (``*/15 * * * *`` fires at 01:00, 01:15, ... EDT, then again 01:00, ... EST).

Known limits of cronsim: it assumes whole-hour DST shifts, so in Australia/Lord_Howe
(30 minutes) wildcard jobs can skip instances around its transitions; and in zones that
spring forward at local midnight (America/Santiago, America/Havana) a job on a range of
hours (``* 1-3 * * 0``) can skip the first hour after the gap.

Jitter shifts a whole schedule by a stable per-schedule offset, so every schedule keeps
its exact period. :class:`MisfirePolicy` and :class:`OverlapPolicy` are applied by the
engine's cron resolver (``tickwheel/engine/schedules.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

__all__ = [
    "CronSpec",
    "InvalidCronExpression",
    "MisfirePolicy",
    "OverlapPolicy",
    "UnknownTimezone",
    "jitter_offset",
    "next_fire",
    "validate",
    "zone",
]


class InvalidCronExpression(ValueError):
    """The cron expression is not a valid 5-field expression or supported macro."""


class UnknownTimezone(ValueError):
    """The time zone is not a known IANA name."""


class MisfirePolicy(StrEnum):
    """What to do with fire times missed while the scheduler was down."""

    RUN_ONCE = "run_once"
    SKIP = "skip"
    RUN_ALL = "run_all"


class OverlapPolicy(StrEnum):
    """Whether a run may start while the previous one is still going (engine enforces)."""

    ALLOW = "allow"
    SKIP = "skip"


_MAX_JITTER_SECONDS = 86_400

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
# Any aware instant will do: cronsim parses in its constructor.
_PARSE_AT = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class CronSpec:
    """A validated cron schedule: expression, IANA time zone and jitter."""

    expression: str
    timezone: str = "UTC"
    jitter_seconds: int = 0

    def __post_init__(self) -> None:
        validate(self.expression, self.timezone)
        if not 0 <= self.jitter_seconds <= _MAX_JITTER_SECONDS:
            raise ValueError(
                f"jitter_seconds must be between 0 and {_MAX_JITTER_SECONDS}, "
                f"got {self.jitter_seconds}"
            )


def validate(expression: str, timezone: str) -> None:
    """Raise InvalidCronExpression or UnknownTimezone unless both are usable."""
    zone(timezone)
    _check_fields(_expand(expression))


def next_fire(spec: CronSpec, after: datetime, *, schedule_key: str) -> datetime:
    """First fire time strictly after ``after``, in UTC, jitter included."""
    offset = timedelta(seconds=jitter_offset(schedule_key, spec.jitter_seconds))
    # Shift the whole schedule rather than each fire, so the period stays exact.
    return _next_instance(spec, _utc(after, "after") - offset) + offset


def jitter_offset(schedule_key: str, jitter_seconds: int) -> int:
    """Stable offset in ``[0, jitter_seconds)`` seconds for this schedule; 0 when off."""
    if jitter_seconds < 0:
        raise ValueError(f"jitter_seconds must not be negative, got {jitter_seconds}")
    if jitter_seconds == 0:
        return 0
    # hashlib, not hash(): the offset must agree across processes and restarts.
    digest = hashlib.sha256(schedule_key.encode()).digest()
    return int.from_bytes(digest[:8], "big") % jitter_seconds


def zone(name: str) -> tzinfo:
    """The IANA time zone `name`; UnknownTimezone if there is none."""
    try:
        return ZoneInfo(name)
    # Malformed keys raise ValueError, directories and overlong names OSError.
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownTimezone(f"unknown time zone {name!r}") from None


def _expand(expression: str) -> str:
    """The expression with a supported macro replaced by its 5-field form."""
    text = expression.strip()
    return _MACROS.get(text.lower(), text)


def _check_fields(text: str) -> None:
    if text.startswith("@"):
        raise InvalidCronExpression(f"unsupported macro {text!r}; use one of {', '.join(_MACROS)}")
    parts = text.split()
    if len(parts) == 6:
        raise InvalidCronExpression(
            f"{text!r} has 6 fields; seconds are not supported, use 5 fields: "
            "minute hour day-of-month month day-of-week"
        )
    if len(parts) != 5:
        raise InvalidCronExpression(
            f"{text!r} has {len(parts)} fields, expected 5: "
            "minute hour day-of-month month day-of-week"
        )
    try:
        next(CronSim(text, _PARSE_AT))
    except CronSimError as exc:
        raise InvalidCronExpression(f"{text!r}: {_explain(parts, exc)}") from None
    except StopIteration:
        # cronsim accepts some never-matching combinations, e.g. "* * */10 4 5L".
        raise InvalidCronExpression(f"{text!r} never fires: no date matches all fields") from None


def _explain(parts: list[str], exc: CronSimError) -> str:
    # cronsim names the field but not the value; probe each field alone to find it.
    for index, token in enumerate(parts):
        probe = ["*"] * len(_FIELDS)
        probe[index] = token
        try:
            CronSim(" ".join(probe), _PARSE_AT)
        except CronSimError:
            return f"bad {_FIELDS[index]} field {token!r}"
    return f"{exc}: the fields never match together (e.g. day 31 in February)"


def _utc(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {moment.isoformat()}")
    return moment.astimezone(UTC)


def _next_instance(spec: CronSpec, after: datetime) -> datetime:
    """The cron instance strictly after ``after`` (UTC), without jitter."""
    instances = CronSim(_expand(spec.expression), after.astimezone(zone(spec.timezone)))
    try:
        found = next(instances).astimezone(UTC)
        # Fixed-time jobs iterate on local wall time, so from the second copy of a
        # repeated hour cronsim can yield the first copy, which is already past.
        while found <= after:
            found = next(instances).astimezone(UTC)
    except StopIteration:
        raise InvalidCronExpression(
            f"{spec.expression!r} has no fire time within 50 years after {after}"
        ) from None
    return found
