"""A real cluster for tests: `tickwheel api`, `scheduler` and `worker` processes on a fresh
PostgreSQL schema and Redis prefix, each killable on its own. It runs on the tests'
servers unless given others: a test that restarts or empties a server gives it the URLs
of servers of its own (tests/servers.py), never the machine's."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import redis
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
def cluster_in(
    folder: Path, *, database_url: str | None = None, redis_url: str | None = None, **settings: str
) -> Iterator[Cluster]:
    """A cluster's schema and prefix for one test, its processes killed, its schema
    dropped and its keys deleted afterwards."""
    made = Cluster(folder, database_url=database_url, redis_url=redis_url, **settings)
    try:
        yield made
    finally:
        made.close()


class Cluster:
    def __init__(
        self,
        folder: Path,
        *,
        database_url: str | None = None,
        redis_url: str | None = None,
        **settings: str,
    ) -> None:
        """`database_url`, `redis_url`: the servers to run on (the tests' by default);
        `settings`: TICKWHEEL_* variables of every process."""
        self.folder = folder
        self.schema = f"tw_cluster_{uuid.uuid4().hex[:10]}"
        self.database_url = database_url or require("postgres")
        self.redis_url = redis_url or require("redis")
        self.redis_prefix = f"{self.schema}:"
        self.env = {
            **os.environ,
            "TICKWHEEL_DATABASE_URL": f"{self.database_url}?search_path={self.schema}",
            "TICKWHEEL_REDIS_URL": self.redis_url,
            "TICKWHEEL_REDIS_PREFIX": self.redis_prefix,
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

        # On a thread of its own: a caller may hold a running loop (Playwright's sync API).
        with ThreadPoolExecutor(1) as thread:
            return thread.submit(asyncio.run, run()).result()

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
        with redis.Redis.from_url(self.redis_url) as client:
            for key in client.scan_iter(match=f"{self.redis_prefix}*", count=1000):
                client.delete(key)
