"""Bodies of the operators' routes: schedules, workflows and nodes as listed."""

from __future__ import annotations

from datetime import datetime

from pydantic import (
    BaseModel,
    Field,
)


class InstanceOut(BaseModel):
    task_id: str
    status: str
    due_time: datetime
    ended_at: datetime | None


class ScheduleSummaryOut(BaseModel):
    schedule_id: str
    task_type: str
    cron_expression: str
    timezone: str
    jitter_seconds: int
    status: str = Field(description="active, paused or cancelled")
    queue: str
    priority: int
    misfire_policy: str
    overlap_policy: str
    created_at: datetime
    next_fire_time: datetime | None = Field(
        description="The due time of its pending instance; null when paused or there is none"
    )
    current_instance_id: str | None
    last_run: InstanceOut | None = Field(
        description="The instance fired before the current one, with its outcome so far"
    )


class SchedulePage(BaseModel):
    schedules: list[ScheduleSummaryOut]
    next_token: str | None


class WorkflowSummaryOut(BaseModel):
    workflow_id: str
    name: str
    status: str = Field(description="running, succeeded, failed or cancelled")
    created_at: datetime
    task_count: int
    counts: dict[str, int] = Field(
        description="How many of its tasks are in each stored status (ready ones count "
        "as pending here; GET /api/workflows/{id} tells them apart)"
    )


class WorkflowPage(BaseModel):
    workflows: list[WorkflowSummaryOut]
    next_token: str | None


class PartitionLeaseOut(BaseModel):
    partition: int
    epoch: int
    lease_expires_at: datetime


class SchedulerNodeOut(BaseModel):
    node_id: str
    heartbeat_expires_at: datetime | None = Field(
        description="Null for a node that does not heartbeat (embedded mode: one node "
        "holds every partition)"
    )
    partitions: list[PartitionLeaseOut]


class WorkerOut(BaseModel):
    worker_id: str
    kind: str = Field(description="in_process, or http for a worker over the worker protocol")
    queues: list[str]
    task_types: list[str] | None = Field(
        None, description="The task types it runs; null: any (a worker over HTTP naming none)"
    )
    inflight: int = Field(description="Its tasks running now")
    concurrency: int | None = Field(description="Null for a worker over HTTP")
    started_at: datetime
    last_heartbeat_at: datetime
    expires_at: datetime


class NodesOut(BaseModel):
    partition_count: int
    unowned_partitions: list[int]
    schedulers: list[SchedulerNodeOut]
    workers: list[WorkerOut]


class FireTimeOut(BaseModel):
    fire_time: datetime = Field(description="In UTC, jitter included: when it will fire")
    local_time: datetime = Field(description="The same instant in the schedule's time zone")
    clock_change: str | None = Field(
        description="forward or back: the daylight-saving change since the fire time before"
    )
    repeated: bool = Field(description="Its local time happens twice that day (autumn)")
    note: str | None = Field(description="The change and the repetition, in words")


class FireTimesOut(BaseModel):
    cron_expression: str
    timezone: str
    jitter_seconds: int
    schedule_id: str | None = Field(None, description="Set when previewing a stored schedule")
    status: str | None = Field(None, description="The schedule's: a paused one fires nothing")
    fire_times: list[FireTimeOut]
