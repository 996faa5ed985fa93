"""What a handler learns about the attempt it runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class TaskContext:
    task_id: str
    task_type: str
    attempt: int  # 1 for the first attempt
    due_time: datetime
    fence: int
    worker_id: str
    # The W3C trace context of this run's span, with tracing on: pass it on to the
    # services you call (the http task type sends it as a `traceparent` header).
    traceparent: str | None = None

    @property
    def idempotency_key(self) -> str:
        """The same for every attempt of this task: pass it to the services you call so
        that a retried side effect happens once."""
        return self.task_id
