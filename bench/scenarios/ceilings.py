"""ceilings: what the stores themselves sustain on this machine, so that every other
figure can be read against the physical limit: PostgreSQL and SQLite row inserts and
updates per second in batches (as Tickwheel writes them), and Redis commands per second
one round trip each and pipelined."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
from redis.asyncio import Redis

from bench.stores import POSTGRES, REDIS, fresh_schema

BATCH = 1_000


async def run(rows: int = 200_000, commands: int = 200_000) -> dict[str, Any]:
    return {
        "workload": "ceilings",
        "postgres": await postgres_rows(rows),
        "sqlite": await asyncio.to_thread(sqlite_rows, rows),
        "redis": await redis_commands(commands),
    }


async def postgres_rows(rows: int) -> dict[str, int]:
    """Rows/s inserted and then updated by primary key, BATCH rows a statement, one
    connection, each statement its own transaction (as a claim or a completion is)."""
    async with fresh_schema() as (database_url, _prefix):
        schema = database_url.rsplit("search_path=", 1)[1]
        db = await asyncpg.connect(POSTGRES, server_settings={"search_path": schema})
        try:
            await db.execute("CREATE TABLE ceiling (id bigint PRIMARY KEY, status text, at bigint)")
            batches = [list(range(s, min(s + BATCH, rows))) for s in range(0, rows, BATCH)]
            began = time.perf_counter()
            for ids in batches:
                await db.execute(
                    "INSERT INTO ceiling SELECT unnest($1::bigint[]), 'pending', 0", ids
                )
            inserted = time.perf_counter() - began
            began = time.perf_counter()
            for ids in batches:
                await db.execute(
                    "UPDATE ceiling SET status = 'running', at = $2 WHERE id = ANY($1::bigint[])",
                    ids,
                    time.time_ns(),
                )
            updated = time.perf_counter() - began
        finally:
            await db.close()
    return {"inserts_per_s": round(rows / inserted), "updates_per_s": round(rows / updated)}


def sqlite_rows(rows: int) -> dict[str, int]:
    """As `postgres_rows`, on a SQLite file in WAL mode (as the embedded store runs)."""
    with tempfile.TemporaryDirectory() as folder:
        db = sqlite3.connect(Path(folder) / "ceiling.db", isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("CREATE TABLE ceiling (id INTEGER PRIMARY KEY, status TEXT, at INTEGER)")
            batches = [range(s, min(s + BATCH, rows)) for s in range(0, rows, BATCH)]
            began = time.perf_counter()
            for ids in batches:
                with db:
                    db.executemany(
                        "INSERT INTO ceiling VALUES (?, 'pending', 0)", ((i,) for i in ids)
                    )
            inserted = time.perf_counter() - began
            began = time.perf_counter()
            for ids in batches:
                with db:
                    db.executemany(
                        "UPDATE ceiling SET status = 'running', at = ? WHERE id = ?",
                        ((time.time_ns(), i) for i in ids),
                    )
            updated = time.perf_counter() - began
        finally:
            db.close()
    return {"inserts_per_s": round(rows / inserted), "updates_per_s": round(rows / updated)}


async def redis_commands(commands: int) -> dict[str, int]:
    """RPUSH then LPOP of small items: one round trip each (a tenth of the count), and
    pipelined BATCH commands a round trip."""
    redis = Redis.from_url(REDIS)
    key = f"tickwheel-bench:ceiling:{time.time_ns()}"
    item = b"x" * 24  # the size of a ready-queue item
    try:
        single = commands // 10
        began = time.perf_counter()
        for _ in range(single):
            await redis.rpush(key, item)
        one_by_one = time.perf_counter() - began
        await redis.delete(key)
        began = time.perf_counter()
        for start in range(0, commands, BATCH):
            pipe = redis.pipeline(transaction=False)
            for _ in range(min(BATCH, commands - start)):
                pipe.rpush(key, item)
            await pipe.execute()
        pipelined = time.perf_counter() - began
    finally:
        await redis.delete(key)
        await redis.aclose()
    return {
        "round_trip_ops_per_s": round(single / one_by_one),
        "pipelined_ops_per_s": round(commands / pipelined),
    }
