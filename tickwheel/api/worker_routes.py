"""The worker protocol over HTTP: claim, heartbeat, complete, fail, each fenced."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from tickwheel.api.auth import Scope, needs
from tickwheel.api.host import Host
from tickwheel.api.schemas.common import ErrorOut
from tickwheel.api.schemas.worker import (
    AttemptEndOut,
    ClaimedOut,
    ClaimIn,
    ClaimOut,
    CompleteIn,
    FailIn,
    HeartbeatIn,
    LeaseOut,
)
from tickwheel.clock import to_datetime
from tickwheel.models import ClaimedTask

router = APIRouter(prefix="/api/worker", tags=["worker protocol"], dependencies=needs(Scope.WORKER))
FENCED: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "The body is not readable (not UTF-8 JSON)"},
    404: {"model": ErrorOut, "description": "No task has this id"},
    409: {"model": ErrorOut, "description": "Stale fence: nothing was changed"},
    422: {"model": ErrorOut, "description": "Invalid input; `field` names what is at fault"},
}


def _node(request: Request) -> Host:
    node: Host = request.app.state.node
    return node


@router.post("/claim", response_model=ClaimOut, responses=FENCED)
async def claim(body: ClaimIn, request: Request) -> ClaimOut:
    """Claim up to `max_tasks` due tasks of `queues` (and of `task_types`, if given),
    waiting up to `wait_seconds` for the first. Each comes with the fence that its
    heartbeat, completion or failure must present."""
    tasks = await _node(request).remote.claim(
        body.worker_id,
        queues=body.queues,
        task_types=body.task_types,
        max_tasks=body.max_tasks,
        wait_seconds=body.wait_seconds,
    )
    return ClaimOut(tasks=[_claimed_out(t) for t in tasks])


@router.post("/tasks/{task_id}/heartbeat", response_model=LeaseOut, responses=FENCED)
async def heartbeat(task_id: str, body: HeartbeatIn, request: Request) -> LeaseOut:
    """Extend the lease of a running task."""
    until = to_datetime(await _node(request).remote.heartbeat(task_id, body.fence))
    assert until is not None
    return LeaseOut(task_id=task_id, lease_expires_at=until)


@router.post("/tasks/{task_id}/complete", response_model=AttemptEndOut, responses=FENCED)
async def complete(task_id: str, body: CompleteIn, request: Request) -> AttemptEndOut:
    """The attempt succeeded."""
    await _node(request).remote.complete(task_id, body.fence)
    return AttemptEndOut(task_id=task_id, status="succeeded", retry_at=None)


@router.post("/tasks/{task_id}/fail", response_model=AttemptEndOut, responses=FENCED)
async def fail(task_id: str, body: FailIn, request: Request) -> AttemptEndOut:
    """The attempt failed: retried after a backoff while retries remain and the error is
    retryable, else the task fails for good."""
    end = await _node(request).remote.fail(
        task_id, body.fence, error=body.error, retryable=body.retryable
    )
    return AttemptEndOut(
        task_id=task_id, status=str(end.status), retry_at=to_datetime(end.retry_at_ms)
    )


def _claimed_out(t: ClaimedTask) -> ClaimedOut:
    due, lease = to_datetime(t.due_ms), to_datetime(t.lease_expires_ms)
    assert due is not None and lease is not None
    return ClaimedOut(
        task_id=t.task_id,
        task_type=t.task_type,
        payload=t.payload,
        attempt=t.attempt,
        fence=t.fence,
        idempotency_key=t.task_id,
        due_time=due,
        lease_expires_at=lease,
        timeout_seconds=t.timeout_seconds,
        expires_at=to_datetime(t.expires_ms),
    )
