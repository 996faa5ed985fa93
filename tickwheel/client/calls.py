"""Every API call as data, and every answer as a result or a typed error.

Both clients (sync and async) send the same `Call`s; only how they wait differs. A call
says whether it is safe to send again when a try's outcome is unknown (a timeout after
the request went out): submissions carry an idempotency key, so they are.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import msgspec

from tickwheel.errors import (
    Conflict,
    Forbidden,
    IdempotencyConflict,
    InvalidBatch,
    InvalidRequest,
    Overloaded,
    ServerError,
    StaleFence,
    TaskNotFound,
    TickwheelError,
    Unauthorized,
)
from tickwheel.ids import new_id
from tickwheel.models import Status
from tickwheel.wire.answers import (
    AttemptEndOut,
    BatchOut,
    CancelledOut,
    ClaimedOut,
    ClaimOut,
    FireTimesOut,
    HealthOut,
    HistoryPage,
    LeaseOut,
    LimitOut,
    LimitsOut,
    NodesOut,
    QueuesOut,
    RedriveOut,
    SchedulePage,
    SubmittedOut,
    TaskOut,
    TaskPage,
    WorkflowCancelledOut,
    WorkflowOut,
    WorkflowPage,
)
from tickwheel.wire.bodies import task_body as task_body  # the body of `submit`

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[bytes], T]  # a 2xx answer's body; raises msgspec.DecodeError
    json: Any = None
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    repeatable: bool = True  # safe to send again when a try's outcome is unknown
    wait_seconds: float = 0.0  # the server may hold the answer this long (a long poll)


_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def _model(kind: type[T]) -> Callable[[bytes], T]:
    """Reads an answer's body as `kind`, in one pass from the bytes."""
    if kind not in _DECODERS:
        _DECODERS[kind] = msgspec.json.Decoder(kind)
    return _DECODERS[kind].decode


# -- submitting --------------------------------------------------------------


