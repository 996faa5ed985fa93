"""A worker's or scheduler's store runs its statements on generic plans: `tasks` is
partitioned, and PostgreSQL's default plans every run of a prepared statement anew (its
plans for a run's values prune partitions while planning, so they always look cheaper),
which cost about a third of its CPU per task in a burst. A store that serves the API
keeps the default, which plans an operator's listings for their values."""

from __future__ import annotations

import time

from tickwheel.storage.postgres.store import PostgresStore


async def plans_of_updates(database_url: str, *, generic_plans: bool) -> list[tuple[int, int]]:
    """(generic plans, custom plans) of each prepared `UPDATE tasks` after claims and
    lease extensions ran eight times on the store's one connection."""
    base, _, schema = database_url.partition("?search_path=")
    store = PostgresStore(
        base, partitions=4, schema=schema, pool_size=1, generic_plans=generic_plans
    )
    await store.open()
    try:
        now_ms = time.time_ns() // 1_000_000
        for _ in range(8):  # PostgreSQL's default plans at least the first five runs anew
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
    return [
        (p["generic_plans"], p["custom_plans"])
        for p in prepared
        if "UPDATE tasks" in p["statement"]
    ]


async def test_a_store_asked_for_generic_plans_plans_claims_and_extensions_once(
    database_url: str,
) -> None:
    plans = await plans_of_updates(database_url, generic_plans=True)
    assert len(plans) == 2 and all(generic >= 8 and custom == 0 for generic, custom in plans)


async def test_a_store_for_the_api_keeps_plans_made_for_each_run(database_url: str) -> None:
    plans = await plans_of_updates(database_url, generic_plans=False)
    assert len(plans) == 2 and all(custom >= 5 for _, custom in plans)
