"""Partition ownership by leases with fencing epochs.

Every partition is triggered by exactly one node at a time: the one holding its lease
in the store. The store's clock decides expiry. Every renewal also records the
partition's trigger watermark, fenced by the epoch, so a node whose lease was taken
over learns it on its next write and stops triggering that partition at once; until
then, the cron advances it makes for the partition present the epoch (`fence`) and are
refused. If a renewal cannot reach the store, the node stops triggering before its
leases could have expired (less a tenth of the lease), since another node may take
them then.

A renewal is one round trip (`LeaseStore.renew`: watermarks, give-backs, renewals and
the heartbeat in one statement, on PostgreSQL on a connection of its own so that a busy
pool never delays it), and a second only when the nodes alive changed this node's
share. It runs every third of the lease and may take until the leases are about to
lapse: over a far link (100 ms a round trip) triggering goes on, a little late, instead
of stopping because ~16 sequential round trips overran a fixed third of the lease.

A store in a file on this host (SQLite) also takes an OS lock for the process's life
(`HostLockedStore`): a process restarted after kill -9 finds the lock free, so the
dead holder's leases are freed at once instead of lapsing (see sqlite/holder.py).

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
from collections.abc import Collection, Mapping, Sequence

from tickwheel.clock import Clock
from tickwheel.engine.trigger import TriggerEngine, spans
from tickwheel.errors import StoreUnavailable
from tickwheel.metrics.recorder import Recorder
from tickwheel.periodic import Periodic
from tickwheel.storage.base import Fence, HostLockedStore, LeaseStore

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
        self._released: set[int] = set()  # since the last line told the changes
        self._count = 0  # partitions in the cluster, as the last renewal read
        self._valid_until = 0
        self._balance = balance
        self._loop = Periodic(
            "renewing partition leases",
            self.renew_once,
            clock=clock,
            every_seconds=self._ttl_ms / 3000,
            log=log,
            quiet=(StoreUnavailable, TimeoutError),
        )
        self._host_locked = False  # holds the store's host lock (an SQLite file's)
        self._alive: list[str] = []  # the scheduler nodes alive at the last heartbeat
        # Triggering stops this long before the leases could lapse unrenewed.
        self._margin_ms = self._ttl_ms // 10

    def _share(self, count: int) -> set[int]:
        """Every partition when alone (embedded mode), else this node's fair share among
        the nodes alive at the last heartbeat (before the first: what it holds)."""
        if not self._balance:
            return set(range(count))
        if not self._alive:
            return set(self.held)
        return fair_share(self.node_id, self._alive, count)

    async def run(self) -> None:
        await self._loop.run()

    async def renew_once(self) -> None:
        """Renew within the time left before the leases lapse; stop triggering if they
        may have lapsed meanwhile (renewed or not)."""
        deadline = self._deadline_seconds()
        try:
            try:
                async with asyncio.timeout(deadline):
                    got = await self._renew_leases()
            except TimeoutError:
                raise TimeoutError(f"the renewal took longer than {deadline:.2f} s") from None
            await self._apply(got)
        finally:
            self._drop_if_lapsed()

    def _deadline_seconds(self) -> float:
        """A renewal may take until the leases held are about to lapse: a slow link makes
        it slow, not fail. With nothing held, it may take most of a lease."""
        if not self.held:
            return (self._ttl_ms - self._margin_ms) / 1000
        return max(0, self._valid_until - self._margin_ms - self._clock.now_ms()) / 1000

    def fence(self, partition: int) -> Fence | None:
        """The lease this node believes it holds on `partition`, for a write made for the
        partition to present; None when it holds none."""
        epoch = self.held.get(partition)
        return None if epoch is None else Fence(self.node_id, partition, epoch)

    def poke(self) -> None:
        """Partitions were given back or a node joined: look for our share now."""
        self._loop.wake()

    async def renew(self) -> None:
        await self._apply(await self._renew_leases())

    async def _renew_leases(self) -> dict[int, int]:
        """One round trip to the store: watermarks, give-backs, renewals and the
        heartbeat at once. A second only when the nodes alive changed our share."""
        started = self._clock.now_ms()
        if isinstance(self._store, HostLockedStore) and not self._host_locked:
            self._host_locked = await self._store.hold_lock(self.node_id)
        count = self._count = await self._store.partitions()
        wanted = self._share(count)
        held = self._give_up(wanted, self.held)
        renewal = await self._store.renew(
            self.node_id, held, wanted, ttl_ms=self._ttl_ms, beat=self._balance
        )
        got = renewal.held
        if self._balance:
            self._alive = renewal.alive
            share = fair_share(self.node_id, renewal.alive, count)
            if share != wanted:  # a node joined or left: take or give back our share now
                held = self._give_up(share, got)
                got = (
                    await self._store.renew(
                        self.node_id, held, share, ttl_ms=self._ttl_ms, beat=False
                    )
                ).held
        self._valid_until = started + self._ttl_ms
        return got

    def _give_up(self, wanted: set[int], held: Mapping[int, int]) -> dict[int, tuple[int, int]]:
        """Stop triggering the partitions of `held` not `wanted` (the renewal then gives
        them back, so another node takes them at once), and return the watermarks to
        record for `held`: the trigger's for those triggered here under that epoch."""
        mark = self._trigger.triggered_until
        marks = {p: (e, mark if self.held.get(p) == e else 0) for p, e in held.items()}
        for partition in set(held) - wanted:
            self._lose(partition)
        return marks

    async def _apply(self, got: dict[int, int]) -> None:
        for partition in set(self.held) - set(got):
            self._lose(partition)
        gained = {p: e for p, e in got.items() if self.held.get(p) != e}
        for partition in gained:
            self._lose(partition)  # re-owned under a new epoch: reload from the store
        loaded = await self._trigger.gain(gained)
        self.held.update(gained)
        if gained:
            self._metrics.leases_changed(gained=len(gained))
        self._tell(gained, loaded)

    def _tell(self, gained: Collection[int], loaded: int) -> None:
        """One line per change of ownership, however many partitions it moved."""
        released, self._released = self._released - set(gained), set()
        if not gained and not released:
            return
        changes = [f"gained {spans(gained)} ({loaded} tasks loaded)"] if gained else []
        changes += [f"released {spans(released)}"] if released else []
        log.info(
            "partitions %s; %d of %d held here",
            ", ".join(changes),
            len(self.held),
            self._count,
        )

    def _drop_if_lapsed(self) -> None:
        """Stop triggering everything once our leases may have lapsed unrenewed."""
        if self.held and self._clock.now_ms() >= self._valid_until - self._margin_ms:
            log.error(
                "partition leases could not be renewed in time: stopping triggers of %s",
                spans(self.held),
            )
            for partition in list(self.held):
                self._lose(partition)
            self._released.clear()  # told

    def _lose(self, partition: int) -> None:
        if self.held.pop(partition, None) is not None:
            self._metrics.leases_changed(lost=1)
            self._released.add(partition)
        self._trigger.lose(partition)

    async def release_all(self) -> None:
        held, self.held = self.held, {}
        for partition in held:
            self._trigger.lose(partition)
        if held:
            await self._store.release(self.node_id, held)
            log.info("partitions released %s: this node is stopping", spans(held))
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
