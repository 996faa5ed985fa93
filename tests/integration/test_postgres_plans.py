"""The store's statements run on generic plans: `tasks` is partitioned, and PostgreSQL's
default would plan every run of a prepared statement anew (its custom plans prune
partitions while planning, so they always look cheaper), which cost about a third of
its CPU per task in a burst."""

from __future__ import annotations

import time

from tickwheel.storage.postgres.store import PostgresStore


async def test_claims_and_lease_extensions_run_on_generic_plans(database_url: str) -> None:
    base, _, schema = database_url.partition("?search_path=")
    store = PostgresStore(base, partitions=4, schema=schema, pool_size=1)
    await store.open()
    try:
        now_ms = time.time_ns() // 1_000_000
        for _ in range(8):  # PostgreSQL's default plans the first five runs for their values
            await store.extend_leases({1: 1}, until_ms=now_ms)
            await store.claim_some(
                [(1, now_ms)], now_ms=now_ms, lease_ms=1000, worker_id="w", start_now=None
            )
        assert store._pool is not None  # one connection: the one that ran them
        async with store._pool.acquire() as db:
            prepared = await db.fetch(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
            )
    finally:
        await store.close()
    plans = [p for p in prepared if "UPDATE tasks" in p["statement"]]
    assert len(plans) == 2, plans
    assert all(p["custom_plans"] == 0 and p["generic_plans"] >= 8 for p in plans), plans
