"""Proof that a test run left the machine's Redis and PostgreSQL as it found them.

At the start of a session the suite reads what a harmful test would change (conftest's
hooks; `TICKWHEEL_CHECK_MACHINE=0` turns them off), and at the end reads it again:

- Redis: its run id (a restart changes it), every setting (`CONFIG GET *`), the calls to
  FLUSHDB and FLUSHALL so far, and per database how many keys lie outside the tests'
  prefixes, by the first part of their names. Tests only use keys under prefixes of
  their own (`TEST_KEYS`, deleted when they end), so keys another client keeps are
  counted and the tests' own are not; no key's content is read.
- PostgreSQL: when the server started (a restart changes it), the names of its
  databases (one dropped, or one created and left behind, is reported; one created and
  dropped again is not), and its configuration files' settings (`pg_file_settings`,
  ALTER SYSTEM included).

`changes` compares two readings and names each difference. Another client using the
same servers during the run shows up too: the report says what changed, not who did it.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import asyncpg
import redis

# Prefixes of the keys tests create in the tests' Redis (each test deletes its own).
TEST_KEYS = re.compile(
    rb"^(tw_cluster_|tw_node_|tw_test_|tw_bench_|tw-test-|tw-metrics-|tickwheel-test:|"
    rb"tickwheel-bench:)"
)
SHOWN = 5  # changed name groups listed per database
FLUSHES = ("flushdb", "flushall")


@dataclass(frozen=True)
class RedisState:
    run_id: str
    config: dict[str, str]
    flushes: int  # FLUSHDB and FLUSHALL calls since the server's statistics began
    # database -> first part of the names of the keys outside the tests' -> how many
    other_keys: dict[int, Counter[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class PostgresState:
    started_at: str
    databases: frozenset[str]
    settings: frozenset[tuple[str, str, str]]  # (file, name, setting)


@dataclass(frozen=True)
class MachineState:
    """What was read; None for a server that did not answer."""

    redis: RedisState | None
    postgres: PostgresState | None


def read(redis_url: str, postgres_url: str) -> MachineState:
    return MachineState(read_redis(redis_url), read_postgres(postgres_url))


def name_group(key: bytes) -> str:
    """The first part of a key's name: up to its first ':' or '.'."""
    return re.split(rb"[:.]", key, maxsplit=1)[0].decode(errors="replace")


def read_redis(url: str) -> RedisState | None:
    parts = urlsplit(url)
    where = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 6379,
        "username": parts.username,
        "password": parts.password,
        "socket_timeout": 10,
        "socket_connect_timeout": 2,
    }
    try:
        with redis.Redis(**where) as client:  # type: ignore[arg-type]
            run_id = str(client.info("server")["run_id"])
            config = {str(k): str(v) for k, v in client.config_get("*").items()}
            stats = client.info("commandstats")
            flushes = sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in FLUSHES)
            databases = [int(name[2:]) for name in client.info("keyspace")]
    except redis.RedisError:
        return None
    other_keys: dict[int, Counter[str]] = {}
    for number in databases:
        with redis.Redis(**where, db=number) as client:  # type: ignore[arg-type]
            names = client.scan_iter(count=1000)
            other_keys[number] = Counter(name_group(k) for k in names if not TEST_KEYS.match(k))
    return RedisState(run_id, config, flushes, other_keys)


def read_postgres(url: str) -> PostgresState | None:
    async def run() -> PostgresState:
        db = await asyncpg.connect(url, timeout=5)
        try:
            started = await db.fetchval("SELECT pg_postmaster_start_time()::text")
            names = await db.fetch("SELECT datname FROM pg_database")
            try:
                rows = await db.fetch(
                    "SELECT coalesce(sourcefile, ''), coalesce(name, ''),"
                    " coalesce(setting, '') FROM pg_file_settings"
                )
            except asyncpg.InsufficientPrivilegeError:
                rows = []  # a role that may not read them: nothing to compare
        finally:
            await db.close()
        return PostgresState(
            str(started),
            frozenset(r[0] for r in names),
            frozenset((r[0], r[1], r[2]) for r in rows),
        )

    try:
        return asyncio.run(run())
    except (TimeoutError, OSError, asyncpg.PostgresError):
        return None


def changes(before: MachineState, after: MachineState) -> list[str]:
    """Each difference between two readings that a test run must not make, in words."""
    found: list[str] = []
    if before.redis is not None:
        if after.redis is None:
            found.append("Redis no longer answers (stopped during the run?)")
        else:
            found += redis_changes(before.redis, after.redis)
    if before.postgres is not None:
        if after.postgres is None:
            found.append("PostgreSQL no longer answers (stopped during the run?)")
        else:
            found += postgres_changes(before.postgres, after.postgres)
    return found


def redis_changes(before: RedisState, after: RedisState) -> list[str]:
    found: list[str] = []
    if after.run_id != before.run_id:
        found.append(f"Redis was restarted (run id {before.run_id} -> {after.run_id})")
    elif after.flushes > before.flushes:
        found.append(f"FLUSHDB or FLUSHALL was called {after.flushes - before.flushes} times")
    for name in sorted(before.config.keys() | after.config.keys()):
        old, new = before.config.get(name), after.config.get(name)
        if old != new:
            found.append(f"Redis setting {name} changed: {old!r} -> {new!r}")
    for number in sorted(before.other_keys.keys() | after.other_keys.keys()):
        old_keys = before.other_keys.get(number, Counter())
        new_keys = after.other_keys.get(number, Counter())
        if old_keys.total() != new_keys.total():
            groups = sorted(
                g for g in old_keys.keys() | new_keys.keys() if old_keys[g] != new_keys[g]
            )
            which = ", ".join(f"{g}: {old_keys[g]} -> {new_keys[g]}" for g in groups[:SHOWN])
            found.append(
                f"Redis db {number}: keys outside the tests' prefixes"
                f" {old_keys.total()} -> {new_keys.total()} ({which})"
            )
    return found


def postgres_changes(before: PostgresState, after: PostgresState) -> list[str]:
    found: list[str] = []
    if after.started_at != before.started_at:
        found.append(
            f"PostgreSQL was restarted (up since {before.started_at}, now since {after.started_at})"
        )
    found += [
        f"PostgreSQL database {n} was dropped" for n in sorted(before.databases - after.databases)
    ]
    found += [
        f"PostgreSQL database {n} was created and left behind"
        for n in sorted(after.databases - before.databases)
    ]
    for file, name, setting in sorted(before.settings - after.settings):
        found.append(f"PostgreSQL setting {name} = {setting!r} is gone from {file}")
    for file, name, setting in sorted(after.settings - before.settings):
        found.append(f"PostgreSQL setting {name} = {setting!r} was written to {file}")
    return found