def _keyed(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body with an idempotency key of its own, so that a retry cannot make a
    second schedule or workflow."""
    keyed = dict(body)
    keyed.setdefault("idempotency_key", f"tw-client-{uuid.uuid4()}")
    return keyed


def _named(body: Mapping[str, Any]) -> dict[str, Any]:
    """The task with an id the client chose, so that a retry cannot make a second task:
    the id is the dedupe, at no cost per task (a cron task keeps a key instead)."""
    if body.get("idempotency_key") is not None or "task_id" in body:
        return dict(body)
    if (body.get("schedule") or {}).get("type") == "cron":
        return _keyed(body)
    return {**body, "task_id": new_id()}


def submit(body: Mapping[str, Any]) -> Call[SubmittedOut]:
    return Call("POST", "/api/tasks", _model(SubmittedOut), json=_named(body))


def submit_many(bodies: Iterable[Mapping[str, Any]]) -> Call[list[SubmittedOut]]:
    def parse(answer: bytes) -> list[SubmittedOut]:
        return _model(BatchOut)(answer).tasks

    tasks = [_named(body) for body in bodies]
    return Call("POST", "/api/tasks/batch", parse, json={"tasks": tasks})


def submit_workflow(body: Mapping[str, Any]) -> Call[WorkflowOut]:
    return Call("POST", "/api/workflows", _model(WorkflowOut), json=_keyed(body))


def schedule_workflow(body: Mapping[str, Any]) -> Call[SubmittedOut]:
    return Call("POST", "/api/workflows/recurring", _model(SubmittedOut), json=_keyed(body))


# -- reading -----------------------------------------------------------------


def get(task_id: str) -> Call[TaskOut]:
    return Call("GET", f"/api/tasks/{_segment(task_id)}", _model(TaskOut))


StatusFilter = Status | str | Iterable[Status | str] | None


def statuses(status: StatusFilter) -> tuple[str, ...]:
    """The statuses asked for, read once (an iterator is consumed here, not per page)."""
    return (status,) if isinstance(status, str) else tuple(str(s) for s in status or ())


def list_tasks(
    status: tuple[str, ...],
    task_type: str | None,
    limit: int,
    next_token: str | None,
    *,
    queue: str | None = None,
    q: str | None = None,
) -> Call[TaskPage]:
    params = _page(limit, next_token, status=list(status), task_type=task_type, queue=queue, q=q)
    return Call("GET", "/api/tasks", _model(TaskPage), params=params)


def _page(limit: int, next_token: str | None, **filters: Any) -> dict[str, Any]:
    """The query of a page: its size, where it starts, and the filters given."""
    given = {name: value for name, value in filters.items() if value is not None}
    return {"limit": limit, **given, **({"next_token": next_token} if next_token else {})}


def history(task_id: str, limit: int, next_token: str | None) -> Call[HistoryPage]:
    path = f"/api/tasks/{_segment(task_id)}/history"
    return Call("GET", path, _model(HistoryPage), params=_page(limit, next_token))


def list_schedules(
    status: tuple[str, ...], limit: int, next_token: str | None
) -> Call[SchedulePage]:
    params = _page(limit, next_token, status=list(status))
    return Call("GET", "/api/schedules", _model(SchedulePage), params=params)


def fire_times(schedule_id: str, count: int) -> Call[FireTimesOut]:
    path = f"/api/schedules/{quote(schedule_id, safe='')}/next"
    return Call("GET", path, _model(FireTimesOut), params={"count": count})


def cron_fire_times(expression: str, timezone: str, count: int) -> Call[FireTimesOut]:
    params = {"cron_expression": expression, "timezone": timezone, "count": count}
    return Call("GET", "/api/cron/next", _model(FireTimesOut), params=params)


def limits() -> Call[list[LimitOut]]:
    def parse(answer: bytes) -> list[LimitOut]:
        return _model(LimitsOut)(answer).limits

    return Call("GET", "/api/limits", parse)


def get_limit(scope: str, name: str) -> Call[LimitOut]:
    return Call("GET", _limit_path(scope, name), _model(LimitOut))


def set_limit(scope: str, name: str, rate: str | None, concurrency: int | None) -> Call[LimitOut]:
    body = {"rate": rate, "concurrency": concurrency}
    return Call("PUT", _limit_path(scope, name), _model(LimitOut), json=body)


def delete_limit(scope: str, name: str) -> Call[None]:
    return Call("DELETE", _limit_path(scope, name), lambda _: None)


def _limit_path(scope: str, name: str) -> str:
    if not name:
        raise InvalidRequest("name", "a limit's name must not be empty")
    return f"/api/limits/{quote(scope, safe='')}/{quote(name, safe='')}"


def list_workflows(limit: int, next_token: str | None) -> Call[WorkflowPage]:
    return Call("GET", "/api/workflows", _model(WorkflowPage), params=_page(limit, next_token))


def nodes() -> Call[NodesOut]:
    return Call("GET", "/api/nodes", _model(NodesOut))


def stats() -> Call[dict[str, Any]]:
    """What the dashboard reads, as plain data (its shape is the dashboard's to change)."""
    return Call("GET", "/api/stats", _model(dict[str, Any]))


def metrics() -> Call[str]:
    return Call("GET", "/metrics", lambda body: body.decode("utf-8", "replace"))


def get_workflow(workflow_id: str) -> Call[WorkflowOut]:
    return Call("GET", f"/api/workflows/{_segment(workflow_id)}", _model(WorkflowOut))


def queues() -> Call[QueuesOut]:
    return Call("GET", "/api/queues", _model(QueuesOut))


def health() -> Call[HealthOut]:
    return Call("GET", "/healthz", _model(HealthOut))


# -- operations --------------------------------------------------------------
# Cancelling twice, pausing a paused or resuming an active schedule all answer
# without an error, so those are safe to repeat.


def cancel(task_id: str) -> Call[CancelledOut]:
    return Call("DELETE", f"/api/tasks/{_segment(task_id)}", _model(CancelledOut))


def cancel_workflow(workflow_id: str) -> Call[WorkflowCancelledOut]:
    path = f"/api/workflows/{_segment(workflow_id)}"
    return Call("DELETE", path, _model(WorkflowCancelledOut))


def redrive(task_ids: Iterable[str]) -> Call[RedriveOut]:
    body = {"task_ids": list(task_ids)}
    # Not repeated: a task that failed again meanwhile would be re-driven twice.
    return Call("POST", "/api/tasks/redrive", _model(RedriveOut), json=body, repeatable=False)


def set_priority(task_id: str, priority: int) -> Call[TaskOut]:
    path = f"/api/tasks/{_segment(task_id)}"
    return Call("PATCH", path, _model(TaskOut), json={"priority": priority})


def pause(task_id: str) -> Call[TaskOut]:
    return Call("POST", f"/api/tasks/{_segment(task_id)}/pause", _model(TaskOut))


def resume(task_id: str) -> Call[TaskOut]:
    return Call("POST", f"/api/tasks/{_segment(task_id)}/resume", _model(TaskOut))


# -- the worker protocol -----------------------------------------------------


def claim(
    worker_id: str,
    queues: Iterable[str],
    task_types: Iterable[str] | None,
    max_tasks: int,
    wait_seconds: float,
) -> Call[list[ClaimedOut]]:
    def parse(answer: bytes) -> list[ClaimedOut]:
        return _model(ClaimOut)(answer).tasks

    body: dict[str, Any] = {
        "worker_id": worker_id,
        "queues": list(queues),
        "max_tasks": max_tasks,
        "wait_seconds": wait_seconds,
    }
    if task_types is not None:
        body["task_types"] = list(task_types)
    # Tasks claimed in a lost answer come back only when their lease runs out.
    return Call(
        "POST", "/api/worker/claim", parse, json=body, repeatable=False, wait_seconds=wait_seconds
    )


def heartbeat(task_id: str, fence: int) -> Call[LeaseOut]:
    path = f"/api/worker/tasks/{_segment(task_id)}/heartbeat"
    return Call("POST", path, _model(LeaseOut), json={"fence": fence})


def complete(task_id: str, fence: int) -> Call[AttemptEndOut]:
    path = f"/api/worker/tasks/{_segment(task_id)}/complete"
    return Call("POST", path, _model(AttemptEndOut), json={"fence": fence})


def fail(task_id: str, fence: int, error: str, retryable: bool) -> Call[AttemptEndOut]:
    path = f"/api/worker/tasks/{_segment(task_id)}/fail"
    body = {"fence": fence, "error": error, "retryable": retryable}
    return Call("POST", path, _model(AttemptEndOut), json=body)


def _segment(task_id: str) -> str:
    """A task id as one path segment, escaped, so that no id can reach another task or
    route (servers decode an escaped slash before routing, so a slash is refused)."""
    if not task_id or "/" in task_id or task_id in (".", ".."):
        raise InvalidRequest("task_id", f"{task_id!r} is not a task id")
    return quote(task_id, safe="")


# -- answers -----------------------------------------------------------------


def answer(call: Call[T], status: int, body: bytes, retry_after: str | None) -> T:
    """The result of a 2xx answer; otherwise raise the error it stands for."""
    if status >= 400:
        try:
            content = msgspec.json.decode(body)
        except msgspec.DecodeError:  # not JSON: a proxy's error page, say
            content = None
        raise error_of(status, content if isinstance(content, dict) else {}, retry_after)
    try:
        return call.parse(body)
    except msgspec.DecodeError as error:  # not JSON, or not the answer's shape
        raise ServerError(
            status, f"the answer to {call.method} {call.path} is malformed"
        ) from error


def error_of(status: int, body: Mapping[str, Any], retry_after: str | None) -> TickwheelError:
    message = str(body.get("message") or f"the server answered {status}")
    kind = body.get("error")
    if status in (400, 413, 422):
        return _invalid(body, message)
    if status == 401:
        return Unauthorized(message)
    if status == 403:
        return Forbidden(message)
    if status == 404 and kind == "not_found":
        return TaskNotFound(message)
    if status == 409 and kind == "idempotency_conflict":
        return IdempotencyConflict(message, str(body.get("task_id") or ""))
    if status == 409 and kind == "stale_fence":
        return StaleFence(message)
    if status == 409:
        return Conflict(message)
    if status == 429:
        return Overloaded(math.ceil(retry_after_seconds(retry_after) or 1), message)
    return ServerError(status, message, code=str(kind) if isinstance(kind, str) else None)


def _invalid(body: Mapping[str, Any], message: str) -> InvalidRequest:
    """An `InvalidBatch` when every problem is one of a batch's entries."""
    field_name = str(body.get("field") or "body")
    problems = body.get("problems")
    entries = []
    for problem in problems if isinstance(problems, list) else ():
        parts = str(problem.get("field", "")).split(".", 2) if isinstance(problem, dict) else []
        if len(parts) >= 2 and parts[0] == "tasks" and parts[1].isdigit():
            reason = str(problem.get("message"))
            entries.append(
                (int(parts[1]), InvalidRequest(parts[2] if parts[2:] else "body", reason))
            )
    if entries and len(entries) == len(problems or ()):
        return InvalidBatch(entries)
    return InvalidRequest(field_name, message.removeprefix(f"{field_name}: "))


def retry_after_seconds(header: str | None) -> float | None:
    """The seconds of a `Retry-After` header (we send only the seconds form)."""
    try:
        return max(0.0, float(header)) if header is not None else None
    except ValueError:
        return None
