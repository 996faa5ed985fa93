"""The two workloads every system runs, Tickwheel and its peers, the same way for each:
`e2e` (no-op tasks due now: submitted/s, and drained/s from the first submission to the
last start) and `burst` (tasks with an ETA at one instant: start lateness, the first
start after the due instant, and how many never ran within the window).

A system supplies only what differs: its documented worker commands, its submission
call, and how to clear its broker. Every task's body is the same `recorder.record`, so
every system's figures come from the same record, and every task is checked to have run
exactly once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import IO, Any, Protocol

from bench import pythonpath
from bench.figures import spread, version
from bench.peers.shared import InSinkRedis
from bench.peers.sink import SINK_URL_ENV, Sink, sink_url
from bench.progress import say, steps

SUBMIT_CHUNK = 1_000
STARTUP_SECONDS = 120.0
STOP_SECONDS = 20.0


class Peer(Protocol):
    """One system (Tickwheel, or a peer), used the way its documentation recommends."""

    name: str  # as printed in the table
    distribution: str  # the PyPI distribution, for its version
    in_flight: int  # chunks its harness side submits at once

    async def ready(self) -> bool:
        """Whether the processes the worker commands started take submissions yet."""
        ...

    def worker_commands(self) -> list[list[str]]:
        """The documented commands that run its workers on this machine, one per process
        to start: one when the peer forks its own pool, else one per core."""
        ...

    def worker_env(self) -> dict[str, str]:
        """Environment the worker command needs beyond the sink's (broker URLs...)."""
        ...

    async def reset(self) -> None:
        """Clear what earlier runs left in its broker or database."""
        ...

    async def submit(self, run: str, indexes: range, due_ms: int | None) -> None:
        """Enqueue one task per index, whose body records (run, index) in the sink; due
        now when `due_ms` is None, else with an ETA of `due_ms` (epoch milliseconds)."""
        ...

    async def close(self) -> None:
        """Release the harness side's connections."""
        ...


