"""Health that tells the truth (issue 16): `/healthz` says the process answers,
`/readyz` whether its store and ready queue do; while the ready queue is down the API
refuses submissions with a 503 and Retry-After (nothing could be handed to workers),
and the outage is told in a few log lines. Redis here is the suite's own, stopped and
started again; never the machine's."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from servers import PrivateRedis

from tickwheel.api.app import create_app
from tickwheel.config import Role, Settings
from tickwheel.node import Node


@pytest.fixture
async def api(database_url: str, private_redis: PrivateRedis) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(database_url=database_url, redis_url=private_redis.url, partitions=4)
    async with Node(settings=settings, roles=frozenset({Role.API, Role.SCHEDULER})) as node:
        transport = httpx.ASGITransport(app=create_app(node, manage_node=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client


async def eventually(check: Callable[[], object], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not await check():  # type: ignore[misc]
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.1)


async def test_readiness_fails_while_redis_is_down_and_recovers(
    api: httpx.AsyncClient, private_redis: PrivateRedis, caplog: pytest.LogCaptureFixture
) -> None:
    ready = await api.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["dependencies"] == {"store": None, "ready_queue": None}
    caplog.set_level(logging.INFO)
    private_redis.stop()
    try:
        down = await api.get("/readyz")
        assert down.status_code == 503
        assert down.headers["Retry-After"] == "1"
        problems = down.json()["dependencies"]
        assert problems["store"] is None and problems["ready_queue"]
        assert (await api.get("/healthz")).status_code == 200  # alive all the same

        async def refused() -> bool:
            answer = await api.post("/api/tasks", json={"task_type": "noop"})
            assert answer.status_code in (201, 503), answer.text
            return answer.status_code == 503

        await eventually(refused)
        answer = await api.post("/api/tasks", json={"task_type": "noop"})
        assert answer.json()["error"] == "queue_unavailable"
        assert int(answer.headers["Retry-After"]) >= 1
        stats = await api.get("/api/stats")  # the metrics live on the same Redis
        assert (stats.status_code, stats.json()["error"]) == (503, "metrics_unavailable")
        await asyncio.sleep(3)  # every loop meets the outage meanwhile
    finally:
        private_redis.start()

    async def ready_again() -> bool:
        return (await api.get("/readyz")).status_code == 200

    await eventually(ready_again)

    async def admitted() -> bool:
        return (await api.post("/api/tasks", json={"task_type": "noop"})).status_code == 201

    await eventually(admitted)

    async def back_is_told() -> bool:
        return any("ready queue (Redis) is available again" in m for m in caplog.messages)

    await eventually(back_is_told)  # once calls went through for a second
    told = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any(r.exc_info for r in told), [r.getMessage() for r in told]
    assert len(told) <= 6, [r.getMessage() for r in told]  # a handful, not one per call
    assert any("is unavailable" in r.getMessage() for r in told)
    assert any("is available again" in r.getMessage() for r in told)
