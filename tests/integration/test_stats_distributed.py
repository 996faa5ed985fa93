"""/api/stats of a cluster: the API node shows events counted by other nodes, via Redis."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from roles_apart import roles_apart
from services import require

from tickwheel.api.app import create_app
from tickwheel.config import Settings
from tickwheel.metrics.recorder import Event
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App


def handlers() -> App:
    app = App()

    @app.task("step")
    async def step(ctx: TaskContext, payload: Any) -> None:
        return None

    return app


async def test_the_api_node_merges_what_scheduler_and_worker_counted(
    database_url: str, redis_prefix: str
) -> None:
    base = Settings(
        database_url=database_url,
        redis_url=require("redis"),
        redis_prefix=redis_prefix,
        partitions=4,
        balance_partitions=True,
    )
    async with roles_apart(base, handlers()) as (api, _, _):
        transport = httpx.ASGITransport(app=create_app(api, manage_node=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://tickwheel") as http:
            for i in range(10):
                await api.submit("step", i)
            deadline = time.monotonic() + 30
            while True:
                body = (await http.get("/api/stats")).json()
                totals = {e: sum(body["series"][e]) for e in ("started", "succeeded")}
                if body["counts"]["succeeded"] == 10 and totals["succeeded"] == 10:
                    break
                assert time.monotonic() < deadline, (body["counts"], totals)
                await asyncio.sleep(0.2)

    assert totals == {"started": 10, "succeeded": 10}
    assert sum(body["series"]["triggered"]) >= 10
    assert body["lateness_ms"]["start"]["samples"] == 10  # by the worker
    # Tasks due now are released by the API node with their commit, not by a scheduler:
    # that is all the API node itself counted.
    assert api.metrics.lifetime.events == {Event.TRIGGERED: 10}