@asynccontextmanager
async def workers(peer: Peer) -> AsyncIterator[None]:
    """Run the peer's worker commands, each in its own process group, until the block
    ends, having first seen a task go through. Their output goes to a log, shown if the
    warm-up fails."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below, after the processes
    env = {**os.environ, "PYTHONPATH": pythonpath(), SINK_URL_ENV: sink_url(), **peer.worker_env()}
    processes: list[asyncio.subprocess.Process] = []
    try:
        for command in peer.worker_commands():
            processes.append(
                await asyncio.create_subprocess_exec(
                    *command,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        await _warm_up(peer, processes, log)
        yield
    finally:
        await asyncio.gather(*(_stop(process) for process in processes))
        log.close()


async def _warm_up(peer: Peer, processes: list[asyncio.subprocess.Process], log: IO[bytes]) -> None:
    sink, run = Sink(), f"warmup-{uuid.uuid4().hex[:8]}"
    deadline = time.monotonic() + STARTUP_SECONDS

    async def pause() -> None:
        exited = any(p.returncode is not None for p in processes)
        if exited or time.monotonic() > deadline:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-3000:]
            raise RuntimeError(f"{peer.name}'s workers did not run a task:\n{tail}")
        await asyncio.sleep(0.1)

    try:
        while not await peer.ready():
            await pause()
        await peer.submit(run, range(1), None)
        while await sink.count(run) < 1:
            await pause()
        await sink.forget(run)
    finally:
        await sink.aclose()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM to the group for a warm shutdown, then SIGKILL to whatever a pool left."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), STOP_SECONDS)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


async def submit_all(
    peer: Peer, run: str, count: int, due_ms: int | None, done: Callable[[int], None]
) -> None:
    """Every task, in chunks of `SUBMIT_CHUNK`, `peer.in_flight` chunks at a time."""
    gate, sent = asyncio.Semaphore(peer.in_flight), 0

    async def one(chunk: range) -> None:
        nonlocal sent
        async with gate:
            await peer.submit(run, chunk, due_ms)
        sent += len(chunk)
        done(sent)

    async with asyncio.TaskGroup() as group:
        for start in range(0, count, SUBMIT_CHUNK):
            group.create_task(one(range(start, min(start + SUBMIT_CHUNK, count))))


async def wait_ran(sink: Sink, run: str, count: int, deadline: float, label: str) -> None:
    """Until `count` executions are recorded or the monotonic `deadline` passes."""
    with steps(label, count) as done:
        while (ran := await sink.count(run)) < count and time.monotonic() < deadline:
            done(ran)
            await asyncio.sleep(0.1)


def first_starts(starts: list[tuple[int, float]]) -> tuple[dict[int, float], int]:
    """The first start of each index, and how many executions were repeats."""
    first: dict[int, float] = {}
    for index, at in starts:
        first[index] = min(at, first.get(index, at))
    return first, len(starts) - len(first)


async def measure(
    peer: Peer, workload: str, tasks: int, lead_seconds: float, window: float = 60.0
) -> dict[str, Any]:
    """`e2e` or `burst` (with its lead), then the peer's harness side closed and, for a
    broker in the sink's Redis, its keys deleted: a run leaves nothing behind (jobs that
    never ran, results kept for a while)."""
    try:
        if workload == "e2e":
            return await e2e(peer, tasks, window)
        return await burst(peer, tasks, lead_seconds, window)
    finally:
        if isinstance(peer, InSinkRedis):
            await peer.reset()
        await peer.close()


async def e2e(peer: Peer, tasks: int, limit_seconds: float = 120.0) -> dict[str, Any]:
    """`tasks` no-op tasks due now: submitted/s, and drained/s (tasks that ran over the
    time from the first submission to the last start)."""
    await peer.reset()
    sink, run = Sink(), f"e2e-{uuid.uuid4().hex[:8]}"
    try:
        async with workers(peer):
            began = time.time() * 1000
            with steps(f"{peer.name}: submitting {tasks:,}", tasks) as done:
                await submit_all(peer, run, tasks, None, done)
            submitted = time.time() * 1000
            deadline = time.monotonic() + limit_seconds
            await wait_ran(sink, run, tasks, deadline, f"{peer.name}: running")
            first, repeats = first_starts(await sink.starts(run))
        last = max(first.values(), default=submitted)
        seconds = max(last - began, 1.0) / 1000
        return {
            "system": peer.name,
            "version": version(peer.distribution),
            "workload": "e2e",
            "tasks": tasks,
            "ran": len(first),
            "repeats": repeats,
            "seconds": round(seconds, 2),
            "submitted_per_s": round(tasks / max(submitted - began, 1.0) * 1000),
            "drained_per_s": round(len(first) / seconds),
        }
    finally:
        await sink.forget(run)
        await sink.aclose()


async def burst(
    peer: Peer, tasks: int, lead_seconds: float, window: float = 60.0
) -> dict[str, Any]:
    """`tasks` tasks with an ETA at one instant `lead_seconds` ahead: start lateness, the
    first start after the instant, and how many had not run `window` seconds after it."""
    await peer.reset()
    sink, run = Sink(), f"burst-{uuid.uuid4().hex[:8]}"
    try:
        async with workers(peer):
            due_ms = (int(time.time()) + 1 + round(lead_seconds)) * 1000
            with steps(f"{peer.name}: submitting {tasks:,} due at one instant", tasks) as done:
                await submit_all(peer, run, tasks, due_ms, done)
            late_submission = time.time() * 1000 > due_ms
            if late_submission:
                say(f"{peer.name}: submission outlasted the {lead_seconds:.0f} s lead")
            deadline = time.monotonic() + (due_ms - time.time() * 1000) / 1000 + window
            await wait_ran(sink, run, tasks, deadline, f"{peer.name}: running the burst")
            first, repeats = first_starts(await sink.starts(run))
        lateness = [at - due_ms for at in first.values()]
        return {
            "system": peer.name,
            "version": version(peer.distribution),
            "workload": "burst",
            "tasks": tasks,
            "ran": len(first),
            "never_ran": tasks - len(first),
            "repeats": repeats,
            "early": sum(x < 0 for x in lateness),
            "start_lateness_ms": spread(lateness),
            "first_start_ms": round(min(lateness), 1) if lateness else None,
            "lead_seconds": round(lead_seconds, 1),
            "submission_outlasted_lead": late_submission,
        }
    finally:
        await sink.forget(run)
        await sink.aclose()
