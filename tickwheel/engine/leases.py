"""Partition ownership by leases with fencing epochs.

Every partition is triggered by exactly one node at a time: the one holding its lease
in the store. The store's clock decides expiry. Every renewal also records the
partition's trigger watermark, fenced by the epoch, so a node whose lease was taken
over learns it on its next write and stops triggering that partition at once; until
then, the cron advances it makes for the partition present the epoch (`fence`) and are
refused. If a renewal cannot reach the store, the node stops triggering before its
leases could have expired, since another node may take them then.

With several scheduler nodes (`balance`), each heartbeats in the store and wants the
partitions that rendezvous hashing gives it among the nodes alive: every node computes
the same split from the same list, a node joining or leaving moves only its share, and
a node gives back at once what is no longer its own so that the new owner need not wait
for the lease to lapse. The store's leases still decide: two nodes with different views
of who is alive can want one partition, and only one of them holds it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Collection, Sequence

from tickwheel.clock import Clock
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.metrics.recorder import Recorder
from tickwheel.storage.base import Fence, LeaseStore
from tickwheel.waiting import wait_event

log = logging.getLogger(__name__)


class PartitionLeases:
    def __init__(
        self,
        *,
        store: LeaseStore,
        trigger: TriggerEngine,
        clock: Clock,
        node_id: str,
        ttl_seconds: float = 15.0,
        balance: bool = False,
        metrics: Recorder | None = None,
    ) -> None:
        self._store = store
        self._metrics = metrics or Recorder(clock)
        self._trigger = trigger
        self._clock = clock
        self.node_id = node_id
        self._ttl_ms = round(ttl_seconds * 1000)
        self.held: dict[int, int] = {}  # partition -> epoch
        self._valid_until = 0
        self._balance = balance
        self._changed = asyncio.Event()

    async def wanted(self) -> Collection[int]:
        """Every partition when alone (embedded mode), else this node's fair share."""
        count = await self._store.partitions()
        if not self._balance:
            return range(count)
        alive = await self._store.heartbeat(self.node_id, ttl_ms=self._ttl_ms)
        return fair_share(self.node_id, alive, count)

    async def run(self) -> None:
        interval = self._ttl_ms / 3000
        while True:
            try:
                async with asyncio.timeout(interval):
                    got = await self._renew_leases()
                await self._apply(got)
            except Exception:
                log.exception("renewing partition leases failed")
            self._drop_if_lapsed()
            await wait_event(self._changed, interval)
            self._changed.clear()

    def fence(self, partition: int) -> Fence | None:
        """The lease this node believes it holds on `partition`, for a write made for the
        partition to present; None when it holds none."""
        epoch = self.held.get(partition)
        return None if epoch is None else Fence(self.node_id, partition, epoch)

    def poke(self) -> None:
        """Partitions were given back or a node joined: look for our share now."""
        self._changed.set()

    async def renew(self) -> None:
        await self._apply(await self._renew_leases())

    async def _renew_leases(self) -> dict[int, int]:
        started = self._clock.now_ms()
        marks = {p: (epoch, self._trigger.triggered_until) for p, epoch in self.held.items()}
        lost = await self._store.set_watermarks(self.node_id, marks) if marks else set()
        for partition in lost:
            self._lose(partition)
        wanted = set(await self.wanted())
        unwanted = {p: epoch for p, epoch in self.held.items() if p not in wanted}
        if unwanted:  # another node's share now: stop, then let it take them at once
            for partition in unwanted:
                self._lose(partition)
            await self._store.release(self.node_id, unwanted)
        got = await self._store.acquire(self.node_id, wanted, ttl_ms=self._ttl_ms)
        self._valid_until = started + self._ttl_ms
        return got

    async def _apply(self, got: dict[int, int]) -> None:
        for partition in set(self.held) - set(got):
            self._lose(partition)
        for partition, epoch in got.items():
            if self.held.get(partition) != epoch:
                self._lose(partition)  # re-owned under a new epoch: reload from the store
                await self._trigger.gain(partition)
                self.held[partition] = epoch
                self._metrics.leases_changed(gained=1)

    def _drop_if_lapsed(self) -> None:
        """Stop triggering everything once our leases may have lapsed unrenewed."""
        if self.held and self._clock.now_ms() >= self._valid_until:
            log.error("partition leases could not be renewed in time: stopping triggers")
            for partition in list(self.held):
                self._lose(partition)

    def _lose(self, partition: int) -> None:
        if self.held.pop(partition, None) is not None:
            self._metrics.leases_changed(lost=1)
        self._trigger.lose(partition)

    async def release_all(self) -> None:
        held, self.held = self.held, {}
        for partition in held:
            self._trigger.lose(partition)
        if held:
            await self._store.release(self.node_id, held)
        if self._balance:
            await self._store.leave(self.node_id)


def fair_share(node_id: str, alive: Sequence[str], partitions: int) -> set[int]:
    """The partitions rendezvous hashing gives `node_id` among the nodes `alive`: each
    partition goes to the node with the highest hash of (node, partition)."""
    if node_id not in alive:
        alive = [*alive, node_id]
    return {p for p in range(partitions) if max(alive, key=lambda n: _score(n, p)) == node_id}


def _score(node_id: str, partition: int) -> int:
    digest = hashlib.blake2b(f"{node_id}/{partition}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")
