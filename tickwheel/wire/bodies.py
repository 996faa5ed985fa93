"""Submit options as the JSON body of a task: the one translation of `SubmitOptions`.

The client sends this body; the workflow builder writes one per task of a workflow; the
embedded node reads it back with `tickwheel.wire.requests`, so an option means the same
whichever face it was given to.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import Unpack

from tickwheel.models import SUBMIT_OPTIONS, SubmitOptions

# Options of a cron schedule besides its expression.
SCHEDULE_OPTIONS = ("timezone", "jitter_seconds", "misfire_policy", "overlap_policy")
# Options that are fields of the task's body as they are.
PLAIN_OPTIONS = (
    "queue",
    "priority",
    "max_retries",
    "timeout_seconds",
    "idempotency_key",
    "ordering_key",
    "limit_key",
    "expires_after_seconds",
)


def task_body(
    task_type: str, payload: Any = None, **options: Unpack[SubmitOptions]
) -> dict[str, Any]:
    """The JSON body of `POST /api/tasks`, also one entry of a batch."""
    unknown = options.keys() - SUBMIT_OPTIONS
    if unknown:
        raise TypeError(f"unknown submit options: {', '.join(sorted(unknown))}")
    body: dict[str, Any] = {"task_type": task_type, "payload": payload}
    schedule: dict[str, Any] = {"type": "immediate"}
    if "cron" in options:
        schedule = {"type": "cron", "cron_expression": options["cron"]}
    elif "due_time" in options or "delay_seconds" in options:
        schedule = {"type": "delayed"}
    if "due_time" in options:
        schedule["due_time"] = options["due_time"].isoformat()
    for name in ("delay_seconds", *SCHEDULE_OPTIONS):
        if name in options:
            schedule[name] = options[name]  # type: ignore[literal-required]
    body["schedule"] = schedule
    for name in PLAIN_OPTIONS:
        if name in options:
            body[name] = options[name]  # type: ignore[literal-required]
    if "expires_at" in options:
        body["expires_at"] = options["expires_at"].isoformat()
    if "dependencies" in options:
        body["dependencies"] = list(options["dependencies"])
    if "retry_backoff" in options:
        base, cap = options["retry_backoff"]
        body["retry_backoff"] = {"base_seconds": base, "max_seconds": cap}
    return body
