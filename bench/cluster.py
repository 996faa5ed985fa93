"""Distributed mode, measured on a real local cluster (`tickwheel local-cluster`: scheduler,
worker and API processes over the local PostgreSQL and Redis).

    .venv/bin/python bench/cluster.py burst --tasks 300000
    .venv/bin/python bench/cluster.py e2e --tasks 50000

burst: N no-op tasks due in the same second, submitted ahead in batches of 10,000;
trigger lateness (pushed to Redis minus due), start lateness (claimed minus due), drain
(due to the last completion). e2e: N no-op tasks due now, submitted as fast as the
API takes them; tasks/s from the first submission to the last completion. Both count
the rows PostgreSQL inserted, updated and deleted per task (pg_stat_user_tables).
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
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx

POSTGRES = os.environ.get(
    "TICKWHEEL_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1/postgres"
)
REDIS = os.environ.get("TICKWHEEL_BENCH_REDIS_URL", "redis://127.0.0.1:6379/1")
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
        await asyncio.sleep(2)  # backends report their counts within a second or so
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
    parser.add_argument("scenario", choices=["burst", "e2e"])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--schedulers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=512)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--lead-seconds", type=float, default=30)
    args = parser.parse_args()
    async with LocalCluster(
        args.schedulers, args.workers, args.concurrency, args.partitions
    ) as cluster:
        result = await (burst if args.scenario == "burst" else e2e)(args, cluster)
    result.update(
        tasks=args.tasks,
        schedulers=args.schedulers,
        workers=args.workers,
        machine=f"{os.cpu_count()} cores, Python {platform.python_version()}",
    )
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
