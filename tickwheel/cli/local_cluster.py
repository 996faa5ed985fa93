"""`tickwheel local-cluster`: several of each role on this machine, with one command.

A recipe for trying distributed mode (and for failover drills): it applies the
migrations once, starts `tickwheel api`, `scheduler` and `worker` processes against the
local PostgreSQL and Redis, and stops them all gracefully on Ctrl-C or SIGTERM. Each
child is an ordinary process: `kill -9` one and watch the others take over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from tickwheel.config import env

LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
LOCAL_REDIS = "redis://127.0.0.1:6379/0"
TICKWHEEL = str(Path(sys.executable).with_name("tickwheel"))


def local_cluster(
    schedulers: Annotated[int, typer.Option(min=1, max=32)] = 3,
    workers: Annotated[int, typer.Option(min=0, max=32)] = 2,
    apis: Annotated[int, typer.Option(min=1, max=16)] = 1,
    port: Annotated[int, typer.Option(help="The first API's port; the next ones follow.")] = 8700,
    app: Annotated[str | None, typer.Option(help="The workers' MODULE[:ATTR].")] = None,
) -> None:
    """Run a cluster on this machine: APIs, schedulers and workers as separate processes."""
    environ = dict(os.environ)
    environ.setdefault(env("database_url"), LOCAL_POSTGRES)
    environ.setdefault(env("redis_url"), LOCAL_REDIS)
    migrated = subprocess.run([TICKWHEEL, "migrate"], env=environ)
    if migrated.returncode != 0:
        raise typer.Exit(migrated.returncode)
    children: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(name: str, *command: str) -> None:
        child_env = {**environ, env("node_id"): name}
        children.append((name, subprocess.Popen([TICKWHEEL, *command], env=child_env)))
        typer.echo(f"started {name} (pid {children[-1][1].pid})")

    for i in range(schedulers):
        start(f"scheduler-{i}", "scheduler")
    for i in range(workers):
        start(f"worker-{i}", "worker", *(["--app", app] if app else []))
    for i in range(apis):
        start(f"api-{i}", "api", "--port", str(port + i))
        typer.echo(f"API on http://127.0.0.1:{port + i}")
    _supervise(children)


def _supervise(children: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
    """Wait for a signal, then pass SIGTERM on and wait for every child to stop."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping:
        time.sleep(0.2)
    for _, child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for name, child in children:
        try:
            child.wait(60)
        except subprocess.TimeoutExpired:
            child.kill()
        typer.echo(f"stopped {name}")
