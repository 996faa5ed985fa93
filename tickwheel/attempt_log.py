"""One log line per failed attempt, written where the attempt's end is recorded (an
in-process worker, or the API for a remote one): operators see failures and retries
without opening the dashboard."""

from __future__ import annotations

import logging

from tickwheel.models import ClaimedTask, Finish, Status


def log_failed_attempt(log: logging.Logger, task: ClaimedTask, end: Finish) -> None:
    if end.retry_at_ms is not None:
        after = f"retry in {max(0, end.retry_at_ms - end.ended_ms) / 1000:.1f} s"
    else:
        after = "no retry left" if end.status is Status.FAILED else f"now {end.status}"
    log.warning(
        "task %s (%s) attempt %d %s: %s; %s",
        task.task_id,
        task.task_type,
        task.attempt,
        str(end.outcome).replace("_", " "),
        end.error,
        after,
        extra={"task_id": task.task_id, "task_type": task.task_type, "attempt": task.attempt},
    )
