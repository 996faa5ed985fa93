"""The check that a run leaves the machine's servers alone: what it reports and what it
lets pass, on readings made by hand and on private servers harmed on purpose."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace

import asyncpg
import redis
from machine_check import (
    MachineState,
    PostgresState,
    RedisState,
    changes,
    name_group,
    read,
    read_postgres,
    read_redis,
)
from servers import PrivatePostgres, PrivateRedis

REDIS = RedisState("a" * 40, {"maxmemory": "0"}, 0, {15: Counter({"app": 3})})
POSTGRES = PostgresState(
    "2026-01-01 00:00:00+00",
    frozenset({"postgres", "app"}),
    frozenset({("/etc/postgresql.conf", "work_mem", "4MB")}),
)
MACHINE = MachineState(REDIS, POSTGRES)


def test_the_same_reading_twice_is_no_change() -> None:
    assert changes(MACHINE, replace(MACHINE)) == []


def test_a_restart_a_setting_and_a_flush_of_redis_are_each_named() -> None:
    restarted = replace(REDIS, run_id="b" * 40, config={"maxmemory": "1"})
    assert changes(MACHINE, replace(MACHINE, redis=restarted)) == [
        f"Redis was restarted (run id {'a' * 40} -> {'b' * 40})",
        "Redis setting maxmemory changed: '0' -> '1'",
    ]
    flushed = replace(REDIS, flushes=1, other_keys={})
    assert changes(MACHINE, replace(MACHINE, redis=flushed)) == [
        "FLUSHDB or FLUSHALL was called 1 times",
        "Redis db 15: keys outside the tests' prefixes 3 -> 0 (app: 3 -> 0)",
    ]


def test_keys_outside_the_tests_prefixes_added_are_named_too() -> None:
    added = replace(REDIS, other_keys={15: Counter({"app": 3}), 2: Counter({"rq": 4})})
    assert changes(MACHINE, replace(MACHINE, redis=added)) == [
        "Redis db 2: keys outside the tests' prefixes 0 -> 4 (rq: 0 -> 4)"
    ]


def test_a_server_that_stopped_answering_is_named() -> None:
    assert changes(MACHINE, MachineState(None, None)) == [
        "Redis no longer answers (stopped during the run?)",
        "PostgreSQL no longer answers (stopped during the run?)",
    ]
    assert changes(MachineState(None, None), MACHINE) == []  # nothing to compare with


def test_postgres_restarted_databases_dropped_or_left_and_settings_written() -> None:
    after = PostgresState(
        "2026-01-01 00:05:00+00",
        frozenset({"postgres", "tw_left"}),
        frozenset({("/etc/postgresql.conf", "work_mem", "64MB")}),
    )
    assert changes(MACHINE, replace(MACHINE, postgres=after)) == [
        "PostgreSQL was restarted (up since 2026-01-01 00:00:00+00, now since"
        " 2026-01-01 00:05:00+00)",
        "PostgreSQL database app was dropped",
        "PostgreSQL database tw_left was created and left behind",
        "PostgreSQL setting work_mem = '4MB' is gone from /etc/postgresql.conf",
        "PostgreSQL setting work_mem = '64MB' was written to /etc/postgresql.conf",
    ]


def test_key_names_group_by_their_first_part() -> None:
    assert [name_group(k) for k in (b"rq:job:1", b"huey.tasks", b"plain")] == [
        "rq",
        "huey",
        "plain",
    ]


def test_a_private_redis_harmed_on_purpose_is_caught_and_test_keys_are_not() -> None:
    with PrivateRedis() as server:
        with redis.Redis(port=server.port, db=3) as app:
            app.set("app:user:1", "kept")
        before = read_redis(server.url)
        with redis.Redis(port=server.port, db=15) as tests:
            tests.set("tw_cluster_0123456789:depth", 1)  # a test's own key: not counted
        after = read_redis(server.url)
        assert before is not None and after is not None
        assert changes(MachineState(before, None), MachineState(after, None)) == []

        with redis.Redis(port=server.port, db=3) as app:
            app.flushdb()
        flushed = read_redis(server.url)
        assert flushed is not None
        assert changes(MachineState(before, None), MachineState(flushed, None)) == [
            "FLUSHDB or FLUSHALL was called 1 times",
            "Redis db 3: keys outside the tests' prefixes 1 -> 0 (app: 1 -> 0)",
        ]


def test_a_private_postgres_harmed_on_purpose_is_caught() -> None:
    async def harm(url: str) -> None:
        db = await asyncpg.connect(url)
        try:
            await db.execute("CREATE DATABASE tw_left_behind")
            await db.execute("ALTER SYSTEM SET work_mem = '64MB'")
        finally:
            await db.close()

    with PrivatePostgres() as server:
        before = read_postgres(server.url)
        asyncio.run(harm(server.url))
        server.restart()
        after = read_postgres(server.url)
    assert before is not None and after is not None
    found = changes(MachineState(None, before), MachineState(None, after))
    assert found[0].startswith("PostgreSQL was restarted")
    assert found[1:] == [
        "PostgreSQL database tw_left_behind was created and left behind",
        "PostgreSQL setting work_mem = '64MB' was written to"
        f" {server.data / 'postgresql.auto.conf'}",
    ]


def test_a_server_that_does_not_answer_reads_as_none() -> None:
    with PrivateRedis() as server:
        port = server.port
    assert read(f"redis://127.0.0.1:{port}/0", f"postgresql://postgres@127.0.0.1:{port}/x") == (
        MachineState(None, None)
    )
