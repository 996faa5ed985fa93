"""The task routes of seed 002 section 9: submit, read, list, history, cancel."""

from __future__ import annotations

import base64
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response

from tickwheel.api import bodies, views
from tickwheel.api.auth import Scope, needs
from tickwheel.api.host import Host
from tickwheel.api.schemas.common import NAME_PATTERN, ErrorOut, IsoDatetime
from tickwheel.api.schemas.tasks import (
    BatchIn,
    BatchOut,
    CancelledOut,
    HealthOut,
    HistoryPage,
    PriorityIn,
    QueuesOut,
    ReadyOut,
    RedriveIn,
    RedriveOut,
    SkippedOut,
    SubmittedOut,
    TaskIn,
    TaskOut,
    TaskPage,
)
from tickwheel.clock import to_ms
from tickwheel.engine import readiness
from tickwheel.errors import InvalidRequest
from tickwheel.models import Status
from tickwheel.storage.base import TaskFilter
from tickwheel.wire.requests import task_request, task_requests, traced

router = APIRouter()
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "The body is not readable (not UTF-8 JSON)"},
    404: {"model": ErrorOut, "description": "No task has this id"},
    409: {"model": ErrorOut, "description": "The task's state does not allow this"},
    413: {"model": ErrorOut, "description": "The body or payload is too large"},
    422: {"model": ErrorOut, "description": "Invalid input; `field` names what is at fault"},
}
SUBMIT_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    429: {"model": ErrorOut, "description": "Overloaded: retry after Retry-After seconds"},
}
MAX_PAGE = 500


def node_of(request: Request) -> Host:
    node: Host = request.app.state.node
    return node


@router.post(
    "/api/tasks",
    status_code=201,
    response_model=SubmittedOut,
    responses={**SUBMIT_ERRORS, 200: {"model": SubmittedOut, "description": "A repeated key"}},
    dependencies=needs(Scope.SUBMIT),
)
async def submit_task(
    body: TaskIn,
    request: Request,
    response: Response,
    idempotency_key: Annotated[str | None, Header(min_length=1, max_length=256)] = None,
) -> SubmittedOut:
    """Submit a task. The idempotency key may also come as an `Idempotency-Key` header."""
    node = node_of(request)
    node.admission.check()
    if body.idempotency_key is None and idempotency_key is not None:
        body = body.model_copy(update={"idempotency_key": idempotency_key})
    with node.tracing.submission(request.headers.get("traceparent"), 1) as traceparent:
        (task,) = traced([task_request(body, node.type_options)], traceparent)
        submitted = await node.service.submit(task)
    views.mark_replayed(response, submitted.duplicate)
    return views.submitted_out(submitted)


@router.post(
    "/api/tasks/batch",
    status_code=201,
    response_model=BatchOut,
    responses=SUBMIT_ERRORS,
    dependencies=needs(Scope.SUBMIT),
    openapi_extra=bodies.documented(BatchIn),
)
async def submit_batch(request: Request) -> Response:
    """Up to 10,000 one-off tasks, committed together: all are stored or none is, and a
    422 lists every rejected entry by its index."""
    node = node_of(request)
    node.admission.check()
    body = await bodies.read(request, BatchIn)
    header = request.headers.get("traceparent")
    with node.tracing.submission(header, len(body.tasks)) as traceparent:
        tasks = traced(task_requests(body.tasks, node.type_options), traceparent)
        submitted = await node.service.submit_many(tasks)
    return views.batch_answer(submitted)


@router.post(
    "/api/tasks/redrive",
    response_model=RedriveOut,
    responses=ERRORS,
    dependencies=needs(Scope.ADMIN),
)
async def redrive(body: RedriveIn, request: Request) -> RedriveOut:
    """Dead letters back to work: failed tasks return to pending, due now, with their
    attempts reset. (List them with `GET /api/tasks?status=failed`.)"""
    done, skipped = await node_of(request).service.redrive(body.task_ids)
    return RedriveOut(
        redriven=done, skipped=[SkippedOut(task_id=i, reason=r) for i, r in skipped.items()]
    )


@router.patch(
    "/api/tasks/{task_id}",
    response_model=TaskOut,
    responses=ERRORS,
    dependencies=needs(Scope.ADMIN),
)
async def change_priority(task_id: str, body: PriorityIn, request: Request) -> TaskOut:
    """Change a pending task's priority."""
    return views.task_out(await node_of(request).service.set_priority(task_id, body.priority))


@router.post(
    "/api/tasks/{task_id}/pause",
    response_model=TaskOut,
    responses=ERRORS,
    dependencies=needs(Scope.ADMIN),
)
async def pause(task_id: str, request: Request) -> TaskOut:
    """Pause a recurring task: its pending instance is cancelled until it resumes."""
    return views.task_out(await node_of(request).service.pause(task_id))


@router.post(
    "/api/tasks/{task_id}/resume",
    response_model=TaskOut,
    responses=ERRORS,
    dependencies=needs(Scope.ADMIN),
)
async def resume(task_id: str, request: Request) -> TaskOut:
    """Resume a paused recurring task from its next fire time."""
    return views.task_out(await node_of(request).service.resume(task_id))


