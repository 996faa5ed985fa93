"""Fire-time previews: when a cron schedule fires next, exactly as the scheduler will
fire it (`cron.next_fire`, jitter included), with the daylight-saving changes that move,
skip or repeat its local times said in words.

A preview names, for each fire time, the clock change (if any) since the fire time
before it, and whether its local time happens twice that day. Which instances a change
moves or drops is `cron`'s rule (its module docstring); this module only tells it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from enum import StrEnum

from tickwheel.core.cron import CronSpec, InvalidCronExpression, next_fire, zone

MAX_COUNT = 100  # fire times one preview may ask for


class ClockChange(StrEnum):
    FORWARD = "forward"  # local times were skipped (spring)
    BACK = "back"  # local times were repeated (autumn)


@dataclass(frozen=True, slots=True)
class Firing:
    at: datetime  # UTC
    local: datetime  # in the schedule's time zone
    change: ClockChange | None  # the clock change since the fire time before it
    repeated: bool  # its local time happens twice that day
    note: str | None  # the change and the repetition, in words


def upcoming(
    spec: CronSpec, after: datetime, count: int, *, schedule_key: str = ""
) -> list[Firing]:
    """The next `count` fire times strictly after `after` (fewer if the expression
    stops firing); `schedule_key` is the schedule's id, which its jitter follows."""
    where = zone(spec.timezone)
    found: list[Firing] = []
    previous = after
    for _ in range(count):
        try:
            at = next_fire(spec, previous, schedule_key=schedule_key)
        except InvalidCronExpression:  # no fire time within the next 50 years
            break
        found.append(_firing(at, previous, where))
        previous = at
    return found


def _firing(at: datetime, previous: datetime, where: tzinfo) -> Firing:
    local = at.astimezone(where)
    before = previous.astimezone(where)
    notes = []
    change = None
    shift = _offset(local) - _offset(before)
    if shift:
        change = ClockChange.FORWARD if shift > timedelta(0) else ClockChange.BACK
        notes.append(_told(_transition(previous, at, where), shift, where))
    repeated = _offset(local.replace(fold=1 - local.fold)) != _offset(local)
    if repeated:
        copy = "first" if local.fold == 0 else "second"
        notes.append(
            f"{local:%H:%M} happens twice on {local:%Y-%m-%d}: this is the {copy} ({local:%Z})"
        )
    return Firing(at, local, change, repeated, "; ".join(notes) or None)


def _offset(moment: datetime) -> timedelta:
    offset = moment.utcoffset()
    assert offset is not None  # aware by construction
    return offset


def _transition(start: datetime, end: datetime, where: tzinfo) -> datetime:
    """The first instant of (start, end] whose offset is end's, to the second: a
    bisection over UTC instants, since zoneinfo does not list its transitions."""
    target = _offset(end.astimezone(where))
    low, high = start, end
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if _offset(middle.astimezone(where)) == target:
            high = middle
        else:
            low = middle
    return high.replace(microsecond=0).astimezone(where)


def _told(moment: datetime, shift: timedelta, where: tzinfo) -> str:
    """A clock change in words: when, which way, and the local times it skips or
    repeats."""
    size = _duration(abs(shift))
    # A second before, by UTC arithmetic: an aware datetime's own arithmetic is wall time.
    was = (moment.astimezone(UTC) - timedelta(seconds=1)).astimezone(where)
    if shift > timedelta(0):
        skipped_from = moment.replace(tzinfo=None) - shift
        return (
            f"clocks move forward {size} at {skipped_from:%H:%M} on {moment:%Y-%m-%d}"
            f" ({was:%Z} to {moment:%Z}): local times from {skipped_from:%H:%M} to"
            f" {moment:%H:%M} do not exist that day"
        )
    return (
        f"clocks move back {size} at {was.replace(tzinfo=None) + timedelta(seconds=1):%H:%M} on"
        f" {moment:%Y-%m-%d} ({was:%Z} to {moment:%Z}): local times from {moment:%H:%M}"
        f" to {moment.replace(tzinfo=None) + abs(shift):%H:%M} happen twice that day"
    )


def _duration(span: timedelta) -> str:
    minutes = int(span.total_seconds()) // 60
    hours, minutes = divmod(minutes, 60)
    if minutes == 0:
        return f"{hours} h"
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"
