"""What the dashboard reads: recurring schedules, workflows, scheduler nodes and workers.

Lists are newest first and paged by opaque tokens; the task list and its filters are
`GET /api/tasks` (routes.py).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Query, Request

from tickwheel.api import views
from tickwheel.api.auth import Scope, needs
from tickwheel.api.routes import ERRORS, MAX_PAGE, node_of
from tickwheel.api.schemas.ops import NodesOut, SchedulePage, WorkflowPage
from tickwheel.engine import operations
from tickwheel.errors import InvalidRequest
from tickwheel.storage.base import Page

router = APIRouter(tags=["operations"])
T = TypeVar("T")
# Each workflow on a page has its tasks counted (up to 10,000 each): smaller pages.
MAX_WORKFLOW_PAGE = 100
MAX_KEY_CHARS = 256
READ_ERRORS: dict[int | str, dict[str, Any]] = {422: ERRORS[422]}


def page_after(found: Sequence[T], limit: int, key: Callable[[T], Page]) -> str | None:
    """The token of the page after `found` when it was a full page, else None."""
    return encode_page(key(found[-1])) if len(found) == limit else None


class ScheduleStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    CANCELLED = "cancelled"


@router.get(
    "/api/schedules",
    response_model=SchedulePage,
    responses=READ_ERRORS,
    dependencies=needs(Scope.READ),
)
async def list_schedules(
    request: Request,
    status: Annotated[
        list[ScheduleStatus] | None,
        Query(
            max_length=len(ScheduleStatus),
            description="Repeat to combine; by default active and paused (a cancelled "
            "schedule is a deleted recurring task)",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    next_token: Annotated[str | None, Query(max_length=400)] = None,
) -> SchedulePage:
    """Recurring schedules, newest first: each with its next fire time, its current
    instance and how the instance before it went. Pause and resume with
    `POST /api/tasks/{schedule_id}/pause|resume`."""
    statuses = set(status or (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED))
    found = await node_of(request).store.list_schedules(
        statuses=statuses, before=decode_page(next_token), limit=limit
    )
    token = page_after(found, limit, lambda s: Page(s.schedule.created_ms, s.schedule.schedule_id))
    return SchedulePage(schedules=[views.schedule_summary_out(s) for s in found], next_token=token)


@router.get(
    "/api/workflows",
    response_model=WorkflowPage,
    responses=READ_ERRORS,
    dependencies=needs(Scope.READ),
)
async def list_workflows(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=MAX_WORKFLOW_PAGE)] = 20,
    next_token: Annotated[str | None, Query(max_length=400)] = None,
) -> WorkflowPage:
    """Workflows, newest first, with their tasks counted by status and the workflow's
    status derived from theirs (as `GET /api/workflows/{id}`)."""
    found = await node_of(request).store.list_workflows(before=decode_page(next_token), limit=limit)
    token = page_after(found, limit, lambda w: Page(w.record.created_ms, w.record.workflow_id))
    return WorkflowPage(workflows=[views.workflow_summary_out(w) for w in found], next_token=token)


@router.get("/api/nodes", response_model=NodesOut, dependencies=needs(Scope.READ))
async def list_nodes(request: Request) -> NodesOut:
    """The scheduler nodes alive with the partitions each holds (and the lease's epoch),
    the partitions no node holds, and the workers alive with their tasks running now.
    Alive is judged by the store's clock."""
    return views.nodes_out(await operations.cluster(node_of(request).store))


def encode_page(page: Page) -> str:
    text = f"p1:{page.created_ms}:{page.key}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_page(token: str | None) -> Page | None:
    """Tokens are opaque to clients; anything we did not issue is a 422."""
    if token is None:
        return None
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        prefix, created, key = text.split(":", 2)
        plausible = created.isdigit() and len(created) < 19 and 0 < len(key) <= MAX_KEY_CHARS
        if prefix == "p1" and plausible:
            return Page(int(created), key)
    except (ValueError, UnicodeDecodeError):
        pass
    raise InvalidRequest("next_token", "not a token this server issued")
