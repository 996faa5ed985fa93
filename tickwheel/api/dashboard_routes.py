"""The dashboard: its static page at `/`, and `/api/stream`, the Server-Sent Events
stream that keeps it live (a `stats` event every second, the body of `/api/stats`).

One stream per open page, each reading the node's cached stats: many viewers cost
one store query a second, not one each. Streams are bounded in number, and each ends
when the server begins to exit, so an open dashboard never holds up a shutdown.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, StreamingResponse
from starlette.staticfiles import StaticFiles

from tickwheel.api.auth import Scope, needs
from tickwheel.api.routes import node_of
from tickwheel.errors import Overloaded, StoreUnavailable

STATIC = resources.files("tickwheel.dashboard").joinpath("static")
STREAM_INTERVAL_SECONDS = 1.0

router = APIRouter()
StatsOf = Callable[[Request], Awaitable[dict[str, Any]]]


def static_files() -> StaticFiles:
    return StaticFiles(directory=str(STATIC))


@router.get("/", include_in_schema=False)
async def dashboard() -> FileResponse:
    return FileResponse(str(STATIC.joinpath("index.html")), headers={"Cache-Control": "no-cache"})


@router.get(
    "/api/stream",
    dependencies=needs(Scope.READ),
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream(request: Request) -> StreamingResponse:
    """Server-Sent Events: a `stats` event every second (the body of `/api/stats`), or
    an `outage` event naming the dependencies down while the stats cannot be read."""
    state = request.app.state
    if state.streams >= state.node.settings.max_streams:
        raise Overloaded(5, "too many dashboard streams are open")
    return StreamingResponse(
        _events(request),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _events(request: Request) -> AsyncIterator[str]:
    state = request.app.state
    stats_of: StatsOf = state.stats_of
    exiting: Callable[[], bool] = state.exiting
    state.streams += 1  # here, not in the route: a stream never started is never counted
    try:
        yield "retry: 1000\n\n"
        while not exiting() and not await request.is_disconnected():
            try:
                yield f"event: stats\ndata: {json.dumps(await stats_of(request))}\n\n"
            except StoreUnavailable as error:  # the page stays up and says why
                outage = {"outages": node_of(request).outages(), "error": error.code}
                yield f"event: outage\ndata: {json.dumps(outage)}\n\n"
            await asyncio.sleep(STREAM_INTERVAL_SECONDS)
    finally:
        state.streams -= 1
