"""Recurring workflows: a cron schedule whose every instance launches a whole workflow.

The schedule is an ordinary cron task of the built-in type `tickwheel.workflow` whose
payload is the workflow's template, so misfire and overlap policies, jitter, pause,
resume and retries all apply unchanged. Running an instance stores the workflow under
the instance's task id: a launch repeated after a lost lease finds it stored and
stores nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Protocol

from tickwheel.engine.tasks import Submitted, TaskService
from tickwheel.engine.workflows import WorkflowNode, WorkflowService
from tickwheel.errors import InvalidBatch, InvalidRequest, PermanentFailure
from tickwheel.models import ENGINE_QUEUE, WORKFLOW_TASK_TYPE, ScheduleType, TaskOptions
from tickwheel.wire.requests import ScheduleRequest, TaskRequest


class Instance(Protocol):
    """The instance being run, as the launch reads it (a worker's `TaskContext`)."""

    @property
    def task_id(self) -> str: ...


LAUNCH_OPTIONS = TaskOptions(queue=ENGINE_QUEUE, max_retries=10, backoff_max_seconds=60.0)


def template_of(name: str, nodes: Sequence[WorkflowNode]) -> dict[str, Any]:
    """The workflow as JSON, to be stored as the schedule's payload."""
    return {"name": name, "tasks": [_node_json(n) for n in nodes]}


def _node_json(node: WorkflowNode) -> dict[str, Any]:
    r = node.request
    return {
        "name": node.name,
        "task_type": r.task_type,
        "payload": r.payload,
        "schedule": {
            "type": str(r.schedule.type),
            "due_ms": r.schedule.due_ms,
            "delay_seconds": r.schedule.delay_seconds,
        },
        "options": asdict(r.options),
        "dependencies": list(r.dependencies),
        "ordering_key": r.ordering_key,
        "limit_key": r.limit_key,
    }


def nodes_of(template: Any) -> tuple[str, list[WorkflowNode]]:
    """The workflow a template describes; InvalidRequest("payload") if it is not one."""
    try:
        nodes = [
            WorkflowNode(t["name"], _request_of(t))
            for t in template["tasks"]
            if isinstance(t["name"], str)
        ]
        name = template["name"]
        if not isinstance(name, str) or len(nodes) != len(template["tasks"]):
            raise TypeError("names are text")
    except (KeyError, TypeError, ValueError):
        raise InvalidRequest("payload", "not a workflow template") from None
    return name, nodes


def _request_of(t: dict[str, Any]) -> TaskRequest:
    s = t["schedule"]
    kind = ScheduleType(s["type"])
    if kind is ScheduleType.CRON:
        raise ValueError("a workflow's tasks are not recurring themselves")
    _expect(s["due_ms"], int, "due_ms")
    _expect(s["delay_seconds"], int | float, "delay_seconds")
    _expect(t["ordering_key"], str, "ordering_key")
    _expect(t.get("limit_key"), str, "limit_key")  # absent from older templates
    for value in t["options"].values():
        _expect(value, int | float | str, "options")
    return TaskRequest(
        task_type=t["task_type"],
        payload=t["payload"],
        schedule=ScheduleRequest(kind, s["due_ms"], s["delay_seconds"]),
        options=TaskOptions(**t["options"]),
        dependencies=tuple(t["dependencies"]),
        ordering_key=t["ordering_key"],
        limit_key=t.get("limit_key"),
    )


def _expect(value: Any, kind: Any, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
        raise TypeError(f"{name} has the wrong type")


class RecurringWorkflows:
    """Schedules workflows, and launches each instance (the handler of the built-in
    `tickwheel.workflow` type)."""

    def __init__(self, *, workflows: WorkflowService, tasks: TaskService) -> None:
        self._workflows = workflows
        self._tasks = tasks

    async def schedule(
        self,
        name: str,
        nodes: Sequence[WorkflowNode],
        schedule: ScheduleRequest,
        *,
        idempotency_key: str | None = None,
    ) -> Submitted:
        """Check the whole workflow now, so that no instance fails on it later, then
        store its cron schedule; the answer carries the schedule's id."""
        if schedule.type is not ScheduleType.CRON or schedule.cron is None:
            raise InvalidRequest("schedule.cron_expression", "a recurring workflow needs one")
        self._workflows.check(name, nodes)
        template = template_of(name, nodes)
        request = TaskRequest(
            WORKFLOW_TASK_TYPE, template, schedule, LAUNCH_OPTIONS, idempotency_key
        )
        try:
            return await self._tasks.submit(request)
        except InvalidRequest as problem:
            if problem.field != "payload":
                raise
            raise InvalidRequest("tasks", f"as a recurring workflow: {problem.reason}") from None

    def check(self, payload: Any) -> None:
        try:
            self._workflows.check(*nodes_of(payload))
        except (TypeError, ValueError):  # a value of the wrong kind deep inside
            raise InvalidRequest("payload", "not a workflow template") from None

    async def __call__(self, ctx: Instance, payload: Any) -> None:
        """Store this instance's workflow. One that no longer validates (a limit or a
        task type's payload check changed since it was scheduled) fails for good."""
        try:
            name, nodes = nodes_of(payload)
            await self._workflows.submit(name, nodes, workflow_id=ctx.task_id)
        except (InvalidRequest, InvalidBatch) as problem:
            raise PermanentFailure(f"the workflow no longer validates: {problem}") from None
