"""Distributed mode, measured on a real local cluster (`tickwheel local-cluster`: scheduler,
worker and API processes over the local PostgreSQL and Redis).

    .venv/bin/python bench/cluster.py burst --tasks 300000
    .venv/bin/python bench/cluster.py e2e --tasks 50000
    .venv/bin/python bench/cluster.py sustained --rate 50000 --seconds 60

burst: N no-op tasks due in the same second, submitted ahead in batches of 10,000;
trigger lateness (pushed to Redis minus due), start lateness (claimed minus due), drain
(due to the last completion). e2e: N no-op tasks due now, submitted as fast as the
API takes them; tasks/s from the first submission to the last completion. Both count
the rows PostgreSQL inserted, updated and deleted per task (pg_stat_user_tables).
sustained: rate x seconds tasks due evenly over `seconds`, stored ahead through the
engine's batch submission (this measures triggering, not submission), with no worker:
every release is read back from Redis with its stamp, so trigger lateness (stamp minus
due) and the triggers per second are known for every task.
The last line is the result as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from redis.asyncio import Redis

from tickwheel.config import Role, Settings
from tickwheel.engine.node import Node
from tickwheel.engine.tasks import ScheduleRequest, TaskRequest
from tickwheel.models import ScheduleType

POSTGRES = os.environ.get(
    "TICKWHEEL_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1/postgres"
)
REDIS = os.environ.get("TICKWHEEL_BENCH_REDIS_URL", "redis://127.0.0.1:6379/1")
ITEM = struct.Struct("<qqq")  # a ready-queue item in Redis: seq, due_ms, triggered_ms
TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalCluster:
    def __init__(self, schedulers: int, workers: int, concurrency: int, partitions: int) -> None:
        self.schema = f"tw_bench_{uuid.uuid4().hex[:8]}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "TICKWHEEL_DATABASE_URL": f"{POSTGRES}?search_path={self.schema}",
            "TICKWHEEL_REDIS_URL": REDIS,
            "TICKWHEEL_REDIS_PREFIX": f"{self.schema}:",
            "TICKWHEEL_CONCURRENCY": str(concurrency),
            "TICKWHEEL_PARTITIONS": str(partitions),
            "TICKWHEEL_LOG_LEVEL": "warning",
            "TICKWHEEL_MAX_READY_DEPTH": "100000000",
            "TICKWHEEL_MAX_DRAIN_SECONDS": "100000",
        }
        self.schedulers, self.workers = schedulers, workers

    async def __aenter__(self) -> LocalCluster:
        await self.sql(f"CREATE SCHEMA {self.schema}")
        command = [
            TICKWHEEL,
            "local-cluster",
            "--schedulers",
            str(self.schedulers),
            "--workers",
            str(self.workers),
            "--port",
            str(self.port),
        ]
        self.process = await asyncio.create_subprocess_exec(
            *command, env=self.env, stdout=subprocess.DEVNULL
        )
        async with httpx.AsyncClient() as http:
            for _ in range(600):
                try:
                    if (await http.get(f"{self.url}/healthz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    await asyncio.sleep(0.1)
        while len(await self.owners()) < self.schedulers:
            await asyncio.sleep(0.2)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(self.process.wait(), 120)
        await self.sql(f"DROP SCHEMA {self.schema} CASCADE")

    async def sql(self, query: str, *args: Any) -> list[Any]:
        db = await asyncpg.connect(POSTGRES, server_settings={"search_path": self.schema})
        try:
            return list(await db.fetch(query, *args))
        finally:
            await db.close()

    async def owners(self) -> list[str]:
        rows = await self.sql(
            "SELECT DISTINCT owner FROM partition_leases WHERE owner IS NOT NULL"
            " AND expires_at >= (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
        )
        return [r[0] for r in rows]

    async def row_writes(self) -> int:
        # A busy backend reports its counts at most every second and an idle one within
        # 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL): wait that out, or the counts lag.
        await asyncio.sleep(11)
        rows = await self.sql(
            "SELECT COALESCE(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)"
            " FROM pg_stat_user_tables WHERE schemaname = $1",
            self.schema,
        )
        return int(rows[0][0])

    async def succeeded(self) -> int:
        rows = await self.sql("SELECT count(*) FROM tasks WHERE status = 'succeeded'")
        return int(rows[0][0])


async def submit(url: str, count: int, schedule: dict[str, Any], concurrency: int = 2) -> float:
    """Submit `count` no-op tasks in batches of 10,000; return the seconds it took."""
    body = {"task_type": "noop", "schedule": schedule}
    batches = [min(10_000, count - s) for s in range(0, count, 10_000)]
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        gate = asyncio.Semaphore(concurrency)

        async def one(size: int) -> None:
            async with gate:
                answer = await http.post("/api/tasks/batch", json={"tasks": [body] * size})
                answer.raise_for_status()

        await asyncio.gather(*(one(size) for size in batches))
    return time.perf_counter() - started


async def wait_all(cluster: LocalCluster, count: int) -> None:
    while await cluster.succeeded() < count:
        await asyncio.sleep(0.25)


async def burst(args: argparse.Namespace, cluster: LocalCluster) -> dict[str, Any]:
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=args.lead_seconds)
    writes = await cluster.row_writes()
    took = await submit(cluster.url, args.tasks, {"type": "delayed", "due_time": due.isoformat()})
    if time.time() > due.timestamp() - 1:
        raise SystemExit("submission outlasted the lead time: raise --lead-seconds")
    await wait_all(cluster, args.tasks)
    due_ms = round(due.timestamp() * 1000)
    rows = await cluster.sql("SELECT triggered_at, started_at, completed_at FROM tasks")
    trigger = [float(r[0] - due_ms) for r in rows]
    start = [float(r[1] - due_ms) for r in rows]
    return {
        "scenario": "burst",
        "submit_tasks_per_s": round(args.tasks / took),
        "trigger_lateness_ms": _spread(trigger),
        "start_lateness_ms": _spread(start),
        "early": sum(x < 0 for x in start),
        "drain_seconds": round((max(r[2] for r in rows) - due_ms) / 1000, 2),
        "row_writes_per_task": round((await cluster.row_writes() - writes) / args.tasks, 2),
    }


async def store_due_evenly(cluster: LocalCluster, first_due_ms: int, rate: int, count: int) -> None:
    """Store `count` no-op tasks due `rate` per second from `first_due_ms`, through an
    API-only node of the cluster's own (in this process: no HTTP in the way)."""
    settings = Settings().from_env(cluster.env)
    async with Node(settings=settings, roles=frozenset({Role.API})) as node:
        for start in range(0, count, 10_000):
            batch = [
                TaskRequest(
                    "noop",
                    None,
                    ScheduleRequest(ScheduleType.DELAYED, due_ms=first_due_ms + i * 1000 // rate),
                )
                for i in range(start, min(start + 10_000, count))
            ]
            await node.service.submit_many(batch)


async def released_stamps(prefix: str) -> list[tuple[int, int, int]]:
    """(seq, due_ms, triggered_ms) of every item in the ready queue's lanes and stages."""
    redis = Redis.from_url(REDIS)
    found: list[tuple[int, int, int]] = []
    try:
        async for key in redis.scan_iter(match=f"{prefix}lane:*"):
            for start in range(0, await redis.llen(key), 100_000):
                chunk = await redis.lrange(key, start, start + 99_999)
                found += ITEM.iter_unpack(b"".join(chunk))
        async for key in redis.scan_iter(match=f"{prefix}stage:*"):
            for start in range(0, await redis.zcard(key), 100_000):
                chunk = await redis.zrange(key, start, start + 99_999)
                found += ITEM.iter_unpack(b"".join(chunk))
    finally:
        await redis.aclose()
    return found


async def sustained(args: argparse.Namespace, cluster: LocalCluster) -> dict[str, Any]:
    count = args.rate * args.seconds
    lead_ms = round(args.lead_seconds * 1000)
    first_due = (time.time_ns() // 1_000_000 // 1000 + 1) * 1000 + lead_ms
    started = time.perf_counter()
    await store_due_evenly(cluster, first_due, args.rate, count)
    stored_in = time.perf_counter() - started
    if time.time() * 1000 > first_due - 2000:
        raise SystemExit("storing outlasted the lead time: raise --lead-seconds")
    await asyncio.sleep((first_due - time.time() * 1000) / 1000 + args.seconds + 3)
    stamps = await released_stamps(cluster.env["TICKWHEEL_REDIS_PREFIX"])
    lateness = [float(at - due) for _, due, at in stamps]
    per_second = Counter((at - first_due) // 1000 for _, _, at in stamps)
    windows = {
        f"{w * 10}-{w * 10 + 10}s": _spread(
            [float(at - due) for _, due, at in stamps if (due - first_due) // 10_000 == w]
        )
        for w in range(args.seconds // 10)
    }
    return {
        "scenario": "sustained",
        "rate": args.rate,
        "seconds": args.seconds,
        "stored_per_s": round(count / stored_in),
        "released": len(stamps),
        "missing": count - len({seq for seq, _, _ in stamps}),
        "trigger_lateness_ms": _spread(lateness),
        "triggered_per_s": {
            "median": statistics.median(per_second[s] for s in range(args.seconds)),
            "min": min(per_second[s] for s in range(args.seconds)),
        },
        "lateness_by_window": windows,
    }


async def e2e(args: argparse.Namespace, cluster: LocalCluster) -> dict[str, Any]:
    writes = await cluster.row_writes()
    started = time.perf_counter()
    await submit(cluster.url, args.tasks, {"type": "immediate"}, concurrency=4)
    await wait_all(cluster, args.tasks)
    took = time.perf_counter() - started
    return {
        "scenario": "e2e",
        "tasks_per_s": round(args.tasks / took),
        "row_writes_per_task": round((await cluster.row_writes() - writes) / args.tasks, 2),
    }


def _spread(values: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 0.5),
        "p99": percentile(values, 0.99),
        "max": max(values),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=["burst", "e2e", "sustained"])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--schedulers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=512)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument(
        "--lead-seconds",
        type=float,
        help="until the first due: 30, or for sustained enough to store",
    )
    parser.add_argument("--rate", type=int, default=50_000, help="sustained: triggers/s")
    parser.add_argument("--seconds", type=int, default=60, help="sustained: duration")
    args = parser.parse_args()
    if args.scenario == "sustained":
        args.workers = 0  # what is released stays in Redis, to be read back
        args.tasks = args.rate * args.seconds
    if args.lead_seconds is None:
        args.lead_seconds = 30 if args.scenario != "sustained" else 30 + args.tasks / 10_000
    async with LocalCluster(
        args.schedulers, args.workers, args.concurrency, args.partitions
    ) as cluster:
        scenario = {"burst": burst, "e2e": e2e, "sustained": sustained}[args.scenario]
        result = await scenario(args, cluster)
    result.update(
        tasks=args.tasks,
        schedulers=args.schedulers,
        workers=args.workers,
        machine=f"{os.cpu_count()} cores, Python {platform.python_version()}",
    )
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
