"""The stores themselves failing: PostgreSQL restarted or its backends killed, Redis
restarted with its data gone. Each runs on a private server of the suite's own
(tests/servers.py), never on the machine's."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg
from ledger import Ledger
from scenario import Running, assert_nothing_wrong, cluster_for, run
from servers import PrivatePostgres, PrivateRedis


def test_a_postgres_restart(
    tmp_path: Path, ledger: Ledger, private_postgres: PrivatePostgres
) -> None:
    """Submissions meet 503 with Retry-After while it is down (the client retries them),
    never another 5xx; work resumes when it is back."""
    with cluster_for(tmp_path, database_url=private_postgres.url) as cluster:
        Running(cluster, schedulers=2, workers=2)
        verdict = run("PostgreSQL restarted", cluster, ledger, private_postgres.restart)
    assert_nothing_wrong(verdict, recovery_seconds=8)


async def _terminate_backends(database_url: str, seconds: float) -> None:
    """Every client backend but this one terminated, five times a second."""
    db = await asyncpg.connect(database_url)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )
            await asyncio.sleep(0.2)
    finally:
        await db.close()


def test_a_storm_of_terminated_backends(
    tmp_path: Path, ledger: Ledger, private_postgres: PrivatePostgres
) -> None:
    with cluster_for(tmp_path, database_url=private_postgres.url) as cluster:
        Running(cluster, schedulers=2, workers=2)
        verdict = run(
            "PostgreSQL backends terminated 5x a second for 6 s",
            cluster,
            ledger,
            lambda: asyncio.run(_terminate_backends(private_postgres.url, 6)),
        )
    assert_nothing_wrong(verdict, recovery_seconds=8)


def test_redis_restarted_with_its_data_gone(
    tmp_path: Path, ledger: Ledger, private_redis: PrivateRedis
) -> None:
    """What Redis held (staged and ready tasks) is gone; the schedulers notice and
    release those tasks again from PostgreSQL at once: tasks due meanwhile start within
    2 s of Redis's return."""
    with cluster_for(tmp_path, redis_url=private_redis.url) as cluster:
        Running(cluster, schedulers=2, workers=2)

        def fault() -> None:
            private_redis.stop()
            time.sleep(3)
            private_redis.start()

        verdict = run("Redis restarted empty after 3 s away", cluster, ledger, fault)
    assert_nothing_wrong(verdict, recovery_seconds=2)
