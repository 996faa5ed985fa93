"""A burst of tasks due at one instant, process by process: who is busy while it drains.

    .venv/bin/python -m bench.burst_profile [--mode embedded] [--tasks 20000] [--runs 3]
        [--py-spy FOLDER]

Runs `tickwheel bench compare`'s burst for Tickwheel alone (the same peer code: its
workers, its client, the shared task body), and adds what the comparison does not
print: how many tasks started in each 100 ms after the due instant (a stall or a slow
ramp shows there), and the CPU time of each Tickwheel process, of its busiest threads
(embedded mode: the event loop and the SQLite writer), and of PostgreSQL and Redis,
from the due instant to the last start, as a share of a core and per task. CPU time is
steadier than lateness on a shared machine: compare two trees by it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.cpu_per_task import cpu_of_named, cpu_seconds, stat_cpu_seconds
from bench.figures import spread
from bench.peers import tickwheel_peer
from bench.peers.base import first_starts, submit_all, wait_ran, workers
from bench.peers.sink import Sink
from bench.stores import Mode

LEAD_SECONDS = 8
BUCKET_MS = 100
SERVERS = {"postgresql": "postgres", "redis": "redis-server"}
WRITER_MODULE = "tickwheel.storage.sqlite.writer_process"


def tickwheel_processes(port: int) -> dict[int, str]:
    """The Tickwheel processes serving `port` (their environment says so; a local
    cluster's children and the SQLite writer's process inherit it): pid -> its
    subcommand."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            argv = (entry / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if f"TICKWHEEL_PORT={port}".encode() not in environ or len(argv) < 3:
            continue
        if Path(argv[1]).name == "tickwheel":
            found[int(entry.name)] = argv[2]
        elif argv[1:3] == ["-m", WRITER_MODULE]:
            found[int(entry.name)] = "sqlite writer"
    return found


def threads_cpu(pid: int) -> dict[int, float]:
    """CPU seconds so far of each thread of `pid`."""
    seconds = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            seconds[int(task.name)] = stat_cpu_seconds(task / "stat")
        except OSError:  # a thread that ended meanwhile
            continue
    return seconds


def sample(pids: dict[int, str]) -> dict[str, Any]:
    return {
        "processes": {pid: cpu_seconds(pid) for pid in pids},
        "threads": {pid: threads_cpu(pid) for pid in pids},
        "servers": {label: cpu_of_named(name) for label, name in SERVERS.items()},
        "at": time.time(),
    }


def usage(
    before: dict[str, Any], after: dict[str, Any], pids: dict[int, str], tasks: int
) -> dict[str, Any]:
    """Share of a core and µs per task, for each process, its two busiest threads, and
    the servers."""
    seconds = after["at"] - before["at"]

    def figures(cpu: float) -> dict[str, float]:
        return {"cores": round(cpu / seconds, 2), "us_per_task": round(cpu / tasks * 1e6, 1)}

    report: dict[str, Any] = {}
    for pid, name in pids.items():
        threads = after["threads"][pid]
        busiest = sorted(
            ((cpu - before["threads"][pid].get(tid, 0.0), tid) for tid, cpu in threads.items()),
            reverse=True,
        )[:2]
        report[f"{name} ({pid})"] = {
            **figures(after["processes"][pid] - before["processes"][pid]),
            "busiest_threads_cores": [round(cpu / seconds, 2) for cpu, _ in busiest],
        }
    for label in SERVERS:
        report[label] = figures(after["servers"][label] - before["servers"][label])
    return report


@asynccontextmanager
async def profiled(pids: dict[int, str], folder: Path | None) -> AsyncIterator[None]:
    """py-spy samples of each process into `folder` (collapsed stacks), if given."""
    if folder is None:
        yield
        return
    spies = [
        await asyncio.create_subprocess_exec(
            *[
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--rate",
                "200",
                "--nonblocking",
            ],
            *["--format", "raw", "--output", str(folder / f"{name.replace(' ', '-')}-{pid}.txt")],
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        for pid, name in pids.items()
    ]
    try:
        yield
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes what it sampled and exits
        await asyncio.gather(*(spy.wait() for spy in spies))


async def one_run(mode: Mode, tasks: int, spies: Path | None = None) -> dict[str, Any]:
    peer = tickwheel_peer.TickwheelPeer(mode)
    await peer.reset()
    sink, run = Sink(), f"burst-{uuid.uuid4().hex[:8]}"
    try:
        async with workers(peer):
            due_ms = (int(time.time()) + 1 + LEAD_SECONDS) * 1000
            await submit_all(peer, run, tasks, due_ms, lambda sent: None)
            pids = tickwheel_processes(int(peer.worker_env()["TICKWHEEL_PORT"]))
            await asyncio.sleep(max(0.0, due_ms / 1000 - time.time()))
            async with profiled(pids, spies):
                before = sample(pids)
                await wait_ran(sink, run, tasks, time.monotonic() + 70, "the burst")
                after = sample(pids)
            first, repeats = first_starts(await sink.starts(run))
    finally:
        await sink.forget(run)
        await sink.aclose()
        await peer.close()
    lateness = [at - due_ms for at in first.values()]
    buckets = Counter(int(late // BUCKET_MS) for late in lateness if late >= 0)
    return {
        "ran": len(first),
        "repeats": repeats,
        "start_lateness_ms": spread(lateness),
        "first_start_ms": round(min(lateness), 1),
        "starts_per_100ms": [buckets[i] for i in range(max(buckets, default=-1) + 1)],
        # From the due instant until the last start was seen (polled every 0.1 s).
        "cpu": usage(before, after, pids, tasks),
    }


async def main(args: argparse.Namespace) -> None:
    for _ in range(args.runs):
        print(json.dumps(await one_run(Mode(args.mode), args.tasks, args.py_spy)), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.DISTRIBUTED.value)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--py-spy", type=Path, help="record each process from the due instant into this folder"
    )
    arguments = parser.parse_args()
    if arguments.py_spy:
        arguments.py_spy.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(arguments))
