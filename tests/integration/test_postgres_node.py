"""The whole engine on PostgreSQL: the same Node, only the store differs."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
import httpx
import pytest
from roles_apart import roles_apart
from services import require

from tickwheel import App, TaskContext, Workflow
from tickwheel.api.app import create_app
from tickwheel.config import Role, Settings
from tickwheel.errors import StoreUnavailable
from tickwheel.models import FINAL_STATUSES, ScheduleType, Status
from tickwheel.node import Node
from tickwheel.queue.redis import RedisReadyQueue
from tickwheel.storage.postgres.store import PostgresStore
from tickwheel.wire.requests import ScheduleRequest, TaskRequest


async def test_tasks_graphs_and_keys_run_on_postgres(database_url: str) -> None:
    ran: list[Any] = []
    settings = Settings(database_url=database_url, partitions=8, concurrency=16)
    async with Node(settings=settings, app=recording(ran)) as node:
        plain = [(await node.submit("step", i, delay_seconds=0.2)).task_id for i in range(100)]
        flow = Workflow("diamond")
        a = flow.task("a", "step", "a")
        b = flow.task("b", "step", "b", after=[a])
        c = flow.task("c", "step", "c", after=[a])
        flow.task("d", "step", "d", after=[b, c])
        diamond = await node.submit_workflow(flow)
        keyed = [
            (await node.submit("step", f"k{i}", ordering_key="account")).task_id for i in range(5)
        ]
        deadline = time.monotonic() + 30
        while True:
            views = [await node.service.get(t) for t in [*plain, *keyed]]
            workflow = await node.workflows.get(diamond.record.workflow_id)
            if all(v.status in FINAL_STATUSES for v in views) and workflow.status != "running":
                break
            assert time.monotonic() < deadline, "tasks did not finish on PostgreSQL"
            await asyncio.sleep(0.05)
    assert {v.status for v in views} == {Status.SUCCEEDED}
    assert workflow.status == "succeeded"
    assert ran.index("a") < ran.index("b") < ran.index("d") and ran.index("c") < ran.index("d")
    assert [p for p in ran if isinstance(p, str) and p.startswith("k")] == [
        f"k{i}" for i in range(5)
    ]


async def held_by(nodes: list[Node]) -> list[set[int]]:
    return [set(n.leases.held) for n in nodes]


async def until(condition: Any, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.05)


async def test_scheduler_nodes_share_the_partitions_and_take_over(database_url: str) -> None:
    nodes = [
        Node(settings=scheduler_settings(database_url, name, 1), run_worker=False)
        for name in ("a", "b", "c")
    ]
    for node in nodes:
        await node.start()
    try:

        async def split_three_ways() -> bool:
            held = await held_by(nodes)
            disjoint = sum(len(h) for h in held) == 32
            return disjoint and set().union(*held) == set(range(32)) and all(held)

        await until(split_three_ways)
        await nodes[2].stop()  # a graceful stop gives its partitions back at once

        async def split_two_ways() -> bool:
            held = await held_by(nodes[:2])
            return sum(len(h) for h in held) == 32 and set().union(*held) == set(range(32))

        await until(split_two_ways, timeout=5)
        # As if b died: its loops stop without giving anything back, so its heartbeat
        # and its leases lapse by the store's clock and a takes everything over.
        for loop in nodes[1]._loops:
            loop.cancel()

        async def one_owns_everything() -> bool:
            return set(nodes[0].leases.held) == set(range(32))

        await until(one_owns_everything, timeout=10)
    finally:
        for node in nodes[:2]:
            await node.stop()


def recording(ran: list[Any]) -> App:
    """Handlers of the type `step` that record each payload they run."""
    handlers = App()

    @handlers.task("step")
    async def step(ctx: TaskContext, payload: Any) -> None:
        ran.append(payload)

    return handlers


def scheduler_settings(database_url: str, name: str, lease_seconds: float) -> Settings:
    return Settings(
        database_url=database_url,
        partitions=32,
        partition_lease_seconds=lease_seconds,
        balance_partitions=True,
        node_id=name,
    )


async def test_api_scheduler_and_worker_apart_over_postgres_and_redis(
    database_url: str, redis_prefix: str
) -> None:
    """Each role in its own Node, sharing only PostgreSQL and Redis, as processes on
    different hosts would: submissions through one reach the scheduler by notification,
    the worker through Redis, and a graph's dependents through the scheduler's resolver."""
    ran: list[Any] = []
    handlers = recording(ran)
    base = Settings(
        database_url=database_url,
        redis_url=require("redis"),
        redis_prefix=redis_prefix,
        partitions=8,
        balance_partitions=True,
    )
    async with roles_apart(base, handlers) as (api, _, worker):
        now = [(await api.submit("step", f"now{i}")).task_id for i in range(20)]
        later = [
            (await api.submit("step", f"later{i}", delay_seconds=0.5)).task_id for i in range(20)
        ]
        flow = Workflow("chain")
        first = flow.task("first", "step", "first")
        flow.task("second", "step", "second", after=[first])
        chain = await api.submit_workflow(flow)
        assert api.leases.held == {} and worker.leases.held == {}  # only the scheduler owns

        async def all_done() -> bool:
            views = [await api.service.get(t) for t in [*now, *later]]
            shown = await api.workflows.get(chain.record.workflow_id)
            return all(v.status is Status.SUCCEEDED for v in views) and shown.status == "succeeded"

        await until(all_done, timeout=20)
        assert sorted(ran) == sorted(
            [f"now{i}" for i in range(20)] + [f"later{i}" for i in range(20)] + ["first", "second"]
        )
        assert ran.index("first") < ran.index("second")


async def test_tasks_lost_with_redis_are_released_again(
    database_url: str, redis_prefix: str
) -> None:
    """Released to Redis, then Redis loses everything: the reconciler releases the
    overdue tasks again from the store, and each runs once."""
    ran: list[Any] = []
    handlers = recording(ran)
    base = Settings(
        database_url=database_url,
        redis_url=require("redis"),
        redis_prefix=redis_prefix,
        partitions=8,
        reconcile_after_seconds=0.5,
    )
    scheduler = Node(settings=base, roles=frozenset({Role.API, Role.SCHEDULER}))
    await scheduler.start()
    worker = Node(settings=base, app=handlers, roles=frozenset({Role.WORKER}))
    try:
        ids = [(await scheduler.submit("step", i)).task_id for i in range(50)]

        async def all_released() -> bool:
            return scheduler.queue.depth().get("default", 0) == 50

        await until(all_released)
        await RedisReadyQueue.wipe(base.redis_url or "", redis_prefix)  # Redis lost them
        await worker.start()

        async def all_done() -> bool:
            views = [await scheduler.service.get(t) for t in ids]
            return all(v.status is Status.SUCCEEDED for v in views)

        await until(all_done, timeout=20)
        assert sorted(ran) == list(range(50))  # each exactly once
    finally:
        await worker.stop()
        await scheduler.stop()


async def test_several_processes_migrating_at_once_agree(database_url: str) -> None:
    stores = [PostgresStore(database_url, partitions=16, pool_size=2) for _ in range(4)]
    await asyncio.gather(*(s.open() for s in stores))
    try:
        assert {await s.partitions() for s in stores} == {16}
        assert len(await stores[0].watermarks()) == 16
    finally:
        for s in stores:
            await s.close()


async def test_a_store_told_not_to_migrate_refuses_an_old_schema(database_url: str) -> None:
    with pytest.raises(StoreUnavailable, match="tickwheel migrate"):
        await PostgresStore(database_url, migrate=False).open()
    migrated = PostgresStore(database_url)
    await migrated.open()
    await migrated.close()
    store = PostgresStore(database_url, migrate=False)
    await store.open()  # up to date now
    await store.close()


async def test_a_joining_scheduler_gets_its_share_at_once(database_url: str) -> None:
    """With a 15 s lease (renewed every 5 s), a node joining still gets its share within
    moments: its arrival and the partitions given back are notified."""

    first = Node(settings=scheduler_settings(database_url, "a", 15), run_worker=False)
    second = Node(settings=scheduler_settings(database_url, "b", 15), run_worker=False)
    await first.start()
    try:
        assert len(first.leases.held) == 32
        await second.start()
        started = time.monotonic()

        async def split() -> bool:
            held = await held_by([first, second])
            return all(held) and sum(len(h) for h in held) == 32

        await until(split, timeout=4)
        assert time.monotonic() - started < 4  # not the 5-10 s of waiting for renewals
    finally:
        await second.stop()
        await first.stop()


async def analyze_count(database_url: str) -> int:
    db = await asyncpg.connect(database_url)
    try:
        await db.execute("SELECT pg_stat_clear_snapshot()")
        found = await db.fetchval(
            "SELECT analyze_count FROM pg_stat_user_tables WHERE relid = 'tasks'::regclass"
        )
        return int(found)
    finally:
        await db.close()


async def test_a_bulk_insert_refreshes_the_planner_statistics(database_url: str) -> None:
    """Claims must not be planned from statistics of a near-empty table once thousands
    of tasks wait: the store analyzes `tasks` itself after bulk inserts (statistics.py)."""
    settings = Settings(database_url=database_url, partitions=4)
    async with Node(settings=settings, roles=frozenset({Role.API})) as node:
        before = await analyze_count(database_url)
        request = TaskRequest(
            "noop", None, ScheduleRequest(ScheduleType.DELAYED, delay_seconds=3600)
        )
        await node.service.submit_many([request] * 500)
        await asyncio.sleep(0.5)
        assert await analyze_count(database_url) == before  # under the first threshold
        await node.service.submit_many([request] * 500)
        await until(lambda: analyze_count_above(database_url, before))
        first = await analyze_count(database_url)
        await node.service.submit_many([request] * 5_000)
        await asyncio.sleep(0.5)
        assert await analyze_count(database_url) == first  # then every 10,000 at least
        await node.service.submit_many([request] * 5_000)
        await until(lambda: analyze_count_above(database_url, first))


async def analyze_count_above(database_url: str, count: int) -> bool:
    return await analyze_count(database_url) > count


async def test_the_nodes_route_shows_two_schedulers_and_a_worker(database_url: str) -> None:
    schedulers = [
        Node(settings=scheduler_settings(database_url, name, 5), run_worker=False)
        for name in ("a", "b")
    ]
    worker = Node(
        settings=Settings(database_url=database_url, node_id="w", queues=("default", "mail")),
        roles=frozenset({Role.WORKER}),
    )
    for node in (*schedulers, worker):
        await node.start()
    transport = httpx.ASGITransport(app=create_app(schedulers[0], manage_node=False))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://tw") as api:
            seen: dict[str, Any] = {}

            async def shared_and_seen() -> bool:
                seen["held"] = [dict(node.leases.held) for node in schedulers]
                seen["shown"] = shown = (await api.get("/api/nodes")).json()
                listed = [
                    {p["partition"]: p["epoch"] for p in n["partitions"]}
                    for n in shown["schedulers"]
                ]
                # Settled: each holds its share, as the node itself sees it.
                split = sum(map(len, seen["held"])) == 32 and all(seen["held"])
                return split and listed == seen["held"] and bool(shown["workers"])

            await until(shared_and_seen)
    finally:
        for node in (worker, *schedulers):
            await node.stop()

    shown, held = seen["shown"], seen["held"]
    a, b = shown["schedulers"]
    assert (a["node_id"], b["node_id"]) == ("a", "b")
    assert a["heartbeat_expires_at"] is not None and b["heartbeat_expires_at"] is not None
    assert set(held[0]) | set(held[1]) == set(range(32))
    assert shown["unowned_partitions"] == []
    (w,) = shown["workers"]
    assert (w["worker_id"], w["kind"], w["queues"]) == ("w", "in_process", ["default", "mail"])
