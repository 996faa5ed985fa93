"""The ASGI application: the API of one node, with its state on the app instance."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp

from tickwheel.api import bodies, errors
from tickwheel.api.auth import Tokens, auth_error
from tickwheel.api.dashboard_routes import router as dashboard_router
from tickwheel.api.dashboard_routes import static_files
from tickwheel.api.fire_time_routes import router as fire_time_router
from tickwheel.api.host import Host
from tickwheel.api.limit_routes import router as limit_router
from tickwheel.api.limits import BodyLimit
from tickwheel.api.ops_routes import router as ops_router
from tickwheel.api.routes import router
from tickwheel.api.schemas.tasks import BatchIn
from tickwheel.api.stats_routes import StatusCounts, stats_payload
from tickwheel.api.stats_routes import router as stats_router
from tickwheel.api.worker_routes import router as worker_router
from tickwheel.api.workflow_routes import router as workflow_router
from tickwheel.errors import Forbidden, Unauthorized

# Room for the rest of a task body around the largest payload.
BODY_OVERHEAD_BYTES = 64 * 1024


def create_app(
    node: Host,
    *,
    manage_node: bool = True,
    exiting: Callable[[], bool] = lambda: False,
    grace_left: Callable[[], float | None] = lambda: None,
) -> ASGIApp:
    """The API for `node`; with `manage_node` the app starts and stops the node itself.
    `exiting` tells long-lived responses (the dashboard's streams) to end: the server
    is shutting down; `grace_left`, what is left then of the shutdown grace (None: all
    of it) for the node to stop in."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if manage_node:
            await node.start()
        try:
            yield
        finally:
            if manage_node:
                await node.stop(grace_left())

    app = FastAPI(
        title="Tickwheel",
        version="0.1.0",
        description="A job scheduler on a hierarchical timing wheel.",
        lifespan=lifespan,
        **_telemetry(traced=node.settings.tracing),
    )
    app.state.node = node
    app.state.exiting = exiting
    app.state.streams = 0
    app.state.tokens = Tokens(lambda: node.store)
    app.state.status_counts = StatusCounts(lambda: node.service.count_by_status())
    app.state.stats_of = stats_payload
    errors.install(app)
    app.add_exception_handler(Unauthorized, auth_error)
    app.add_exception_handler(Forbidden, auth_error)
    app.include_router(router)
    app.include_router(worker_router)
    app.include_router(workflow_router)
    app.include_router(ops_router)
    app.include_router(fire_time_router)
    app.include_router(limit_router)
    app.include_router(stats_router)
    app.include_router(dashboard_router)
    app.mount("/static", static_files(), name="static")
    bodies.install(app, [BatchIn])  # the bodies read by `bodies.read`
    limited = BodyLimit(
        app,
        max_bytes=node.settings.max_payload_bytes + BODY_OVERHEAD_BYTES,
        per_path={
            "/api/tasks/batch": node.settings.max_batch_bytes,
            "/api/workflows": node.settings.max_batch_bytes,
            "/api/workflows/recurring": node.settings.max_batch_bytes,
        },
    )
    return errors.AnswerWhenCancelled(limited)


def _telemetry(*, traced: bool) -> dict[str, Any]:
    """FastAPI's own OpenTelemetry spans (FastAPI 0.165 on, wherever opentelemetry is
    importable) only with Tickwheel's tracing on: off, tracing costs nothing."""
    if traced or "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"exclude": lambda scope: True}}
