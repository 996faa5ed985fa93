"""Workflows: submit a graph of tasks whole, read every task's state, cancel the rest."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from tickwheel.api import views
from tickwheel.api.auth import Scope, needs
from tickwheel.api.routes import ERRORS, SUBMIT_ERRORS, node_of
from tickwheel.api.schemas.tasks import SubmittedOut
from tickwheel.api.schemas.workflows import (
    RecurringWorkflowIn,
    WorkflowCancelledOut,
    WorkflowIn,
    WorkflowOut,
)
from tickwheel.wire.requests import schedule_request

router = APIRouter(prefix="/api/workflows", tags=["workflows"])


@router.post(
    "",
    status_code=201,
    response_model=WorkflowOut,
    responses={**SUBMIT_ERRORS, 200: {"model": WorkflowOut, "description": "A repeated key"}},
    dependencies=needs(Scope.SUBMIT),
)
async def submit_workflow(body: WorkflowIn, request: Request, response: Response) -> WorkflowOut:
    """Up to 10,000 tasks that refer to each other by name, checked (unknown names,
    self-dependencies, cycles) and stored in one transaction: all or nothing."""
    node = node_of(request)
    node.admission.check()
    header = request.headers.get("traceparent")
    with node.tracing.submission(header, len(body.tasks)) as traceparent:
        nodes = views.workflow_nodes(body, node, traceparent)
        view = await node.workflows.submit(body.name, nodes, idempotency_key=body.idempotency_key)
    views.mark_replayed(response, view.duplicate)
    return views.workflow_out(view)


@router.post(
    "/recurring",
    status_code=201,
    response_model=SubmittedOut,
    responses={**SUBMIT_ERRORS, 200: {"model": SubmittedOut, "description": "A repeated key"}},
    dependencies=needs(Scope.SUBMIT),
)
async def schedule_workflow(
    body: RecurringWorkflowIn, request: Request, response: Response
) -> SubmittedOut:
    """A cron schedule whose every fire time launches the whole workflow, checked now.
    The schedule is managed like any recurring task (`/api/tasks/{schedule_id}`: pause,
    resume, cancel, history); each run's workflow has the id of the instance that
    launched it."""
    node = node_of(request)
    node.admission.check()
    submitted = await node.recurring.schedule(
        body.name,
        views.workflow_nodes(body, node),
        schedule_request(body.schedule),
        idempotency_key=body.idempotency_key,
    )
    views.mark_replayed(response, submitted.duplicate)
    return views.submitted_out(submitted)


@router.get(
    "/{workflow_id}", response_model=WorkflowOut, responses=ERRORS, dependencies=needs(Scope.READ)
)
async def get_workflow(workflow_id: str, request: Request) -> WorkflowOut:
    return views.workflow_out(await node_of(request).workflows.get(workflow_id))


@router.delete(
    "/{workflow_id}",
    response_model=WorkflowCancelledOut,
    responses=ERRORS,
    dependencies=needs(Scope.ADMIN),
)
async def cancel_workflow(workflow_id: str, request: Request) -> WorkflowCancelledOut:
    """Cancel every task of the workflow not yet finished."""
    cancelled = await node_of(request).workflows.cancel(workflow_id)
    return WorkflowCancelledOut(ok=True, cancelled=cancelled)
