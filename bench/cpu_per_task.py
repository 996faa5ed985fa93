"""Where each task's CPU time goes, process by process.

    .venv/bin/python -m bench.cpu_per_task [--tasks 20000] [--runs 3] [--mode embedded]
        [--tracing]

Distributed (the default): an API, 2 schedulers and 2 workers (concurrency 64) on a
fresh schema and Redis prefix (`latency.py`'s cluster, no delay). Embedded: one
`tickwheel up` (its defaults) on a fresh SQLite file. `--tasks` no-op tasks due now go
through `AsyncClient.submit_many` (1,000 a call, 4 in flight) to completion; the CPU
time each process used meanwhile (user + system, from /proc), PostgreSQL's backends and
Redis included, is divided by the tasks; apart, so is the submitting client's own CPU
time while it submits (this program's, on the same cores). Prints the median of
`--runs` runs as JSON: µs of CPU per task per process, their sum, and drained/s. CPU
time is steadier than throughput on a shared machine: it compares two trees where
tasks/s cannot.

`--tracing` (embedded): `tickwheel up --tracing`, its spans exported over OTLP/HTTP to a
sink in this program that answers 200 to each export (what a collector costs the
exporter, without a collector's own CPU).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from bench.latency import BIN, cluster, submit, succeeded, until_succeeded
from bench.targets import free_port
from tickwheel import AsyncClient
from tickwheel.client import task_body

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU seconds so far of process `pid`."""
    return stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def stat_cpu_seconds(stat: Path) -> float:
    """User + system CPU seconds from a /proc `stat` file (a process's or a thread's)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def _pids_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _sample(roles: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far: each role's process, and PostgreSQL's and Redis's processes
    summed (the backends of other clients are counted too: run on a quiet machine)."""
    sample = {role: cpu_seconds(pid) for role, pid in roles.items()}
    for label, name in (("postgresql", "postgres"), ("redis", "redis-server")):
        sample[label] = cpu_of_named(name)
    return sample


def cpu_of_named(name: str) -> float:
    """CPU seconds so far of every process called `name` (a server and its backends)."""
    total = 0.0
    for pid in _pids_named(name):
        try:
            total += cpu_seconds(pid)
        except OSError:  # a backend that ended meanwhile
            continue
    return total


@contextlib.asynccontextmanager
async def otlp_sink() -> AsyncIterator[dict[str, int]]:
    """An OTLP/HTTP endpoint that takes every export: yields its counts, with its URL."""
    from aiohttp import web

    received = {"exports": 0, "bytes": 0}

    async def traces(request: web.Request) -> web.Response:
        received["exports"] += 1
        received["bytes"] += len(await request.read())
        return web.Response(status=200)

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    received["port"] = port
    try:
        yield received
    finally:
        await runner.cleanup()


async def one_embedded_run(tasks: int, tracing: bool = False) -> dict[str, Any]:
    """One `tickwheel up` on a fresh file: its own CPU per task."""
    async with otlp_sink() as sink:
        env = {**os.environ, "TICKWHEEL_LOG_LEVEL": "warning"}
        if tracing:
            env |= {
                "TICKWHEEL_TRACING": "1",
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink['port']}",
            }
        result = await _embedded(tasks, env)
    if tracing:
        result["otlp_exports"] = sink["exports"]
    return result


async def _embedded(tasks: int, env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tickwheel.db"
        port = free_port()
        server = await asyncio.create_subprocess_exec(
            str(BIN / "tickwheel"),
            "up",
            "--port",
            str(port),
            "--database-url",
            f"sqlite:///{path}",
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            async with AsyncClient(url) as client:
                await _answering(url)
                before, began = cpu_seconds(server.pid), time.time()
                await submit(client, [task_body("noop") for _ in range(tasks)])
                while _succeeded(path) < tasks:
                    await asyncio.sleep(0.25)
                after, ended = cpu_seconds(server.pid), time.time()
        finally:
            server.terminate()
            await server.wait()
    per_task = {"tickwheel up": round((after - before) / tasks * 1e6, 1)}
    return {
        "us_per_task": per_task,
        "total_us_per_task": per_task["tickwheel up"],
        "drained_per_s": round(tasks / (ended - began)),
    }


async def _answering(url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        for _ in range(300):
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get("/healthz")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"tickwheel up did not answer at {url}")


def _succeeded(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return int(
            db.execute("SELECT count(*) FROM tasks WHERE status = 'succeeded'").fetchone()[0]
        )


async def one_run(tasks: int) -> dict[str, Any]:
    async with cluster(0, 64) as running, AsyncClient(running.url) as client:
        bodies = [task_body("noop") for _ in range(tasks)]
        before, began = _sample(running.pids), time.time()
        client_began = time.process_time()
        await submit(client, bodies)
        client_cpu = time.process_time() - client_began
        await until_succeeded(running.database_url, tasks, 600)
        after, ended = _sample(running.pids), time.time()
        done = await succeeded(running.database_url)
    per_task = {k: round((after[k] - before[k]) / tasks * 1e6, 1) for k in before}
    return {
        "us_per_task": per_task,
        "total_us_per_task": round(sum(per_task.values()), 1),
        "client_us_per_task": round(client_cpu / tasks * 1e6, 1),
        "drained_per_s": round(done / (ended - began)),
    }


async def main(args: argparse.Namespace) -> None:
    if args.mode == "embedded":
        runs = [await one_embedded_run(args.tasks, args.tracing) for _ in range(args.runs)]
    else:
        runs = [await one_run(args.tasks) for _ in range(args.runs)]
    roles = runs[0]["us_per_task"]
    print(
        json.dumps(
            {
                "tasks": args.tasks,
                "runs": args.runs,
                "us_per_task": {
                    k: statistics.median(r["us_per_task"][k] for r in runs) for k in roles
                },
                "total_us_per_task": statistics.median(r["total_us_per_task"] for r in runs),
                **(
                    {"client_us_per_task": statistics.median(r["client_us_per_task"] for r in runs)}
                    if "client_us_per_task" in runs[0]
                    else {}
                ),
                "drained_per_s": statistics.median(r["drained_per_s"] for r in runs),
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", choices=["distributed", "embedded"], default="distributed")
    parser.add_argument("--tracing", action="store_true", help="embedded, with tracing on")
    asyncio.run(main(parser.parse_args()))
