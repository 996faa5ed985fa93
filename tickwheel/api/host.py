"""What the API serves: the node it is given, as far as the routes read it.

The API sits below the composition root (`tickwheel.node`), which wires the engine and
the workers and is handed to `create_app` by whoever serves it (`tickwheel up`, a test).
The routes name here what they read of it, so the API imports the engine's parts, never
the root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from tickwheel.clock import Clock
    from tickwheel.config import Settings
    from tickwheel.engine.admission import Admission
    from tickwheel.engine.leases import PartitionLeases
    from tickwheel.engine.recurring import RecurringWorkflows
    from tickwheel.engine.remote import RemoteWorkers
    from tickwheel.engine.tasks import TaskService
    from tickwheel.engine.trigger import TriggerEngine
    from tickwheel.engine.waits import Waits
    from tickwheel.engine.workflows import WorkflowService
    from tickwheel.metrics.base import MetricsStore
    from tickwheel.models import TaskOptions
    from tickwheel.queue.base import ReadyQueue
    from tickwheel.storage.base import Store
    from tickwheel.tracing import Tracing


class Running(Protocol):
    """The in-process worker, as the health check reads it."""

    @property
    def inflight(self) -> int: ...


class Host(Protocol):
    """A node whose API this is. Its parts exist once `start` has run."""

    @property
    def node_id(self) -> str: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def store(self) -> Store: ...
    @property
    def queue(self) -> ReadyQueue: ...
    @property
    def service(self) -> TaskService: ...
    @property
    def workflows(self) -> WorkflowService: ...
    @property
    def recurring(self) -> RecurringWorkflows: ...
    @property
    def admission(self) -> Admission: ...
    @property
    def remote(self) -> RemoteWorkers: ...
    @property
    def waits(self) -> Waits: ...
    def outages(self) -> list[str]: ...
    @property
    def trigger(self) -> TriggerEngine: ...
    @property
    def leases(self) -> PartitionLeases: ...
    @property
    def worker(self) -> Running: ...
    @property
    def metrics_store(self) -> MetricsStore: ...
    @property
    def prometheus(self) -> CollectorRegistry: ...
    @property
    def tracing(self) -> Tracing: ...

    def type_options(self, task_type: str) -> TaskOptions:
        """The options a task of this type has unless its submission sets them."""
        ...

    async def start(self) -> None: ...
    async def stop(self, grace_seconds: float | None = None) -> None: ...
