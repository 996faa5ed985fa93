"""Bodies of the limits' routes."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from tickwheel.core.limits import MAX_COUNT


class LimitIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rate: str | None = Field(
        default=None,
        max_length=40,
        description="At most COUNT starts in any window of PERIOD: 100/s, 10/m, 5/h, "
        "1000/d, 20/10s or 1/500ms",
        examples=["100/s"],
    )
    concurrency: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, description="At most this many running at once"
    )


class LimitOut(BaseModel):
    scope: str = Field(description="task_type, queue or key")
    name: str
    rate: str | None = Field(description="COUNT/PERIOD, or null for no rate")
    concurrency: int | None
    started_in_window: int = Field(
        description="Tasks started within the rate's current window (0 without a rate)"
    )
    running: int = Field(
        description="Its tasks running now (a cancelled one until its attempt's lease ends)"
    )
    held: int = Field(description="Ready tasks it holds back")
    updated_at: datetime


class LimitsOut(BaseModel):
    limits: list[LimitOut]
