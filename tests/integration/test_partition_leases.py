"""Partition leases on a real SQLite store: what taking partitions costs."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from tickwheel.clock import ManualClock
from tickwheel.engine.leases import PartitionLeases
from tickwheel.engine.routing import Route
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.queue.memory import MemoryReadyQueue
from tickwheel.storage.sqlite.store import SqliteStore

PARTITIONS = 64


async def no_cron(batch: list[tuple[Route, int]], now_ms: int) -> None:
    pass


class CountingStore(SqliteStore):
    """The real store, counting the loads the trigger engine asks of it."""

    loads: list[list[int]]

    async def load_pending(self, partitions: Collection[int], **kwargs: Any) -> Any:
        self.loads.append(list(partitions))
        return await super().load_pending(partitions, **kwargs)


async def test_taking_every_partition_is_one_load(tmp_path: Path) -> None:
    """Over a slow link each load is a round trip: taking 64 partitions one load each
    outlasted the lease they were taken under, and the node dropped them all again."""
    store = CountingStore(str(tmp_path / "s.db"), partitions=PARTITIONS)
    store.loads = []
    await store.open()
    clock = ManualClock(1_800_000_000_000)
    queue = MemoryReadyQueue(now_ms=clock)
    trigger = TriggerEngine(store=store, queue=queue, clock=clock, on_cron=no_cron)
    leases = PartitionLeases(store=store, trigger=trigger, clock=clock, node_id="n1")
    try:
        await leases.renew()
    finally:
        await trigger.close()
        await store.close()
    assert set(leases.held) == set(range(PARTITIONS))
    assert store.loads == [list(range(PARTITIONS))]
