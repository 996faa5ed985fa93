"""The tests' private servers: restarts behave as the fault tests need, and nothing of a
server is left once its block is left, even by a failure."""

from __future__ import annotations

import asyncio
import os
from datetime import datetime

import asyncpg
import pytest
import redis
from servers import PrivatePostgres, PrivateRedis


def test_a_private_redis_restarts_empty_or_with_its_data() -> None:
    with PrivateRedis() as server, redis.Redis.from_url(server.url) as client:
        client.set("kept", 1)
        server.restart(empty=False)
        assert client.get("kept") == b"1"
        server.restart()
        assert client.get("kept") is None


def test_leaving_the_block_by_a_failure_removes_the_server() -> None:
    with pytest.raises(ZeroDivisionError), PrivateRedis() as server:
        process = server.process
        _ = 1 / 0
    assert process is not None and process.poll() is not None
    assert not server.folder.exists()


def started_at(url: str) -> datetime:
    async def read() -> datetime:
        db = await asyncpg.connect(url)
        try:
            return await db.fetchval("SELECT pg_postmaster_start_time()")
        finally:
            await db.close()

    return asyncio.run(read())


def test_a_private_postgres_restarts_and_is_removed_afterwards() -> None:
    with PrivatePostgres() as server:
        first = started_at(server.url)
        server.restart()
        assert started_at(server.url) > first
        pid = int((server.data / "postmaster.pid").read_text().split()[0])
    assert not server.folder.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
