"""A node started before its database waits for it (a container started before
PostgreSQL, a restart), telling the wait in a few lines, instead of exiting with a
traceback. The PostgreSQL here is the suite's own, stopped and started again."""

from __future__ import annotations

import asyncio
import logging
import uuid

import asyncpg
import pytest
from servers import PrivatePostgres

from tickwheel.config import Role, Settings
from tickwheel.node import Node


async def test_a_node_started_before_its_database_waits_for_it(
    private_postgres: PrivatePostgres, caplog: pytest.LogCaptureFixture
) -> None:
    schema = f"tw_wait_{uuid.uuid4().hex[:8]}"
    db = await asyncpg.connect(private_postgres.url)
    await db.execute(f"CREATE SCHEMA {schema}")
    await db.close()
    url = f"{private_postgres.url}?search_path={schema}"
    settings = Settings(database_url=url, partitions=4)
    node = Node(settings=settings, roles=frozenset({Role.API}))
    caplog.set_level(logging.INFO)
    private_postgres.stop()
    try:
        starting = asyncio.create_task(node.start())
        await asyncio.sleep(2.5)
        assert not starting.done()  # waiting, not failed
    finally:
        private_postgres.start()
    await asyncio.wait_for(starting, 30)
    try:
        assert await node.store.partitions() == 4
    finally:
        await node.stop()
    told = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not any(r.exc_info for r in told), [r.getMessage() for r in told]
    messages = [r.getMessage() for r in told]
    assert sum("the store is unavailable" in m for m in messages) == 1, messages
    assert sum("the store is available again" in m for m in messages) == 1, messages
