from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis
from services import fresh_schema, require

from tickwheel.api.app import create_app
from tickwheel.config import Settings
from tickwheel.node import Node
from tickwheel.worker.registry import App


@pytest.fixture
def handlers() -> App:
    return App()


@pytest.fixture
async def node(tmp_path: Path, handlers: App) -> AsyncIterator[Node]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'api.db'}",
        lease_seconds=2,
        shutdown_grace_seconds=2,
    )
    async with Node(settings=settings, app=handlers) as started:
        yield started


@pytest.fixture
async def api(node: Node) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(node, manage_node=False))
    async with httpx.AsyncClient(transport=transport, base_url="http://tickwheel") as client:
        yield client


@pytest.fixture(params=["sqlite", "postgres"])
async def either_api(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """The API of a node without its own worker, on the embedded store or on PostgreSQL
    (a fresh schema)."""
    async with AsyncExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path / 'either.db'}"
        else:
            url = await stack.enter_async_context(fresh_schema())
        settings = Settings(database_url=url, lease_seconds=1)
        node = await stack.enter_async_context(Node(settings=settings, run_worker=False))
        transport = httpx.ASGITransport(app=create_app(node, manage_node=False))
        yield await stack.enter_async_context(
            httpx.AsyncClient(transport=transport, base_url="http://t")
        )


@pytest.fixture
async def database_url() -> AsyncIterator[str]:
    async with fresh_schema() as url:
        yield url


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    """A fresh Redis key prefix, its keys deleted afterwards."""
    url = require("redis")
    prefix = f"tw-test-{uuid.uuid4().hex[:8]}:"
    yield prefix
    client = Redis.from_url(url)
    keys = [k async for k in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()
