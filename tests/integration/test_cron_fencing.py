"""A scheduler node whose lease on a partition was taken over, before it noticed, still
releases that partition's cron instance from its wheel: the advance presents the stale
epoch, so the schedule stays where it is and the instance is not pushed."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tickwheel.clock import ManualClock, to_ms
from tickwheel.config import Settings
from tickwheel.core.cron import CronSpec
from tickwheel.models import ScheduleType, Status, TaskOptions
from tickwheel.node import Node
from tickwheel.wire.requests import ScheduleRequest, TaskRequest

# 10 s before a minute: the first instance of "* * * * *" is due at 12:01:00.
START_MS = to_ms(datetime(2026, 1, 5, 12, 0, 50, tzinfo=UTC))
QUEUE = "cron"
LEASE_SECONDS = 600.0  # no renewal during the test: the node keeps its stale view


async def until_logged(caplog: pytest.LogCaptureFixture, text: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while text not in caplog.text:
        assert time.monotonic() < deadline, f"never logged: {text}"
        await asyncio.sleep(0.05)


async def take_over(node: Node, partition: int) -> tuple[int, int]:
    """Another node takes `partition` over: the epochs before and after. `node` learns
    it at its next renewal, LEASE_SECONDS / 3 after its first, which writes a watermark."""
    while (await node.store.watermarks())[partition] == 0:
        await asyncio.sleep(0.01)
    while True:
        epoch = node.leases.held[partition]
        await node.store.release(node.node_id, {partition: epoch})
        renewal = await node.store.renew("node-2", {}, [partition], ttl_ms=60_000, beat=False)
        taken = renewal.held
        if taken:
            return epoch, taken[partition]
        await asyncio.sleep(0.01)  # that renewal took it back just now: again


async def test_a_node_that_lost_its_lease_does_not_advance_or_push(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tickwheel.engine.schedules")
    clock = ManualClock(START_MS)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'fence.db'}",
        partition_lease_seconds=LEASE_SECONDS,
    )
    async with Node(settings=settings, clock=clock, run_worker=False) as node:
        cron = ScheduleRequest(ScheduleType.CRON, cron=CronSpec("* * * * *"))
        request = TaskRequest("tick", {}, cron, TaskOptions(queue=QUEUE))
        schedule_id = (await node.service.submit(request)).schedule_id
        assert schedule_id is not None
        before = await node.store.get_schedule(schedule_id)
        assert before is not None and before.current_seq is not None
        (first,) = await node.store.get_tasks([before.current_seq])
        epoch, taken = await take_over(node, first.partition)
        assert taken > epoch

        clock.advance(15)  # past the instance's due time: the wheel releases it
        await until_logged(caplog, f"instances {{{first.seq}}} not pushed")

        assert await node.store.get_schedule(schedule_id) == before
        (still,) = await node.store.get_tasks([first.seq])
        assert still.status is Status.PENDING
        assert await node.queue.pull([QUEUE], limit=10, wait_seconds=0) == []
        assert node.leases.held[first.partition] == epoch  # the stale view was in play
