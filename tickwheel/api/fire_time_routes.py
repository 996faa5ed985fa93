"""Fire-time previews: when a stored schedule, or a cron expression before it is
submitted, fires next, daylight-saving changes told (`core/fire_times.py`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from tickwheel.api.auth import Scope, needs
from tickwheel.api.routes import ERRORS, node_of
from tickwheel.api.schemas.ops import FireTimeOut, FireTimesOut
from tickwheel.clock import to_datetime
from tickwheel.core.cron import CronSpec, InvalidCronExpression
from tickwheel.core.fire_times import MAX_COUNT, Firing, upcoming
from tickwheel.errors import InvalidRequest, TaskNotFound

router = APIRouter(tags=["schedules"])
PREVIEW_ERRORS: dict[int | str, dict[str, Any]] = {404: ERRORS[404], 422: ERRORS[422]}
COUNT = Annotated[int, Query(ge=1, le=MAX_COUNT, description="How many fire times")]


@router.get(
    "/api/schedules/{schedule_id}/next",
    response_model=FireTimesOut,
    responses=PREVIEW_ERRORS,
    dependencies=needs(Scope.READ),
)
async def schedule_fire_times(
    request: Request,
    schedule_id: Annotated[str, Path(max_length=64)],
    count: COUNT = 10,
) -> FireTimesOut:
    """A stored schedule's next fire times from now, as its scheduler will fire them
    (its jitter included)."""
    node = node_of(request)
    found = await node.store.get_schedule(schedule_id)
    if found is None:
        raise TaskNotFound(f"no schedule has the id {schedule_id}")
    spec = CronSpec(found.cron_expression, found.timezone, found.jitter_seconds)
    firings = upcoming(spec, _now(request), count, schedule_key=schedule_id)
    return _out(spec, firings, schedule_id=schedule_id, status=found.status)


@router.get(
    "/api/cron/next",
    response_model=FireTimesOut,
    responses={422: ERRORS[422]},
    dependencies=needs(Scope.READ),
)
async def cron_fire_times(
    request: Request,
    cron_expression: Annotated[str, Query(min_length=1, max_length=200)],
    timezone: Annotated[str, Query(min_length=1, max_length=64)] = "UTC",
    count: COUNT = 10,
) -> FireTimesOut:
    """When a cron expression would fire in a time zone, before submitting it. A
    schedule's jitter shifts these by a fixed offset of its own, known once it has an
    id (`GET /api/schedules/{id}/next`)."""
    try:
        spec = CronSpec(cron_expression, timezone)
    except InvalidCronExpression as error:
        raise InvalidRequest("cron_expression", str(error)) from None
    except ValueError as error:  # an unknown time zone
        raise InvalidRequest("timezone", str(error)) from None
    return _out(spec, upcoming(spec, _now(request), count))


def _now(request: Request) -> datetime:
    """The cluster's time, by the node's clock (the store's, in a cluster)."""
    now = to_datetime(node_of(request).clock.now_ms())
    assert now is not None
    return now


def _out(
    spec: CronSpec,
    firings: list[Firing],
    *,
    schedule_id: str | None = None,
    status: str | None = None,
) -> FireTimesOut:
    return FireTimesOut(
        cron_expression=spec.expression,
        timezone=spec.timezone,
        jitter_seconds=spec.jitter_seconds,
        schedule_id=schedule_id,
        status=status,
        fire_times=[
            FireTimeOut(
                fire_time=f.at,
                local_time=f.local,
                clock_change=None if f.change is None else str(f.change),
                repeated=f.repeated,
                note=f.note,
            )
            for f in firings
        ],
    )
