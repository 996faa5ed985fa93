"""Serving a node's API with uvicorn: one recipe for `tickwheel up` and `tickwheel api`.

On SIGTERM the whole stop fits in the node's shutdown grace. Requests still running get
the grace; shortly before it ends, the store work they wait on is interrupted, so each
is answered with what happened (`201` if it committed in time, `503` with
`store_unavailable` if nothing was stored, `outcome_unknown` if a COMMIT was cut off);
a request still unanswered at the end is answered `503 outcome_unknown`. The node then
stops in what is left of the grace.
"""

from __future__ import annotations

import asyncio
import socket

import uvicorn

from tickwheel.api.app import create_app
from tickwheel.cli import heap
from tickwheel.node import Node

# Before the grace ends, the store work of requests still running is interrupted: time
# for them to roll back and answer.
INTERRUPT_BEFORE_SECONDS = 1.0


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, node: Node) -> None:
        super().__init__(config)
        self.node = node
        self.deadline: float | None = None  # the loop's time when the grace ends

    def grace_left(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - asyncio.get_running_loop().time())

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        grace = self.node.settings.shutdown_grace_seconds
        self.deadline = loop.time() + grace
        before = min(INTERRUPT_BEFORE_SECONDS, grace / 4)
        interrupting = loop.call_later(grace - before, self.node.interrupt)
        try:
            await super().shutdown(sockets)
        finally:
            interrupting.cancel()


def serve(node: Node, *, log_level: str) -> None:
    """Serve until SIGINT or SIGTERM; streams end as soon as the server begins to exit,
    and requests still running get the node's shutdown grace."""
    settings = node.settings
    server: _Server | None = None
    app = create_app(
        node,
        exiting=lambda: server is not None and server.should_exit,
        grace_left=lambda: None if server is None else server.grace_left(),
    )
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level.lower(),
        # No handlers of uvicorn's own: its records reach the root logger and come out
        # in this process's one format, text or JSON (`logs.configure`).
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=max(1, int(settings.shutdown_grace_seconds)),
    )
    server = _Server(config, node)
    heap.settle()
    server.run()
