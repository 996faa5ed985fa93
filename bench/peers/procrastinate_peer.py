"""Procrastinate on PostgreSQL, as its documentation runs it.

Worker: `procrastinate --app=bench.peers.procrastinate_tasks.app worker`, once
per core: a Procrastinate worker is one asyncio process, and its documentation's first
way to more throughput is "to launch multiple workers, each using their own process".
Each keeps the documented default concurrency of one job at a time (`--concurrency` is
offered for I/O-bound async tasks, with no recommended figure), LISTEN/NOTIFY on, and a
poll every 5 s, which is also when a job scheduled for later is next looked for.

Database: a dedicated one (`TICKWHEEL_BENCH_DATABASE_URL`, by default `tickwheel_bench`),
created when missing; `reset` drops its schema and applies Procrastinate's afresh, so no
job of an earlier run is left.

Submission: `configure_task(name, schedule_at=...).batch_defer_async(...)`, its
documented batch API: one statement per chunk of the harness.

Reading its figures: a worker fetches through a plpgsql function whose cached plan rests
on the jobs table's statistics. Right after `reset` the table has none until autovacuum
analyzes it, and until then, with thousands of jobs due at once, every fetch sorts all
the waiting jobs (tens of ms each), so the burst drains slowly. Nothing here runs ANALYZE
for it: Procrastinate does not, and its documentation does not ask for it.

Logging: `--log-level=warning`.
"""

from __future__ import annotations

import psycopg
from procrastinate import App, PsycopgConnector
from procrastinate.types import JSONDict
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.peers import procrastinate_tasks
from bench.peers.shared import eta, per_core


class ProcrastinatePeer:
    name = "Procrastinate"
    distribution = "procrastinate"
    in_flight = 1

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.app = App(connector=PsycopgConnector(conninfo=database_url))
        self._open = False

    def worker_commands(self) -> list[list[str]]:
        app = f"--app={procrastinate_tasks.__name__}.app"
        return per_core("procrastinate", app, "--log-level=warning", "worker")

    def worker_env(self) -> dict[str, str]:
        return {procrastinate_tasks.DATABASE_URL_ENV: self.database_url}

    async def ready(self) -> bool:
        return True  # its database is up before its workers start

    async def reset(self) -> None:
        await _create_database(self.database_url)
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as db:
            await db.execute("DROP SCHEMA IF EXISTS public CASCADE")
            await db.execute("CREATE SCHEMA public")
        await (await self._opened()).schema_manager.apply_schema_async()

    async def submit(self, run: str, indexes: range, due_ms: int | None) -> None:
        task = (await self._opened()).configure_task(
            procrastinate_tasks.TASK, schedule_at=eta(due_ms)
        )
        jobs: list[JSONDict] = [{"run": run, "index": i} for i in indexes]
        await task.batch_defer_async(*jobs)

    async def close(self) -> None:
        if self._open:
            await self.app.close_async()
            self._open = False

    async def _opened(self) -> App:
        if not self._open:
            await self.app.open_async()
            self._open = True
        return self.app


async def _create_database(url: str) -> None:
    name = conninfo_to_dict(url)["dbname"]
    maintenance = make_conninfo(url, dbname="postgres")
    async with await psycopg.AsyncConnection.connect(maintenance, autocommit=True) as db:
        found = await db.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        if await found.fetchone() is None:
            await db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(str(name))))


def peer() -> ProcrastinatePeer:
    return ProcrastinatePeer(procrastinate_tasks.database_url())
