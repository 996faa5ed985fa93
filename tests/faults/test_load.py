"""More work than the workers can do, and a store kept from cleaning up after itself."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg
import pytest
from harness import Target
from ledger import Ledger
from runs import RecordedRuns, TargetRuns
from scenario import Running, assert_nothing_wrong, cluster_for, run
from services import require

TASK_SECONDS = 0.1


@pytest.fixture(autouse=True)
def short_tasks(target: Target) -> None:
    target.delays[TargetRuns.PATH] = TASK_SECONDS


@pytest.mark.full_faults
def test_sustained_overload_then_recovery(tmp_path: Path, ledger: Ledger) -> None:
    """Two workers of 8 slots drain 160 tasks/s; 240/s are submitted for a minute. The
    backlog grows by 80/s, admission may refuse with 429, and once the flood stops the
    backlog drains: every accepted task succeeds."""
    capacity = 2 * 8 / TASK_SECONDS
    with cluster_for(tmp_path, TICKWHEEL_CONCURRENCY="8") as cluster:
        Running(cluster, schedulers=2, workers=2)
        verdict = run(
            "1.5x the drain rate for 60 s",
            cluster,
            ledger,
            lambda: time.sleep(58),
            rate=1.5 * capacity,
            settle_seconds=180,
        )
    # The last accepted tasks wait for the backlog: a minute of half again the capacity.
    backlog_seconds = 60 * (1.5 - 1)
    assert_nothing_wrong(verdict, recovery_seconds=backlog_seconds + 15)


async def _pin_vacuum(database_url: str, seconds: float) -> None:
    """A transaction that holds its snapshot open: no dead row can be vacuumed meanwhile."""
    db = await asyncpg.connect(database_url)
    try:
        async with db.transaction(isolation="repeatable_read"):
            await db.fetchval("SELECT count(*) FROM pg_class")
            await asyncio.sleep(seconds)
    finally:
        await db.close()


@pytest.mark.full_faults
def test_a_long_transaction_pins_vacuum_while_100000_tasks_flow(tmp_path: Path) -> None:
    """A snapshot held for 100 s keeps every dead row of the flow: claims and ends must
    not slow to a crawl, and every task still succeeds. The runs are recorded by a
    handler of the workers' own (a thousand a second is more than the target takes)."""
    runs = RecordedRuns(require("redis"))
    ledger = Ledger(runs)
    try:
        with cluster_for(tmp_path) as cluster:
            Running(cluster, schedulers=2, workers=2, every=runs.env())
            verdict = run(
                "a transaction pins vacuum while 100,000 tasks flow",
                cluster,
                ledger,
                lambda: asyncio.run(_pin_vacuum(cluster.database_url, 100)),
                rate=1_000,
                batch=100,
                before_seconds=1,
                after_seconds=0,
                settle_seconds=120,
            )
    finally:
        runs.forget()
    assert verdict.accepted >= 100_000, verdict
    assert_nothing_wrong(verdict, recovery_seconds=10)
