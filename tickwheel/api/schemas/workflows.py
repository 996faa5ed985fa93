"""Bodies of the workflow routes (`/api/workflows`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import (
    BaseModel,
    Field,
    field_validator,
    model_validator,
)

from tickwheel.api.schemas.common import MAX_BATCH_TASKS, NAME_PATTERN, Strict
from tickwheel.api.schemas.tasks import ScheduleIn, TaskIn
from tickwheel.models import (
    MAX_DEPENDENCIES,
)


class WorkflowTaskIn(TaskIn):
    """A task of a workflow: a `POST /api/tasks` body with a name, whose `dependencies`
    are the names of other tasks of the same workflow."""

    name: str = Field(min_length=1, max_length=128, pattern=NAME_PATTERN)
    dependencies: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list,
        max_length=MAX_DEPENDENCIES,
        description="Names of tasks of this workflow that must succeed first.",
    )

    @model_validator(mode="after")
    def _no_key(self) -> WorkflowTaskIn:
        if self.idempotency_key is not None:
            raise ValueError("idempotency_key is not for the tasks of a workflow")
        return self


class WorkflowIn(Strict):
    name: str = Field("workflow", min_length=1, max_length=128)
    tasks: list[WorkflowTaskIn] = Field(min_length=1, max_length=MAX_BATCH_TASKS)
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="Names one workflow: submitting again with the same key stores "
        "nothing and returns the workflow stored first.",
    )


class RecurringWorkflowIn(WorkflowIn):
    schedule: ScheduleIn = Field(
        description="A cron schedule (type cron): each fire time launches the whole workflow."
    )
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="Repeating a request with the same key within the window returns the "
        "schedule first created for it.",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: ScheduleIn) -> ScheduleIn:
        if value.type != "cron":
            raise ValueError("a recurring workflow's schedule has type cron")
        return value


class WorkflowNodeOut(BaseModel):
    name: str
    task_id: str
    task_type: str
    status: str
    dependencies: list[str]
    ordering_key: str | None = None
    limit_key: str | None = None
    attempts: int
    started_at: datetime | None
    completed_at: datetime | None
    last_error: str | None


class WorkflowOut(BaseModel):
    workflow_id: str
    name: str
    status: str = Field(description="running, succeeded, failed or cancelled")
    created_at: datetime
    counts: dict[str, int] = Field(description="How many of its tasks are in each status")
    tasks: list[WorkflowNodeOut]
    warnings: list[str] = Field(
        default_factory=list,
        description="What to know of a workflow accepted all the same: a task type that no"
        " live worker has registered (refused with 422 under strict_task_types).",
    )


class WorkflowCancelledOut(BaseModel):
    ok: bool
    cancelled: int
