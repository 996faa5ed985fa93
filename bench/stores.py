"""Fresh stores for one measurement, in either mode, removed afterwards.

embedded: a SQLite file in a temporary folder, the ready queue in the process.
distributed: a fresh schema of the local PostgreSQL and a key prefix of its own in Redis
(`TICKWHEEL_BENCH_DATABASE_URL`, `TICKWHEEL_BENCH_REDIS_URL`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import asyncpg
from redis.asyncio import Redis

from tickwheel.config import Settings

POSTGRES = os.environ.get(
    "TICKWHEEL_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1/postgres"
)
REDIS = os.environ.get("TICKWHEEL_BENCH_REDIS_URL", "redis://127.0.0.1:6379/1")


class Mode(StrEnum):
    EMBEDDED = "embedded"
    DISTRIBUTED = "distributed"


@asynccontextmanager
async def fresh_settings(mode: Mode, **overrides: Any) -> AsyncIterator[Settings]:
    """Settings of a node on a store (and, distributed, a Redis queue) of its own."""
    if mode is Mode.EMBEDDED:
        folder = Path(tempfile.mkdtemp(prefix="tickwheel-bench-"))
        try:
            yield Settings(database_url=f"sqlite:///{folder / 'bench.db'}", **overrides)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    async with fresh_schema() as (database_url, prefix):
        yield replace(
            Settings(database_url=database_url, redis_url=REDIS, redis_prefix=prefix),
            **overrides,
        )


@asynccontextmanager
async def fresh_schema() -> AsyncIterator[tuple[str, str]]:
    """(database URL, Redis key prefix), both new; dropped and deleted afterwards."""
    schema = f"tw_bench_{uuid.uuid4().hex[:8]}"
    await postgres(f"CREATE SCHEMA {schema}")
    try:
        yield f"{POSTGRES}?search_path={schema}", f"{schema}:"
    finally:
        await postgres(f"DROP SCHEMA {schema} CASCADE")
        await delete_keys(f"{schema}:")


async def postgres(query: str, *args: Any, schema: str | None = None) -> list[Any]:
    settings = {"search_path": schema} if schema else None
    db = await asyncpg.connect(POSTGRES, server_settings=settings)
    try:
        return list(await db.fetch(query, *args))
    finally:
        await db.close()


async def delete_keys(prefix: str) -> None:
    redis = Redis.from_url(REDIS)
    try:
        async for key in redis.scan_iter(match=f"{prefix}*", count=1000):
            await redis.delete(key)
    finally:
        await redis.aclose()


def labels(mode: Mode, workload: str) -> dict[str, str]:
    """The keys that open every result: which system, which workload."""
    return {"system": f"tickwheel ({mode})", "workload": workload, "mode": str(mode)}
