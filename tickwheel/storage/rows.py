"""Rows <-> records. Rows are read by column name, so a query may order or add columns
freely: both stores' queries name their columns alike (see named_queries.py), and an
expression or a column read twice (an instance's status beside its schedule's) gets an
alias. Parameters still go in the order of the statements' placeholders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from tickwheel.models import (
    ClaimedTask,
    ExecutionRecord,
    NewTask,
    Outcome,
    ScheduleRecord,
    ScheduleType,
    Status,
    TaskOptions,
    TaskRecord,
    WheelEntry,
    WorkflowRecord,
)
from tickwheel.storage.base import (
    InstanceBrief,
    ScheduleSummary,
    WorkerRecord,
    WorkflowSummary,
)


class Row(Protocol):
    """A row by column name: a sqlite3.Row, a Record from asyncpg."""

    def __getitem__(self, name: str, /) -> Any: ...


def task_params(t: NewTask, status: Status = Status.PENDING) -> list[Any]:
    return [
        t.task_id,
        t.partition,
        t.task_type,
        json.dumps(t.payload) if t.encoded_payload is None else t.encoded_payload,
        str(t.schedule_type),
        t.schedule_id,
        *option_params(t.options),
        t.due_ms,
        t.created_ms,
        t.idempotency.key if t.idempotency else None,
        t.workflow_id,
        t.node_name,
        t.ordering_key,
        str(status),
        t.created_ms if status.is_final else None,
        t.request_hash,
        t.created_ms if t.direct else None,  # released with its commit: triggered_at
        t.expires_ms,
        t.traceparent,
        t.limit_key,
    ]


def start_status(predecessors: Sequence[Status]) -> Status:
    if any(s.is_final and s is not Status.SUCCEEDED for s in predecessors):
        return Status.UPSTREAM_FAILED
    if all(s is Status.SUCCEEDED for s in predecessors):
        return Status.PENDING
    return Status.BLOCKED


def edge_state(predecessor: Status) -> str:
    if predecessor is Status.SUCCEEDED:
        return "satisfied"
    return "failed" if predecessor.is_final else "waiting"


def option_params(o: TaskOptions) -> list[Any]:
    """The option columns, in the order of both tables (and of the statements' placeholders)."""
    return [
        o.queue,
        o.priority,
        o.max_retries,
        o.backoff_base_seconds,
        o.backoff_max_seconds,
        o.timeout_seconds,
    ]


def options(r: Row) -> TaskOptions:
    return TaskOptions(
        r["queue"],
        r["priority"],
        r["max_retries"],
        r["backoff_base"],
        r["backoff_max"],
        r["timeout_seconds"],
    )


def task(r: Row) -> TaskRecord:
    return TaskRecord(
        seq=r["seq"],
        task_id=r["task_id"],
        partition=r["partition"],
        task_type=r["task_type"],
        payload=json.loads(r["payload"]),
        status=Status(r["status"]),
        version=r["version"],
        schedule_type=ScheduleType(r["schedule_type"]),
        schedule_id=r["schedule_id"],
        due_ms=r["due_time"],
        options=options(r),
        attempts=r["attempts"],
        created_ms=r["created_at"],
        triggered_ms=r["triggered_at"],
        started_ms=r["started_at"],
        completed_ms=r["completed_at"],
        lease_expires_ms=r["lease_expires_at"],
        worker_id=r["worker_id"],
        last_error=r["last_error"],
        idempotency_key=r["idempotency_key"],
        workflow_id=r["workflow_id"],
        node_name=r["node_name"],
        ordering_key=r["ordering_key"],
        expires_ms=r["expires_at"],
        traceparent=r["traceparent"],
        limit_key=r["limit_key"],
        held_by=r["held_by"],
    )


def claimed(r: Row) -> ClaimedTask:
    return ClaimedTask(
        seq=r["seq"],
        task_id=r["task_id"],
        task_type=r["task_type"],
        payload=json.loads(r["payload"]),
        attempt=r["attempts"],
        fence=r["version"],
        due_ms=r["due_time"],
        lease_expires_ms=r["lease_expires_at"],
        timeout_seconds=r["timeout_seconds"],
        options=options(r),
        expires_ms=r["expires_at"],
        traceparent=r["traceparent"],
    )


def wheel_entry(r: Row) -> WheelEntry:
    return WheelEntry(
        r["seq"],
        r["partition"],
        r["due_time"],
        r["queue"],
        r["priority"],
        bool(r["is_cron"]),  # an integer from SQLite
        r["mark"],
    )


def execution(r: Row) -> ExecutionRecord:
    return ExecutionRecord(
        id=r["id"],
        task_id=r["task_id"],
        attempt=r["attempt"],
        fence=r["fence"],
        worker_id=r["worker_id"],
        started_ms=r["started_at"],
        ended_ms=r["ended_at"],
        outcome=Outcome(r["outcome"]),
        error=r["error"],
        retry_at_ms=r["retry_at"],
    )


def schedule_params(s: ScheduleRecord) -> list[Any]:
    return [
        s.schedule_id,
        s.task_type,
        json.dumps(s.payload),
        *option_params(s.options),
        s.cron_expression,
        s.timezone,
        s.jitter_seconds,
        s.misfire_policy,
        s.overlap_policy,
        s.status,
        s.version,
        s.current_seq,
        s.previous_seq,
        s.created_ms,
        s.expires_after_ms,
    ]


def schedule(r: Row) -> ScheduleRecord:
    return ScheduleRecord(
        schedule_id=r["schedule_id"],
        task_type=r["task_type"],
        payload=json.loads(r["payload"]),
        options=options(r),
        cron_expression=r["cron_expression"],
        timezone=r["timezone"],
        jitter_seconds=r["jitter_seconds"],
        misfire_policy=r["misfire_policy"],
        overlap_policy=r["overlap_policy"],
        status=r["status"],
        version=r["version"],
        current_seq=r["current_seq"],
        previous_seq=r["previous_seq"],
        created_ms=r["created_at"],
        expires_after_ms=r["expires_after_ms"],
    )


def schedule_summary(r: Row) -> ScheduleSummary:
    """A schedule's columns, then task_id, status, due_time and completed_at of its
    current and of its previous instance, prefixed `current_` and `previous_`, null
    when it has none."""
    return ScheduleSummary(schedule(r), _instance(r, "current_"), _instance(r, "previous_"))


def _instance(r: Row, prefix: str) -> InstanceBrief | None:
    task_id = r[prefix + "task_id"]
    if task_id is None:
        return None
    return InstanceBrief(
        task_id,
        Status(r[prefix + "status"]),
        r[prefix + "due_time"],
        r[prefix + "completed_at"],
    )


def workflow(r: Row) -> WorkflowRecord:
    return WorkflowRecord(r["workflow_id"], r["name"], r["created_at"], r["request_hash"])


def workflow_summaries(workflows: Sequence[Row], counts: Sequence[Row]) -> list[WorkflowSummary]:
    """Workflows with their tasks counted by status, from rows of
    (workflow_id, status, count)."""
    counted: dict[str, dict[Status, int]] = {w["workflow_id"]: {} for w in workflows}
    for c in counts:
        counted[c["workflow_id"]][Status(c["status"])] = c["count"]
    return [WorkflowSummary(workflow(w), counted[w["workflow_id"]]) for w in workflows]


def worker(r: Row) -> WorkerRecord:
    return WorkerRecord(
        worker_id=r["worker_id"],
        kind=r["kind"],
        queues=tuple(json.loads(r["queues"])),
        concurrency=r["concurrency"],
        started_ms=r["started_at"],
        seen_ms=r["seen_at"],
        expires_ms=r["expires_at"],
        inflight=r["inflight"],
        task_types=None if r["task_types"] is None else tuple(json.loads(r["task_types"])),
    )
