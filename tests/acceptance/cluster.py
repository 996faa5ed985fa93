"""A real cluster for tests: `tickwheel api`, `scheduler` and `worker` processes on a fresh
PostgreSQL schema and Redis prefix, each killable on its own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from harness import TICKWHEEL, free_port
from services import require


class Process:
    def __init__(self, role: str, name: str, env: dict[str, str], log: Path, *args: str) -> None:
        self.role, self.name, self.log = role, name, log
        with log.open("ab") as out:
            self.popen = subprocess.Popen(
                [TICKWHEEL, role, *args], env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def signal(self, sig: int) -> None:
        self.popen.send_signal(sig)

    def kill(self) -> None:
        """kill -9: no shutdown code runs."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)


@contextlib.contextmanager
def cluster_in(folder: Path, **settings: str) -> Iterator[Cluster]:
    """A cluster's schema and prefix for one test, its processes killed and its schema
    dropped afterwards."""
    made = Cluster(folder, **settings)
    try:
        yield made
    finally:
        made.close()


class Cluster:
    def __init__(self, folder: Path, **settings: str) -> None:
        self.folder = folder
        self.schema = f"tw_cluster_{uuid.uuid4().hex[:10]}"
        self.database_url = require("postgres")
        self.env = {
            **os.environ,
            "TICKWHEEL_DATABASE_URL": f"{self.database_url}?search_path={self.schema}",
            "TICKWHEEL_REDIS_URL": require("redis"),
            "TICKWHEEL_REDIS_PREFIX": f"{self.schema}:",
            "TICKWHEEL_LOG_LEVEL": "warning",
            **settings,
        }
        self.processes: list[Process] = []
        self.api_url = ""
        self.query(f"CREATE SCHEMA {self.schema}")
        migrate = subprocess.run([TICKWHEEL, "migrate"], env=self.env, capture_output=True)
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr

    def start(self, role: str, name: str, *args: str, **env: str) -> Process:
        """`env`: settings of this process only (over the cluster's)."""
        env = {**self.env, "TICKWHEEL_NODE_ID": name, **env}
        process = Process(role, name, env, self.folder / f"{name}.log", *args)
        self.processes.append(process)
        return process

    def start_api(self, name: str = "api", **env: str) -> Process:
        """An API process; a restarted one keeps the port of the last, as behind a
        load balancer."""
        port = int(self.api_url.rsplit(":", 1)[1]) if self.api_url else free_port()
        process = self.start("api", name, "--port", str(port), **env)
        self.api_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert process.popen.poll() is None, process.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.api_url}/healthz", timeout=1).status_code == 200:
                    return process
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"the API did not start: {process.log.read_text()[-3000:]}")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.api_url, timeout=60)

    def query(self, sql: str, *args: Any) -> list[Any]:
        async def run() -> list[Any]:
            settings = {"search_path": self.schema}  # may not exist yet: PostgreSQL allows it
            db = await asyncpg.connect(self.database_url, server_settings=settings)
            try:
                return list(await db.fetch(sql, *args))
            finally:
                await db.close()

        return asyncio.run(run())

    def owners(self) -> dict[str, int]:
        """How many partitions each live owner holds, by the store's clock."""
        rows = self.query(
            "SELECT owner, count(*) FROM partition_leases"
            " WHERE owner IS NOT NULL"
            " AND expires_at >= (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
            " GROUP BY owner"
        )
        return {r[0]: r[1] for r in rows}

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.log.read_text()[-2000:]}" for p in self.processes)

    def close(self) -> None:
        for process in self.processes:
            if process.popen.poll() is None:
                process.popen.kill()
                process.popen.wait(10)
        self.query(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")


def restart_redis() -> None:
    """Stop the local Redis without saving (its data is gone) and start it again."""
    subprocess.run(["redis-cli", "-p", "6379", "shutdown", "nosave"], capture_output=True)
    started = subprocess.run(
        [
            "redis-server",
            "--daemonize",
            "yes",
            "--bind",
            "127.0.0.1",
            "--port",
            "6379",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            "/var/lib/redis",
            "--logfile",
            "/var/log/redis/ci.log",
        ],
        capture_output=True,
    )
    assert started.returncode == 0, started.stderr
    deadline = time.monotonic() + 10
    while subprocess.run(["redis-cli", "-p", "6379", "ping"], capture_output=True).returncode:
        assert time.monotonic() < deadline, "Redis did not come back"
        time.sleep(0.05)


def restart_postgres() -> None:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    done = subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
