"""What operators see of a cluster: its scheduler nodes with their partitions, its
workers, and the derived state of listed workflows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tickwheel.engine.workflows import derived_status
from tickwheel.storage.base import (
    LeaseHolder,
    LeaseStore,
    WorkerRecord,
    WorkerStore,
    WorkflowSummary,
)


class ClusterStore(LeaseStore, WorkerStore, Protocol):
    pass


@dataclass(frozen=True, slots=True)
class SchedulerView:
    node_id: str
    heartbeat_expires_ms: int | None  # None: it holds leases without heartbeats (embedded)
    leases: list[LeaseHolder]


@dataclass(frozen=True, slots=True)
class ClusterView:
    partition_count: int
    unowned: list[int]
    schedulers: list[SchedulerView]
    workers: list[WorkerRecord]


async def cluster(store: ClusterStore) -> ClusterView:
    """The scheduler nodes alive, which are those heartbeating and those holding leases
    (an embedded node holds every partition without heartbeating), and the workers
    alive; all by the store's clock."""
    count = await store.partitions()
    holders = await store.lease_holders()
    beating = {n.node_id: n.expires_ms for n in await store.scheduler_nodes()}
    owners = sorted(beating.keys() | {h.owner for h in holders})
    schedulers = [
        SchedulerView(node, beating.get(node), [h for h in holders if h.owner == node])
        for node in owners
    ]
    owned = {h.partition for h in holders}
    unowned = [p for p in range(count) if p not in owned]
    return ClusterView(count, unowned, schedulers, await store.live_workers())


def workflow_status(summary: WorkflowSummary) -> str:
    return derived_status([status for status, n in summary.counts.items() if n])
