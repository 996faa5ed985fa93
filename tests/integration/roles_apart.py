"""An API, a scheduler and a worker, each its own `Node` sharing only PostgreSQL and
Redis, as processes on different hosts would run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NamedTuple

from tickwheel.config import Role, Settings
from tickwheel.node import Node
from tickwheel.worker.registry import App


class Apart(NamedTuple):
    api: Node
    scheduler: Node
    worker: Node


@asynccontextmanager
async def roles_apart(settings: Settings, app: App) -> AsyncIterator[Apart]:
    """Started scheduler first and API last; stopped in the reverse order."""
    nodes = Apart(
        api=Node(settings=settings, roles=frozenset({Role.API})),
        scheduler=Node(settings=settings, roles=frozenset({Role.SCHEDULER})),
        worker=Node(settings=settings, app=app, roles=frozenset({Role.WORKER})),
    )
    started: list[Node] = []
    try:
        for node in (nodes.scheduler, nodes.worker, nodes.api):
            await node.start()
            started.append(node)
        yield nodes
    finally:
        for node in reversed(started):
            await node.stop()
