"""Workflows: submit a graph of tasks whole, read every task's state, cancel the rest."""

from __future__ import annotations

from fastapi import APIRouter, Request

from tickwheel.api import views
from tickwheel.api.auth import Scope, needs
from tickwheel.api.routes import ERRORS, SUBMIT_ERRORS, node_of
from tickwheel.api.schemas import WorkflowCancelledOut, WorkflowIn, WorkflowOut
from tickwheel.engine.workflows import WorkflowNode

router = APIRouter(prefix="/api/workflows", tags=["workflows"])


@router.post(
    "",
    status_code=201,
    response_model=WorkflowOut,
    responses=SUBMIT_ERRORS,
    dependencies=needs(Scope.SUBMIT),
)
async def submit_workflow(body: WorkflowIn, request: Request) -> WorkflowOut:
    """Up to 10,000 tasks that refer to each other by name, checked (unknown names,
    self-dependencies, cycles) and stored in one transaction: all or nothing."""
    node = node_of(request)
    node.admission.check()
    nodes = [
        WorkflowNode(t.name, views.task_request(t, node, dependencies=t.dependencies))
        for t in body.tasks
    ]
    return views.workflow_out(await node.workflows.submit(body.name, nodes))


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
