"""Throughput when the schedulers and workers are far from their stores: a TCP proxy
(`netdelay.py`) adds a delay each way between them and PostgreSQL and Redis, as a link
between zones (10 ms) or regions (50 ms) would. The API stays beside the stores.

    .venv/bin/python -m bench.latency [--delays 0,10,50] [--tasks 20000] [--burst 3000]

For each delay: an API, 2 schedulers and 2 workers (concurrency 64) on a fresh schema
and Redis prefix; `--tasks` no-op tasks submitted through `AsyncClient.submit_many`
(1,000 a call, 4 calls in flight), then `--burst` tasks due at one instant. Prints one
JSON line per delay: submitted/s, drained/s (first submission to last completion, as
the store records it), and the burst's time from its due time to its last start.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx

from bench.stores import REDIS, fresh_schema
from bench.targets import free_port
from tickwheel import AsyncClient
from tickwheel.client import task_body

BIN = Path(sys.executable).parent
HERE = Path(__file__).parent


@contextlib.contextmanager
def _delayed(url: str, delay_ms: float) -> Any:
    """`url` through a proxy adding `delay_ms` each way (the URL itself when 0)."""
    if delay_ms <= 0:
        yield url
        return
    parts = urlsplit(url)
    target = (
        f"{parts.hostname}:{parts.port or (5432 if parts.scheme.startswith('postgres') else 6379)}"
    )
    proxy = subprocess.Popen(
        [sys.executable, str(HERE / "netdelay.py"), "--to", target, "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.stdout is not None
        port = json.loads(proxy.stdout.readline())["port"]
        user = parts.netloc.rpartition("@")[0]  # the credentials, if any, kept as they are
        netloc = f"{user}@127.0.0.1:{port}" if user else f"127.0.0.1:{port}"
        yield urlunsplit(parts._replace(netloc=netloc))
    finally:
        proxy.terminate()
        proxy.wait(10)


class Cluster(NamedTuple):
    url: str  # the API's
    database_url: str
    pids: dict[str, int]  # role-N -> process id


@contextlib.asynccontextmanager
async def cluster(delay_ms: float, concurrency: int) -> AsyncIterator[Cluster]:
    """An API, 2 schedulers and 2 workers; the schedulers and workers `delay_ms` away
    from the stores (each way)."""
    async with fresh_schema() as (database_url, prefix):
        env = {
            **os.environ,
            "TICKWHEEL_REDIS_PREFIX": prefix,
            "TICKWHEEL_LOG_LEVEL": "warning",
            "TICKWHEEL_CONCURRENCY": str(concurrency),
            "TICKWHEEL_PARTITIONS": "64",
        }
        near = {**env, "TICKWHEEL_DATABASE_URL": database_url, "TICKWHEEL_REDIS_URL": REDIS}
        migrate = await asyncio.create_subprocess_exec(str(BIN / "tickwheel"), "migrate", env=near)
        assert await migrate.wait() == 0
        port = free_port()
        with _delayed(database_url, delay_ms) as far_db, _delayed(REDIS, delay_ms) as far_redis:
            far = {**env, "TICKWHEEL_DATABASE_URL": far_db, "TICKWHEEL_REDIS_URL": far_redis}
            commands = {"api": (near, ["api", "--port", str(port)])}
            commands |= {f"scheduler-{i}": (far, ["scheduler"]) for i in range(2)}
            commands |= {f"worker-{i}": (far, ["worker"]) for i in range(2)}
            processes = [
                await asyncio.create_subprocess_exec(
                    str(BIN / "tickwheel"), *args, env=e, start_new_session=True
                )
                for e, args in commands.values()
            ]
            try:
                url = f"http://127.0.0.1:{port}"
                await _wait_ready(url, database_url)
                pids = {name: p.pid for name, p in zip(commands, processes, strict=True)}
                yield Cluster(url, database_url, pids)
            finally:
                for p in processes:
                    os.killpg(p.pid, signal.SIGTERM)
                for p in processes:
                    await asyncio.wait_for(p.wait(), 60)


async def _wait_ready(url: str, database_url: str) -> None:
    async with httpx.AsyncClient() as http, asyncio.timeout(120):
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(f"{url}/healthz")).status_code == 200:
                    break
            await asyncio.sleep(0.2)
    while (
        await scalar(
            database_url,
            "SELECT count(DISTINCT owner) FROM partition_leases WHERE owner IS NOT NULL",
        )
        < 2
    ):
        await asyncio.sleep(0.2)


async def scalar(database_url: str, query: str) -> int:
    base, _, schema = database_url.partition("?search_path=")
    db = await asyncpg.connect(base, server_settings={"search_path": schema})
    try:
        return int(await db.fetchval(query) or 0)
    finally:
        await db.close()


async def submit(client: AsyncClient, bodies: list[dict[str, Any]]) -> None:
    gate = asyncio.Semaphore(4)

    async def one(chunk: list[dict[str, Any]]) -> None:
        async with gate:
            await client.submit_many(chunk)

    await asyncio.gather(*(one(bodies[i : i + 1000]) for i in range(0, len(bodies), 1000)))


async def until_succeeded(database_url: str, tasks: int, limit_s: float) -> None:
    """Until `tasks` have succeeded. While tasks are left, it only asks whether any is
    (a lookup in the partial indexes of pending and running tasks): counting every
    succeeded task four times a second cost PostgreSQL about 10 µs of CPU per task."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if not await scalar(database_url, UNFINISHED) and await succeeded(database_url) >= tasks:
            return
        await asyncio.sleep(0.25)


UNFINISHED = (
    "SELECT count(*) FROM (SELECT 1 FROM tasks WHERE status = 'pending'"
    " UNION ALL SELECT 1 FROM tasks WHERE status = 'running' LIMIT 1) AS left_over"
)


async def succeeded(database_url: str) -> int:
    return await scalar(database_url, "SELECT count(*) FROM tasks WHERE status = 'succeeded'")


async def one_delay(delay_ms: float, tasks: int, burst: int, concurrency: int) -> dict[str, Any]:
    async with cluster(delay_ms, concurrency) as running, AsyncClient(running.url) as client:
        database_url = running.database_url
        began = time.time()
        await submit(client, [task_body("noop") for _ in range(tasks)])
        submitted = time.time()
        await until_succeeded(database_url, tasks, 600)
        last = await scalar(database_url, "SELECT max(completed_at) FROM tasks")
        done = await succeeded(database_url)
        due = datetime.now(UTC) + timedelta(seconds=10)
        await submit(client, [task_body("noop", due_time=due) for _ in range(burst)])
        await until_succeeded(database_url, tasks + burst, 600)
        due_ms = int(due.timestamp() * 1000)
        last_start = await scalar(
            database_url, f"SELECT max(started_at) FROM tasks WHERE due_time >= {due_ms}"
        )
    return {
        "delay_ms_each_way": delay_ms,
        "tasks": tasks,
        "submitted_per_s": round(tasks / (submitted - began)),
        "drained_per_s": round(done / max(last / 1000 - began, 0.001)),
        "burst": burst,
        "burst_last_start_after_due_s": round((last_start - due_ms) / 1000, 3),
    }


async def main(args: argparse.Namespace) -> None:
    for delay in (float(d) for d in args.delays.split(",")):
        print(
            json.dumps(await one_delay(delay, args.tasks, args.burst, args.concurrency)), flush=True
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delays", default="0,10,50")
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--burst", type=int, default=3_000)
    parser.add_argument("--concurrency", type=int, default=64)
    asyncio.run(main(parser.parse_args()))
