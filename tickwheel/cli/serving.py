"""Serving a node's API with uvicorn: one recipe for `tickwheel up` and `tickwheel api`."""

from __future__ import annotations

import uvicorn

from tickwheel import logs
from tickwheel.api.app import create_app
from tickwheel.cli import heap
from tickwheel.engine.node import Node


def serve(node: Node, *, log_level: str, log_format: str = "text") -> None:
    """Serve until SIGINT or SIGTERM; streams end as soon as the server begins to exit,
    and requests still running get the node's shutdown grace."""
    settings = node.settings
    server: uvicorn.Server | None = None
    app = create_app(node, exiting=lambda: server is not None and server.should_exit)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level.lower(),
        log_config=logs.uvicorn_log_config(log_format),
        access_log=False,
        timeout_graceful_shutdown=max(1, int(settings.shutdown_grace_seconds)),
    )
    server = uvicorn.Server(config)
    heap.settle()
    server.run()
