"""Rate and concurrency limits: set, read and removed per task type, queue or limit
key (`core/limits.py`). A change takes effect within a second on every node."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response

from tickwheel.api.auth import Scope, needs
from tickwheel.api.routes import ERRORS, node_of
from tickwheel.api.schemas.limits import LimitIn, LimitOut, LimitsOut
from tickwheel.clock import to_datetime
from tickwheel.core.limits import MAX_NAME_CHARS, InvalidLimit, Limit, Rate, limit_id
from tickwheel.core.limits import Scope as LimitScope
from tickwheel.errors import InvalidRequest, TaskNotFound
from tickwheel.storage.records import LimitUse

router = APIRouter(tags=["limits"])
NAME = Annotated[str, Path(min_length=1, max_length=MAX_NAME_CHARS)]
LIMIT_ERRORS: dict[int | str, dict[str, Any]] = {404: ERRORS[404], 422: ERRORS[422]}


@router.put(
    "/api/limits/{scope}/{name:path}",
    response_model=LimitOut,
    responses={400: ERRORS[400], 422: ERRORS[422]},
    dependencies=needs(Scope.ADMIN),
)
async def put_limit(scope: LimitScope, name: NAME, body: LimitIn, request: Request) -> LimitOut:
    """Set the limit of a task type, a queue or a limit key (replacing the one it had).
    Tasks it holds back stay ready and start, in priority and due order, as it allows."""
    try:
        rate = None if body.rate is None else Rate.parse(body.rate)
        limit = Limit(scope, name, rate, body.concurrency)
    except InvalidLimit as error:
        raise InvalidRequest(error.field, str(error)) from None
    node = node_of(request)
    await node.store.put_limit(limit, node.clock.now_ms())
    return await _read(request, limit.id)


@router.get("/api/limits", response_model=LimitsOut, dependencies=needs(Scope.READ))
async def list_limits(request: Request) -> LimitsOut:
    """Every limit, with its use now."""
    node = node_of(request)
    uses = await node.store.limits_in_use(node.clock.now_ms())
    return LimitsOut(limits=[_out(u) for u in uses])


@router.get(
    "/api/limits/{scope}/{name:path}",
    response_model=LimitOut,
    responses=LIMIT_ERRORS,
    dependencies=needs(Scope.READ),
)
async def get_limit(scope: LimitScope, name: NAME, request: Request) -> LimitOut:
    """One limit, with its use now."""
    return await _read(request, limit_id(scope, name))


@router.delete(
    "/api/limits/{scope}/{name:path}",
    status_code=204,
    responses=LIMIT_ERRORS,
    dependencies=needs(Scope.ADMIN),
)
async def delete_limit(scope: LimitScope, name: NAME, request: Request) -> Response:
    """Remove a limit: the tasks it held back go at once."""
    node = node_of(request)
    if not await node.store.delete_limit(limit_id(scope, name), node.clock.now_ms()):
        raise TaskNotFound(f"no limit is set on {scope} {name}")
    return Response(status_code=204)


async def _read(request: Request, lid: str) -> LimitOut:
    node = node_of(request)
    found = await node.store.limits_in_use(node.clock.now_ms(), lid)
    if not found:
        raise TaskNotFound(f"no limit is set on {lid.replace(':', ' ', 1)}")
    return _out(found[0])


def _out(use: LimitUse) -> LimitOut:
    limit = use.limit
    updated = to_datetime(use.updated_ms)
    assert updated is not None
    return LimitOut(
        scope=str(limit.scope),
        name=limit.name,
        rate=None if limit.rate is None else str(limit.rate),
        concurrency=limit.concurrency,
        started_in_window=use.started_in_window,
        running=use.running,
        held=use.held,
        updated_at=updated,
    )
