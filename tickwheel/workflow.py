"""`Workflow`: a graph of tasks built in code, then submitted whole.

    flow = Workflow("nightly-etl")
    extract = flow.task("extract", "fetch_orders", {"day": "2026-12-01"})
    flow.task("load", "load_orders", after=[extract], max_retries=5)

The same object goes to an embedded `Node` (`submit_workflow`, `schedule_workflow`) or
to a remote server through `Client` and `AsyncClient`, which send `body()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from typing_extensions import Unpack

from tickwheel.models import SUBMIT_OPTIONS, SubmitOptions
from tickwheel.wire.bodies import SCHEDULE_OPTIONS, task_body

# Options of a whole task or schedule, not of one task within a workflow.
NOT_PER_TASK = frozenset(
    {
        "cron",
        "timezone",
        "jitter_seconds",
        "misfire_policy",
        "overlap_policy",
        "idempotency_key",
        "dependencies",
    }
)


@dataclass(frozen=True, slots=True)
class WorkflowTask:
    name: str
    task_type: str
    payload: Any
    after: tuple[str, ...]  # names of tasks of this workflow that must succeed first
    options: SubmitOptions


class Workflow:
    def __init__(self, name: str = "workflow") -> None:
        self.name = name
        self.tasks: list[WorkflowTask] = []
        self._names: set[str] = set()

    def task(
        self,
        name: str,
        task_type: str,
        payload: Any = None,
        *,
        after: Iterable[str] = (),
        **options: Unpack[SubmitOptions],
    ) -> str:
        """Add a task that runs once every task named in `after` has succeeded; the
        options are those of `submit` for one task. Returns `name`, for other tasks'
        `after`."""
        if name in self._names:
            raise ValueError(f"{name!r} names two tasks of workflow {self.name!r}")
        wrong = options.keys() & NOT_PER_TASK
        if wrong:
            raise TypeError(f"not an option of a workflow's task: {', '.join(sorted(wrong))}")
        unknown = options.keys() - SUBMIT_OPTIONS
        if unknown:
            raise TypeError(f"unknown submit options: {', '.join(sorted(unknown))}")
        self._names.add(name)
        self.tasks.append(WorkflowTask(name, task_type, payload, tuple(after), options))
        return name

    def body(
        self,
        *,
        idempotency_key: str | None = None,
        cron: str | None = None,
        **schedule: Any,
    ) -> dict[str, Any]:
        """The JSON body of `POST /api/workflows`, or with `cron` (and `timezone`,
        `jitter_seconds`, `misfire_policy`, `overlap_policy`) of
        `POST /api/workflows/recurring`."""
        plain = {"name": self.name, "tasks": [_task_json(t) for t in self.tasks]}
        return workflow_body(plain, idempotency_key=idempotency_key, cron=cron, **schedule)


def workflow_body(
    flow: Workflow | Mapping[str, Any],
    *,
    idempotency_key: str | None = None,
    cron: str | None = None,
    **schedule: Any,
) -> dict[str, Any]:
    """The body for a `Workflow`, or for a workflow given as a body already (read from a
    file, say) with the key and the cron schedule put in."""
    if isinstance(flow, Workflow):
        return flow.body(idempotency_key=idempotency_key, cron=cron, **schedule)
    body = dict(flow)  # a copy: the caller's mapping stays as it was
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    if cron is not None:
        body["schedule"] = {"type": "cron", "cron_expression": cron, **_known(schedule)}
    elif schedule:
        raise TypeError("schedule options need cron")
    return body


def _task_json(t: WorkflowTask) -> dict[str, Any]:
    body = task_body(t.task_type, t.payload, **t.options)
    return {"name": t.name, **body, "dependencies": list(t.after)}


def _known(schedule: Mapping[str, Any]) -> dict[str, Any]:
    unknown = schedule.keys() - set(SCHEDULE_OPTIONS)
    if unknown:
        raise TypeError(f"unknown schedule options: {', '.join(sorted(unknown))}")
    return dict(schedule)
