"""Converts between API bodies and engine records."""

from __future__ import annotations

from datetime import datetime

from fastapi import Response

from tickwheel.api.host import Host
from tickwheel.api.schemas.ops import (
    InstanceOut,
    NodesOut,
    PartitionLeaseOut,
    SchedulerNodeOut,
    ScheduleSummaryOut,
    WorkerOut,
    WorkflowSummaryOut,
)
from tickwheel.api.schemas.tasks import (
    BatchOut,
    ExecutionOut,
    PredecessorOut,
    QueuesOut,
    RetryBackoffOut,
    ScheduleOut,
    SubmittedOut,
    TaskOut,
    WaitOut,
)
from tickwheel.api.schemas.workflows import WorkflowIn, WorkflowNodeOut, WorkflowOut
from tickwheel.clock import to_datetime
from tickwheel.engine.operations import ClusterView, workflow_status
from tickwheel.engine.tasks import Submitted, TaskView
from tickwheel.engine.waits import Reason, Wait
from tickwheel.engine.workflows import NodeView, WorkflowNode, WorkflowView
from tickwheel.models import ExecutionRecord, Status
from tickwheel.storage.base import InstanceBrief, ScheduleSummary, WorkflowSummary
from tickwheel.wire.requests import task_request, traced


def mark_replayed(response: Response, duplicate: bool) -> None:
    """An idempotent repeat is answered 200, not 201, and says so."""
    if duplicate:
        response.status_code = 200
        response.headers["Idempotent-Replayed"] = "true"


def submitted_out(submitted: Submitted) -> SubmittedOut:
    due = to_datetime(submitted.due_ms)
    assert due is not None
    return SubmittedOut(
        task_id=submitted.task_id,
        status=str(submitted.status),
        due_time=due,
        schedule_id=submitted.schedule_id,
        duplicate=submitted.duplicate,
        warnings=list(submitted.warnings),
    )


def batch_answer(submitted: list[Submitted]) -> Response:
    """The 201 of a batch, encoded in one pass: the engine's values need no validation,
    and the tasks of a batch share a few due times."""
    moments: dict[int, datetime] = {}

    def due(ms: int) -> datetime:
        moment = moments.get(ms) or to_datetime(ms)
        assert moment is not None
        moments[ms] = moment
        return moment

    tasks = [
        SubmittedOut.model_construct(
            task_id=s.task_id,
            status=str(s.status),
            due_time=due(s.due_ms),
            schedule_id=s.schedule_id,
            duplicate=s.duplicate,
            warnings=list(s.warnings),
        )
        for s in submitted
    ]
    warnings = list(dict.fromkeys(w for s in submitted for w in s.warnings))
    body = BatchOut.model_construct(tasks=tasks, warnings=warnings).model_dump_json().encode()
    return Response(body, status_code=201, media_type="application/json")


def workflow_nodes(
    body: WorkflowIn, node: Host, traceparent: str | None = None
) -> list[WorkflowNode]:
    """The workflow's tasks as the engine's requests, carrying `traceparent` if given."""
    requests = traced([task_request(t, node.type_options) for t in body.tasks], traceparent)
    return [WorkflowNode(t.name, r) for t, r in zip(body.tasks, requests, strict=True)]


def _status(view: TaskView) -> str:
    """A recurring task's status is its schedule's while paused (its pending instance
    was cancelled by the pause), else its current instance's."""
    s = view.schedule
    if s is not None and s.status == "paused" and view.task_id == s.schedule_id:
        return "paused"
    return str(view.status)


def task_out(view: TaskView, waits: list[Wait] | None = None) -> TaskOut:
    r, s = view.record, view.schedule
    if r is None:
        raise LookupError(view.task_id)
    o = r.options
    created = to_datetime(s.created_ms if s else r.created_ms)
    assert created is not None
    return TaskOut(
        task_id=view.task_id,
        task_type=r.task_type,
        status=_status(view),
        payload=r.payload,
        schedule=ScheduleOut(
            type=str(r.schedule_type),
            schedule_id=r.schedule_id,
            cron_expression=s.cron_expression if s else None,
            timezone=s.timezone if s else None,
            jitter_seconds=s.jitter_seconds if s else None,
            misfire_policy=s.misfire_policy if s else None,
            overlap_policy=s.overlap_policy if s else None,
            schedule_status=s.status if s else None,
            expires_after_seconds=_seconds(s.expires_after_ms) if s else None,
        ),
        queue=o.queue,
        priority=o.priority,
        max_retries=o.max_retries,
        retry_backoff=RetryBackoffOut(
            base_seconds=o.backoff_base_seconds, max_seconds=o.backoff_max_seconds
        ),
        timeout_seconds=o.timeout_seconds,
        idempotency_key=r.idempotency_key,
        ordering_key=r.ordering_key,
        limit_key=r.limit_key,
        held_by=r.held_by,
        expires_at=to_datetime(r.expires_ms),
        traceparent=r.traceparent,
        attempts=r.attempts,
        fence=r.version,
        due_time=to_datetime(r.due_ms),
        created_at=created,
        triggered_at=to_datetime(r.triggered_ms),
        started_at=to_datetime(r.started_ms),
        completed_at=to_datetime(r.completed_ms),
        lease_expires_at=to_datetime(r.lease_expires_ms),
        worker_id=r.worker_id,
        last_error=r.last_error,
        current_instance_id=r.task_id if s else None,
        waiting_on=None if waits is None else [_wait_out(w) for w in waits],
    )


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _wait_out(wait: Wait) -> WaitOut:
    return WaitOut(
        reason=str(wait.reason),
        message=wait.message,
        tasks=[PredecessorOut(task_id=p.task_id, status=str(p.status)) for p in wait.tasks]
        if wait.reason is Reason.PREDECESSORS
        else None,
        key=wait.key,
        holder=wait.holder,
        schedule_id=wait.schedule_id,
        due_time=to_datetime(wait.due_ms),
        partition=wait.partition,
        ahead=wait.ahead,
        queue=wait.queue,
        task_type=wait.task_type,
        limit=wait.limit,
    )


