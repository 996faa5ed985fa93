"""Rows <-> records: the column order both stores share (see named_queries.py)."""

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
    WorkflowRecord,
)
from tickwheel.storage.base import (
    InstanceBrief,
    ScheduleSummary,
    WorkerRecord,
    WorkflowSummary,
)
from tickwheel.storage.named_queries import SCHEDULE_COLUMNS


class Row(Protocol):
    """A row by position: a tuple from sqlite3, a Record from asyncpg."""

    def __getitem__(self, index: int, /) -> Any: ...


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
    """The option columns, in the order of `_options` and of both tables."""
    return [
        o.queue,
        o.priority,
        o.max_retries,
        o.backoff_base_seconds,
        o.backoff_max_seconds,
        o.timeout_seconds,
    ]


def options(r: Row, at: int) -> TaskOptions:
    return TaskOptions(r[at], r[at + 1], r[at + 2], r[at + 3], r[at + 4], r[at + 5])


def task(r: Row) -> TaskRecord:
    return TaskRecord(
        seq=r[0],
        task_id=r[1],
        partition=r[2],
        task_type=r[3],
        payload=json.loads(r[4]),
        status=Status(r[5]),
        version=r[6],
        schedule_type=ScheduleType(r[7]),
        schedule_id=r[8],
        due_ms=r[9],
        options=options(r, 10),
        attempts=r[16],
        created_ms=r[17],
        triggered_ms=r[18],
        started_ms=r[19],
        completed_ms=r[20],
        lease_expires_ms=r[21],
        worker_id=r[22],
        last_error=r[23],
        idempotency_key=r[24],
        workflow_id=r[25],
        node_name=r[26],
        ordering_key=r[27],
    )


def claimed(r: Row) -> ClaimedTask:
    return ClaimedTask(
        seq=r[0],
        task_id=r[1],
        task_type=r[2],
        payload=json.loads(r[3]),
        attempt=r[4],
        fence=r[5],
        due_ms=r[6],
        lease_expires_ms=r[7],
        timeout_seconds=r[13],
        options=options(r, 8),
    )


def execution(r: Row) -> ExecutionRecord:
    return ExecutionRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], Outcome(r[7]), r[8], r[9])


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
    ]


def schedule(r: Row) -> ScheduleRecord:
    return ScheduleRecord(
        schedule_id=r[0],
        task_type=r[1],
        payload=json.loads(r[2]),
        options=options(r, 3),
        cron_expression=r[9],
        timezone=r[10],
        jitter_seconds=r[11],
        misfire_policy=r[12],
        overlap_policy=r[13],
        status=r[14],
        version=r[15],
        current_seq=r[16],
        previous_seq=r[17],
        created_ms=r[18],
    )


def schedule_summary(r: Row) -> ScheduleSummary:
    """A schedule's columns, then (task_id, status, due, completed) of its current and
    of its previous instance, null when it has none."""
    width = len(SCHEDULE_COLUMNS.split(","))
    return ScheduleSummary(schedule(r), _instance(r, width), _instance(r, width + 4))


def _instance(r: Row, at: int) -> InstanceBrief | None:
    if r[at] is None:
        return None
    return InstanceBrief(r[at], Status(r[at + 1]), r[at + 2], r[at + 3])


def workflow_summaries(workflows: Sequence[Row], counts: Sequence[Row]) -> list[WorkflowSummary]:
    """Workflows with their tasks counted by status, from rows of
    (workflow_id, status, count)."""
    counted: dict[str, dict[Status, int]] = {w[0]: {} for w in workflows}
    for c in counts:
        counted[c[0]][Status(c[1])] = c[2]
    return [
        WorkflowSummary(WorkflowRecord(w[0], w[1], w[2], w[3]), counted[w[0]]) for w in workflows
    ]


def worker(r: Row) -> WorkerRecord:
    return WorkerRecord(
        worker_id=r[0],
        kind=r[1],
        queues=tuple(json.loads(r[2])),
        concurrency=r[3],
        started_ms=r[4],
        seen_ms=r[5],
        expires_ms=r[6],
        inflight=r[7],
    )
