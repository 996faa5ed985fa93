"""The composition root: wires a store, a ready queue, the engine and a worker.

`tickwheel up` runs one `Node` with everything in one process. The same parts run
apart in distributed mode; only the store and queue implementations differ.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from typing_extensions import Unpack

from tickwheel.clock import Clock, ClusterClock
from tickwheel.config import Role, Settings
from tickwheel.engine import readiness
from tickwheel.engine.admission import Admission
from tickwheel.engine.dependencies import DependencyResolver
from tickwheel.engine.dispatch import Dispatcher
from tickwheel.engine.drain import drain_loop
from tickwheel.engine.expiry import Expiry
from tickwheel.engine.leases import PartitionLeases
from tickwheel.engine.reaper import Reaper
from tickwheel.engine.reconciler import Reconciler
from tickwheel.engine.recurring import RecurringWorkflows
from tickwheel.engine.remote import RemoteWorkers
from tickwheel.engine.retention import retention_for
from tickwheel.engine.schedules import CronResolver
from tickwheel.engine.tasks import Submitted, TaskService
from tickwheel.engine.timekeeper import Timekeeper
from tickwheel.engine.trigger import TriggerEngine
from tickwheel.engine.waits import Waits
from tickwheel.engine.workflows import (
    WorkflowNode,
    WorkflowService,
    WorkflowView,
)
from tickwheel.engine.workforce import Handles, Workforce
from tickwheel.metrics import prometheus
from tickwheel.metrics.base import FLUSH_SECONDS, MetricsStore
from tickwheel.metrics.factory import open_metrics
from tickwheel.metrics.recorder import Recorder
from tickwheel.models import (
    ENGINE_QUEUE,
    WORKFLOW_TASK_TYPE,
    ScheduleOptions,
    SubmitOptions,
    TaskOptions,
)
from tickwheel.outage import Outage
from tickwheel.periodic import Periodic
from tickwheel.queue.base import ReadyItem, ReadyQueue
from tickwheel.queue.factory import open_queue
from tickwheel.storage.base import News, Store
from tickwheel.storage.factory import open_store_when_reachable
from tickwheel.tracing import export_over_otlp, tracing_for
from tickwheel.wire.requests import TaskRequest, request_of, schedule_of
from tickwheel.worker.builtin import HttpCaller, builtin_app
from tickwheel.worker.context import TaskContext
from tickwheel.worker.http_policy import HttpPolicy
from tickwheel.worker.registry import App, TaskType
from tickwheel.worker.runner import Worker, default_worker_id

if TYPE_CHECKING:
    from tickwheel.workflow import Workflow

log = logging.getLogger(__name__)


ALL_ROLES = frozenset(Role)


class Node:
    """Tickwheel in this process: by default every role on an embedded store and an
    in-process ready queue; in a cluster, some of the roles on PostgreSQL and Redis."""

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        app: App | None = None,
        clock: Clock | None = None,
        run_worker: bool = True,
        roles: frozenset[Role] = ALL_ROLES,
    ) -> None:
        self.settings = settings or Settings()
        self.clock = clock or ClusterClock()
        self._http = HttpCaller(HttpPolicy.parse(self.settings.http_allow, self.settings.http_deny))
        built_in = builtin_app(self._http)
        self._built_in_types = frozenset(built_in.types)
        self.app = built_in.merged(app or App())
        # Recurring workflows launch through a handler of the engine's own.
        self.app.task(WORKFLOW_TASK_TYPE, check_payload=self._check_launch)(self._launch)
        self._type_options = {name: _options_of(kind) for name, kind in self.app.types.items()}
        self.roles = roles if run_worker else roles - {Role.WORKER}
        self._loops: list[asyncio.Task[None]] = []
        self.node_id = self.settings.node_id or f"{default_worker_id()}:{uuid.uuid4().hex[:8]}"
        self.metrics = Recorder(self.clock)
        if self.settings.tracing:  # to the program's tracer provider, else over OTLP
            export_over_otlp(f"tickwheel-{'-'.join(sorted(self.roles))}")
        self.store_health = Outage("the store", log)
        self._timekeeper: Timekeeper | None = None

    async def start(self) -> None:
        """Open the store and the queue, then start this node's roles. If starting
        fails, what was opened is closed again and the partitions taken are given back."""
        s = self.settings
        self.store: Store = await open_store_when_reachable(
            s.database_url,
            partitions=s.partitions,
            migrate=s.migrate,
            name=f"tickwheel-{self.node_id}",
            health=self.store_health,
            # A process with no API runs only the engine's keyed statements.
            generic_plans=Role.API not in self.roles,
        )
        try:  # from here on, a failure closes the store again (a bad Redis URL, say)
            if isinstance(self.clock, ClusterClock):
                self._timekeeper = Timekeeper(self.clock, self.store.now_ms)
                await self._timekeeper.read()  # before anything is stamped with the time
            self.queue: ReadyQueue = open_queue(
                s.redis_url, prefix=s.redis_prefix, now_ms=self.clock.now_ms
            )
            self.metrics_store: MetricsStore = open_metrics(
                self.metrics, s.redis_url, prefix=s.redis_prefix
            )
            await self._start_roles()
        except BaseException:
            await self.stop()
            raise

    async def _start_roles(self) -> None:
        s = self.settings
        partitions = await self.store.partitions()
        self.tracing = tracing_for(s.tracing, self.store.traceparents_of, self.clock.now_ms)
        self.trigger = TriggerEngine(
            store=self.store,
            queue=self.queue,
            clock=self.clock,
            on_cron=self._on_cron,
            horizon_seconds=s.horizon_seconds,
            metrics=self.metrics,
            on_released=self.tracing.released if self.tracing.enabled else None,
        )
        self.leases = PartitionLeases(
            store=self.store,
            trigger=self.trigger,
            clock=self.clock,
            node_id=self.node_id,
            ttl_seconds=s.partition_lease_seconds,
            balance=s.balance_partitions,
            metrics=self.metrics,
        )
        self.cron = CronResolver(
            store=self.store,
            tasks=self.store,
            queue=self.queue,
            clock=self.clock,
            partitions=partitions,
            fence=self.leases.fence,  # advances are fenced by the fired instance's lease
            on_created=self.trigger.poke,
            metrics=self.metrics,
        )
        self.resolver = DependencyResolver(
            store=self.store, clock=self.clock, on_unblocked=self.trigger.poke
        )
        self.dispatcher = Dispatcher(
            store=self.store,
            trigger=self.trigger,
            clock=self.clock,
            partitions=partitions,
            lease_seconds=s.lease_seconds,
            on_ended=self.resolver.nudge,
            metrics=self.metrics,
        )
        self.reaper = Reaper(
            store=self.store, dispatcher=self.dispatcher, trigger=self.trigger, clock=self.clock
        )
        self.expiry = Expiry(
            store=self.store,
            trigger=self.trigger,
            clock=self.clock,
            on_ended=self.resolver.nudge,
            metrics=self.metrics,
        )
        own = None
        if Role.WORKER in self.roles:  # known before this node's worker first reports
            own = Handles(frozenset(s.queues), frozenset(self.app.types))
        self.workforce = Workforce(
            store=self.store, clock=self.clock, own=own, built_in=self._built_in_types
        )
        self.service = TaskService(
            store=self.store,
            clock=self.clock,
            partitions=partitions,
            on_committed=self.trigger.poke,
            on_cancelled=self.trigger.forget,
            on_ended=self.resolver.nudge,
            check_payload=self._check_payload,
            local_watermark=self._local_watermark,
            push_ready=self._push_ready,
            workforce=self.workforce,
            strict_task_types=s.strict_task_types,
            max_payload_bytes=s.max_payload_bytes,
            idempotency_window_seconds=s.idempotency_window_seconds,
        )
        self.waits = Waits(
            store=self.store,
            clock=self.clock,
            workforce=self.workforce,
            depth=self.queue.fresh_depth,
        )
        self.workflows = WorkflowService(
            store=self.store, tasks=self.service, clock=self.clock, on_committed=self.trigger.poke
        )
        self.recurring = RecurringWorkflows(workflows=self.workflows, tasks=self.service)
        self.worker = Worker(
            app=self.app,
            dispatcher=self.dispatcher,
            queue=self.queue,
            clock=self.clock,
            worker_id=self.node_id,
            queues=s.queues,
            concurrency=s.concurrency,
            prefetch=s.prefetch,
            registry=self.store,
            tracing=self.tracing,
        )
        # The engine's own tasks (launches of recurring workflows) run here even when
        # this node runs no worker for users' tasks.
        self.engine_worker = Worker(
            app=App({WORKFLOW_TASK_TYPE: self.app.types[WORKFLOW_TASK_TYPE]}),
            dispatcher=self.dispatcher,
            queue=self.queue,
            clock=self.clock,
            worker_id=f"{self.node_id}:engine",
            queues=(ENGINE_QUEUE,),
            concurrency=4,
            threads=1,
        )
        self.remote = RemoteWorkers(
            store=self.store, queue=self.queue, dispatcher=self.dispatcher, clock=self.clock
        )
        self.admission = Admission(
            clock=self.clock,
            depth=self.queue.depth,
            max_depth=s.max_ready_depth,
            max_drain_seconds=s.max_drain_seconds,
            store_failing=self.store_health.failing,
            queue_failing=self.queue.failing,
        )
        self._start_metrics()
        if self._timekeeper is not None:
            self._spawn(self._timekeeper.run())
        if Role.SCHEDULER in self.roles:
            await self._start_scheduler()
        if Role.WORKER in self.roles:
            for kind in self.app.types.values():  # the limits its task types declare
                if kind.limit is not None:
                    await self.store.put_limit(kind.limit, self.clock.now_ms())
            self._spawn(self.worker.run())
        if Role.API in self.roles:
            self._spawn(
                drain_loop(
                    self.admission,
                    queue=self.queue,
                    metrics=self.metrics_store,
                    clock=self.clock,
                    shares_workers=Role.WORKER in self.roles,
                ).run()
            )
        retention = retention_for(
            self.store,
            clock=self.clock,
            range_seconds=s.task_range_hours * 3600,
            retention_seconds=None if s.retention_days is None else s.retention_days * 86400,
            idempotency_window_seconds=s.idempotency_window_seconds,
        )
        if retention is not None and self.roles & {Role.API, Role.SCHEDULER}:
            self._spawn(retention.run())
        log.info(
            "node %s started (%s): %d of %d partitions",
            self.node_id,
            ", ".join(sorted(self.roles)),
            len(self.leases.held),
            partitions,
            extra={"node_id": self.node_id},
        )

    async def _start_scheduler(self) -> None:
        await self.store.subscribe(self._on_news)
        await self.trigger.start()
        await self.leases.renew()
        await self.resolver.resolve()  # news of tasks that ended just before a crash
        await self.trigger.load_once()
        self._spawn(self.trigger.run_loader(), self.trigger.run_trigger(), self.leases.run())
        self._spawn(self.reaper.run(), self.expiry.run(), self.resolver.run())
        self._spawn(self.engine_worker.run())
        if self.settings.redis_url:  # a queue that can lose what it holds
            reconciler = Reconciler(
                store=self.store,
                trigger=self.trigger,
                clock=self.clock,
                oldest_release=self.queue.oldest_release,
                wiped=self.queue.wiped,
                grace_seconds=self.settings.reconcile_after_seconds,
                interval_seconds=min(5.0, self.settings.reconcile_after_seconds / 2),
            )
            self._spawn(reconciler.run())

    def _start_metrics(self) -> None:
        """Counts flushed once a second; Prometheus reads this node's own registry."""
        self.prometheus = prometheus.registry(
            self.metrics.lifetime,
            prometheus.LiveState(
                depth=self.queue.depth,
                wheel_size=self.trigger.size,
                partitions_owned=lambda: len(self.leases.held),
            ),
        )
        # Reads flush anyway; this bounds what waits in the recorder. A flush that
        # fails keeps its counts for the next.
        flushing = Periodic(
            "flushing metrics",
            self.metrics_store.flush,
            clock=self.clock,
            every_seconds=FLUSH_SECONDS,
            log=log,
            wait_first=True,
        )
        self._spawn(flushing.run())

    def _on_news(self, news: News) -> None:
        """Another process made tasks pending, ended some with consequences, or moved
        partitions."""
        if news is News.NEW_TASKS:
            self.trigger.poke()
        elif news is News.ENDED:
            self.resolver.nudge()
        else:
            self.leases.poke()

    def _spawn(self, *loops: Any) -> None:
        self._loops.extend(asyncio.create_task(loop) for loop in loops)

    async def _on_cron(self, instances: Any, now_ms: int) -> None:
        await self.cron.on_triggered(instances, now_ms)

    async def _launch(self, ctx: TaskContext, payload: Any) -> None:
        await self.recurring(ctx, payload)

    def _check_launch(self, payload: Any) -> None:
        self.recurring.check(payload)

    def _check_payload(self, task_type: str, payload: Any) -> None:
        """A task type may check its payload at submission (the built-in http does)."""
        kind = self.app.get(task_type)
        if kind is not None and kind.check_payload is not None:
            kind.check_payload(payload)

    def _local_watermark(self, partition: int) -> int | None:
        return self.trigger.triggered_until if partition in self.trigger.partitions else None

    def outages(self) -> list[str]:
        """The dependencies this node's calls found failing a moment ago."""
        return readiness.outages(
            store_failing=self.store_health.failing(), queue_failing=self.queue.failing()
        )

    def interrupt(self) -> None:
        """The grace is running out: fail the store work running now, so that whoever
        waits on it learns what was stored (see `Store.interrupt`)."""
        if hasattr(self, "store"):
            self.store.interrupt()

    async def stop(self, grace_seconds: float | None = None) -> None:
        """Graceful: stop pulling, finish in-flight work within the grace period (the
        node's, unless less is left), give up the partitions so another node can take
        them at once, close the store. Safe after a start that failed half way."""
        if grace_seconds is None:
            grace_seconds = self.settings.shutdown_grace_seconds
        workers = [
            w
            for role, name in ((Role.SCHEDULER, "engine_worker"), (Role.WORKER, "worker"))
            if role in self.roles and (w := getattr(self, name, None)) is not None
        ]
        await asyncio.gather(*(w.stop(grace_seconds) for w in workers))
        for loop in self._loops:
            loop.cancel()
        if self._loops:
            _, stuck = await asyncio.wait(self._loops, timeout=5)
            for loop in stuck:
                log.error("%s did not stop when cancelled", loop.get_coro())
        self._loops.clear()
        if hasattr(self, "trigger"):
            await self.trigger.close()
        if hasattr(self, "leases"):
            with contextlib.suppress(Exception):
                await self.leases.release_all()
        await self._http.aclose()
        if hasattr(self, "tracing"):
            await self.tracing.close()
        if hasattr(self, "metrics_store"):
            with contextlib.suppress(Exception):
                await self.metrics_store.close()
        if hasattr(self, "queue"):
            await self.queue.close()
        await self.store.close()

    async def __aenter__(self) -> Node:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- the Python face of submission ---------------------------------------

    async def submit(
        self, task_type: str, payload: Any = None, **options: Unpack[SubmitOptions]
    ) -> Submitted:
        """Submit a task, acknowledged once committed; the options are those of
        `Client.submit`. Raises `InvalidRequest` naming the option at fault."""
        return await self.service.submit(self.request_of(task_type, payload, options))

    async def submit_workflow(
        self, flow: Workflow, *, idempotency_key: str | None = None
    ) -> WorkflowView:
        """Submit a workflow built in code, checked and stored whole. With a key, a
        repeat stores nothing and returns the workflow stored first."""
        nodes = self._nodes_of(flow)
        return await self.workflows.submit(flow.name, nodes, idempotency_key=idempotency_key)

    async def schedule_workflow(
        self, flow: Workflow, cron: str, **options: Unpack[ScheduleOptions]
    ) -> Submitted:
        """Launch the whole workflow at every fire time of `cron`; the options are the
        schedule's (`timezone`, `jitter_seconds`, `misfire_policy`, `overlap_policy`,
        `idempotency_key`). The answer carries the schedule's id."""
        unknown = options.keys() - ScheduleOptions.__annotations__.keys()
        if unknown:
            raise TypeError(f"unknown schedule options: {', '.join(sorted(unknown))}")
        schedule = schedule_of(cast(SubmitOptions, {"cron": cron, **options}))
        return await self.recurring.schedule(
            flow.name,
            self._nodes_of(flow),
            schedule,
            idempotency_key=options.get("idempotency_key"),
        )

    def _nodes_of(self, flow: Workflow) -> list[WorkflowNode]:
        return [
            WorkflowNode(
                t.name,
                self.request_of(t.task_type, t.payload, {**t.options, "dependencies": t.after}),
            )
            for t in flow.tasks
        ]

    def request_of(self, task_type: str, payload: Any, options: SubmitOptions) -> TaskRequest:
        """The engine's request for a task submitted with `options` (those of `submit`)."""
        return request_of(task_type, payload, options, self.type_options)

    async def _push_ready(self, items: list[ReadyItem]) -> None:
        await self.queue.push(items)
        self.metrics.released(items)
        if self.tracing.enabled:
            self.tracing.released(items)

    def type_options(self, task_type: str) -> TaskOptions:
        """The options a task of this type has unless its submission sets them."""
        return self._type_options.get(task_type, DEFAULT_OPTIONS)


DEFAULT_OPTIONS = TaskOptions()


def _options_of(kind: TaskType) -> TaskOptions:
    """The options a registered task type gives its tasks by default."""
    names = ("max_retries", "backoff_base_seconds", "backoff_max_seconds", "timeout_seconds")
    return replace(
        DEFAULT_OPTIONS,
        **{name: getattr(kind, name) for name in names if getattr(kind, name) is not None},
    )
