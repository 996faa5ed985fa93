"""An end of attempt that the store cannot take for a moment is tried again while the
lease lasts (issue 14: "ends are dropped, then re-run"), on either store. Executions are
counted by the handler itself, outside Tickwheel."""

from __future__ import annotations

import asyncio
import logging
import random
import sqlite3
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from proxy import Proxy
from services import require

from tickwheel import App, TaskContext
from tickwheel.config import Role, Settings
from tickwheel.models import Status
from tickwheel.node import Node

TASKS = 60
LEASE_SECONDS = 5  # longer than the outage, so that nothing needs to run again
OUTAGE_SECONDS = 2


def counting(runs: Counter[str]) -> App:
    handlers = App()

    @handlers.task("work")
    async def work(ctx: TaskContext, payload: Any) -> None:
        runs[ctx.task_id] += 1
        await asyncio.sleep(random.uniform(0.05, 0.5))

    return handlers


async def run_through_an_outage(
    submitter: Node, runs: Counter[str], cut: Any, restore: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Submit, cut the store off from the worker while tasks are ending, restore it, and
    check that every task succeeded having run exactly once."""
    # At debug: the outage itself is told by the store's `Outage`, the retries quietly.
    with caplog.at_level(logging.DEBUG, logger="tickwheel.worker.runner"):
        ids = [(await submitter.submit("work", i)).task_id for i in range(TASKS)]
        await until(lambda: len(runs) >= 10)
        cut()
        await asyncio.sleep(OUTAGE_SECONDS)
        restore()

        async def all_done() -> bool:
            views = [await submitter.service.get(t) for t in ids]
            return all(v.status is Status.SUCCEEDED for v in views)

        deadline = time.monotonic() + 30
        while not await all_done():
            assert time.monotonic() < deadline, "tasks did not finish"
            await asyncio.sleep(0.1)
    assert {runs[t] for t in ids} == {1}, {t: n for t, n in runs.items() if n != 1}
    retried = [r for r in caplog.records if "retrying while its lease lasts" in r.getMessage()]
    assert retried, "no end met the outage: the test proved nothing"


async def until(condition: Any, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)


async def test_ends_refused_by_the_embedded_store_for_2_s_run_nothing_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "ends.db"
    runs: Counter[str] = Counter()
    settings = Settings(database_url=f"sqlite:///{path}", lease_seconds=LEASE_SECONDS)

    def refuse_ends(sql: str) -> None:
        with sqlite3.connect(path, timeout=10) as db:
            db.execute(sql)

    async with Node(settings=settings, app=counting(runs)) as node:
        await run_through_an_outage(
            node,
            runs,
            lambda: refuse_ends(
                "CREATE TRIGGER refuse_ends BEFORE INSERT ON executions"
                " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            ),
            lambda: refuse_ends("DROP TRIGGER refuse_ends"),
            caplog,
        )


async def test_a_worker_cut_off_from_postgresql_for_2_s_runs_nothing_twice(
    database_url: str, redis_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker alone reaches PostgreSQL through a proxy that drops every connection
    for 2 s; the API and the scheduler (and its reaper) keep theirs."""
    runs: Counter[str] = Counter()
    base = Settings(
        database_url=database_url,
        redis_url=require("redis"),
        redis_prefix=redis_prefix,
        partitions=8,
        lease_seconds=LEASE_SECONDS,
    )
    target = urlsplit(database_url)
    with Proxy(target.hostname or "127.0.0.1", target.port or 5432) as proxy:
        through = target._replace(netloc=f"{target.username}@127.0.0.1:{proxy.port}")
        cut_off = replace(base, database_url=urlunsplit(through))
        scheduler = Node(settings=base, roles=frozenset({Role.API, Role.SCHEDULER}))
        worker = Node(settings=cut_off, app=counting(runs), roles=frozenset({Role.WORKER}))
        async with scheduler, worker:
            await run_through_an_outage(scheduler, runs, proxy.cut, proxy.restore, caplog)