@router.get(
    "/api/tasks/{task_id}", response_model=TaskOut, responses=ERRORS, dependencies=needs(Scope.READ)
)
async def get_task(task_id: str, request: Request) -> TaskOut:
    """A task (or a cron schedule, by its id), with `waiting_on`: why it has not started."""
    node = node_of(request)
    view = await node.service.get(task_id)
    return views.task_out(view, await node.waits.of(view))


@router.delete(
    "/api/tasks/{task_id}",
    response_model=CancelledOut,
    responses=ERRORS,
    dependencies=needs(Scope.ADMIN),
)
async def cancel_task(task_id: str, request: Request) -> CancelledOut:
    count = await node_of(request).service.cancel(task_id)
    return CancelledOut(ok=True, cancelled_instances=count)


@router.get(
    "/api/tasks/{task_id}/history",
    response_model=HistoryPage,
    responses=ERRORS,
    dependencies=needs(Scope.READ),
)
async def task_history(
    task_id: str,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
    next_token: Annotated[str | None, Query(max_length=64)] = None,
) -> HistoryPage:
    before = decode_token(next_token)
    rows = await node_of(request).service.history(task_id, before_id=before, limit=limit)
    token = encode_token(rows[-1].id) if len(rows) == limit else None
    return HistoryPage(executions=[views.execution_out(r) for r in rows], next_token=token)


@router.get("/api/tasks", response_model=TaskPage, responses=ERRORS, dependencies=needs(Scope.READ))
async def list_tasks(
    request: Request,
    status: Annotated[list[Status] | None, Query(max_length=len(Status))] = None,
    task_type: Annotated[str | None, Query(max_length=128)] = None,
    queue: Annotated[str | None, Query(min_length=1, max_length=64, pattern=NAME_PATTERN)] = None,
    created_after: Annotated[
        IsoDatetime | None, Query(description="Created at or after (ISO 8601, with a zone)")
    ] = None,
    created_before: Annotated[
        IsoDatetime | None, Query(description="Created before (ISO 8601, with a zone)")
    ] = None,
    q: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=256,
            pattern=r"^[^\x00]+$",  # PostgreSQL's text holds no NUL, so no key has one
            description="An exact task id or idempotency key",
        ),
    ] = None,
    held_by: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=256,
            pattern=r"^[^\x00]+$",
            description="The ready tasks a limit holds back, as scope:name (`GET /api/limits`)",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    next_token: Annotated[str | None, Query(max_length=64)] = None,
) -> TaskPage:
    """Tasks, newest first; every filter given must hold. Paging goes down the order of
    submission, so tasks submitted meanwhile never shift a page."""
    if created_after and created_before and created_before < created_after:
        raise InvalidRequest("created_before", "must not be before created_after")
    where = TaskFilter(
        statuses=tuple(status or ()),
        task_type=task_type,
        queue=queue,
        created_after_ms=to_ms(created_after) if created_after else None,
        created_before_ms=to_ms(created_before) if created_before else None,
        q=q,
        held_by=held_by,
    )
    found, cursor = await node_of(request).service.list_tasks(
        where, before_seq=decode_token(next_token), limit=limit
    )
    token = encode_token(cursor) if cursor is not None else None
    return TaskPage(tasks=[views.task_out(v) for v in found], next_token=token)


@router.get("/api/queues", response_model=QueuesOut, dependencies=needs(Scope.READ))
async def queues(request: Request) -> QueuesOut:
    """Ready-queue depth per queue, the drain rate, and whether submissions are admitted."""
    return views.queues_out(node_of(request))


@router.get("/healthz", response_model=HealthOut)
async def health(request: Request) -> HealthOut:
    node = node_of(request)
    return HealthOut(
        ok=True,
        node_id=node.node_id,
        partitions_owned=len(node.leases.held),
        wheel_size=node.trigger.size(),
        ready=node.queue.depth(),
        inflight=node.worker.inflight,
    )


@router.get(
    "/readyz",
    response_model=ReadyOut,
    responses={503: {"model": ReadyOut, "description": "a dependency does not answer"}},
)
async def readiness_check(request: Request, response: Response) -> ReadyOut:
    """Whether this node's store and ready queue answer now: 503 while one does not."""
    node = node_of(request)
    problems = await readiness.check(node.store, node.queue)
    ready = not any(problems.values())
    if not ready:
        response.status_code = 503
        response.headers["Retry-After"] = "1"
    return ReadyOut(ready=ready, node_id=node.node_id, dependencies=problems)


def encode_token(position: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{position}".encode()).decode().rstrip("=")


def decode_token(token: str | None) -> int | None:
    """Tokens are opaque to clients; anything we did not issue is a 422."""
    if token is None:
        return None
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        prefix, _, number = text.partition(":")
        if prefix == "v1" and number.isdigit() and len(number) < 19:
            return int(number)
    except (ValueError, UnicodeDecodeError):
        pass
    raise InvalidRequest("next_token", "not a token this server issued")