def execution_out(e: ExecutionRecord) -> ExecutionOut:
    started, ended = to_datetime(e.started_ms), to_datetime(e.ended_ms)
    assert started is not None and ended is not None
    return ExecutionOut(
        execution_id=e.id,
        task_id=e.task_id,
        attempt=e.attempt,
        fence=e.fence,
        worker_id=e.worker_id,
        started_at=started,
        ended_at=ended,
        outcome=str(e.outcome),
        error=e.error,
        retry_at=to_datetime(e.retry_at_ms),
    )


def workflow_out(view: WorkflowView) -> WorkflowOut:
    created = to_datetime(view.record.created_ms)
    assert created is not None
    return WorkflowOut(
        workflow_id=view.record.workflow_id,
        name=view.record.name,
        status=view.status,
        created_at=created,
        counts=view.counts,
        tasks=[_node_out(n) for n in view.nodes],
        warnings=list(view.warnings),
    )


def _node_out(node: NodeView) -> WorkflowNodeOut:
    r = node.task.record
    assert r is not None
    return WorkflowNodeOut(
        name=node.name,
        task_id=node.task.task_id,
        task_type=r.task_type,
        status=str(node.task.status),
        dependencies=list(node.dependencies),
        ordering_key=r.ordering_key,
        limit_key=r.limit_key,
        attempts=r.attempts,
        started_at=to_datetime(r.started_ms),
        completed_at=to_datetime(r.completed_ms),
        last_error=r.last_error,
    )


def _at(ms: int) -> datetime:
    moment = to_datetime(ms)
    assert moment is not None
    return moment


def schedule_summary_out(summary: ScheduleSummary) -> ScheduleSummaryOut:
    s, current = summary.schedule, summary.current
    upcoming = s.status == "active" and current is not None and current.status is Status.PENDING
    return ScheduleSummaryOut(
        schedule_id=s.schedule_id,
        task_type=s.task_type,
        cron_expression=s.cron_expression,
        timezone=s.timezone,
        jitter_seconds=s.jitter_seconds,
        status=s.status,
        queue=s.options.queue,
        priority=s.options.priority,
        misfire_policy=s.misfire_policy,
        overlap_policy=s.overlap_policy,
        created_at=_at(s.created_ms),
        next_fire_time=_at(current.due_ms) if upcoming and current else None,
        current_instance_id=current.task_id if current else None,
        last_run=_instance_out(summary.previous),
    )


def _instance_out(instance: InstanceBrief | None) -> InstanceOut | None:
    if instance is None:
        return None
    return InstanceOut(
        task_id=instance.task_id,
        status=str(instance.status),
        due_time=_at(instance.due_ms),
        ended_at=to_datetime(instance.completed_ms),
    )


def workflow_summary_out(summary: WorkflowSummary) -> WorkflowSummaryOut:
    w = summary.record
    return WorkflowSummaryOut(
        workflow_id=w.workflow_id,
        name=w.name,
        status=workflow_status(summary),
        created_at=_at(w.created_ms),
        task_count=sum(summary.counts.values()),
        counts={str(status): n for status, n in summary.counts.items()},
    )


def nodes_out(view: ClusterView) -> NodesOut:
    return NodesOut(
        partition_count=view.partition_count,
        unowned_partitions=view.unowned,
        schedulers=[
            SchedulerNodeOut(
                node_id=n.node_id,
                heartbeat_expires_at=to_datetime(n.heartbeat_expires_ms),
                partitions=[
                    PartitionLeaseOut(
                        partition=h.partition, epoch=h.epoch, lease_expires_at=_at(h.expires_ms)
                    )
                    for h in n.leases
                ],
            )
            for n in view.schedulers
        ],
        workers=[
            WorkerOut(
                worker_id=w.worker_id,
                kind=w.kind,
                queues=list(w.queues),
                task_types=None if w.task_types is None else list(w.task_types),
                inflight=w.inflight,
                concurrency=w.concurrency,
                started_at=_at(w.started_ms),
                last_heartbeat_at=_at(w.seen_ms),
                expires_at=_at(w.expires_ms),
            )
            for w in view.workers
        ],
    )


def queues_out(node: Host) -> QueuesOut:
    """Ready-queue depth per queue and the admission state it decides."""
    state = node.admission.state()
    return QueuesOut(
        depth=state.depth,
        backlog=state.backlog,
        drain_per_second=state.drain_per_second,
        seconds_to_drain=state.seconds_to_drain,
        admitting=state.open,
        max_depth=node.admission.max_depth,
        max_drain_seconds=node.admission.max_drain_seconds,
    )
