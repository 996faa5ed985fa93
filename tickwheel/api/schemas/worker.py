"""Bodies of the worker protocol (`/api/worker`)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    field_validator,
)

from tickwheel.api.schemas.common import (
    NAME_PATTERN,
    Strict,
    StrictBool,
    StrictFloat,
    StrictInt,
    refuse,
)
from tickwheel.models import (
    reserved_name,
)


class ClaimIn(Strict):
    worker_id: str = Field(min_length=1, max_length=128)
    queues: list[str] = Field(default_factory=lambda: ["default"], min_length=1, max_length=64)
    task_types: list[str] | None = Field(None, min_length=1, max_length=256)
    max_tasks: StrictInt = Field(10, ge=1, le=256)
    wait_seconds: StrictFloat = Field(0.0, ge=0, le=30)

    @field_validator("queues", "task_types")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        for name in value or ():
            if not 0 < len(name) <= 128 or not re.fullmatch(NAME_PATTERN, name):
                raise ValueError(f"{name!r} is not a queue or task type name")
            refuse(reserved_name(queue=name))
        return value


class ClaimedOut(BaseModel):
    task_id: str
    task_type: str
    payload: Any
    attempt: int
    fence: int
    idempotency_key: str
    due_time: datetime
    lease_expires_at: datetime
    timeout_seconds: float | None
    expires_at: datetime | None = Field(
        None, description="The task's expiry: a worker should not start it after this."
    )


class ClaimOut(BaseModel):
    tasks: list[ClaimedOut]


class HeartbeatIn(Strict):
    fence: StrictInt = Field(ge=0, le=2**62)


class CompleteIn(HeartbeatIn):
    pass


class FailIn(HeartbeatIn):
    error: str = Field(min_length=1, max_length=4000)
    retryable: StrictBool = True


class LeaseOut(BaseModel):
    task_id: str
    lease_expires_at: datetime


class AttemptEndOut(BaseModel):
    task_id: str
    status: str
    retry_at: datetime | None
