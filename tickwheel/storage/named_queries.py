"""Loads a store's named queries from its `queries.sql` (`-- name: NAME` before each).

Both stores name the same columns, so `{task_columns}` and `{schedule_columns}` expand
to one list each, every column the row readers (rows.py) read by name;
`{s.schedule_columns}` is the latter qualified by the alias `s`, for a query that joins
schedules to their tasks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources

TASK_COLUMNS = (
    "seq, task_id, partition, task_type, payload, status, version, schedule_type, schedule_id,"
    " due_time, queue, priority, max_retries, backoff_base, backoff_max, timeout_seconds,"
    " attempts, created_at, triggered_at, started_at, completed_at, lease_expires_at,"
    " worker_id, last_error, idempotency_key, workflow_id, node_name, ordering_key, expires_at,"
    " traceparent, limit_key, held_by"
)
SCHEDULE_COLUMNS = (
    "schedule_id, task_type, payload, queue, priority, max_retries, backoff_base, backoff_max,"
    " timeout_seconds, cron_expression, timezone, jitter_seconds, misfire_policy,"
    " overlap_policy, status, version, current_seq, previous_seq, created_at, expires_after_ms"
)

_QUALIFIED_SCHEDULE_COLUMNS = ", ".join(f"s.{c.strip()}" for c in SCHEDULE_COLUMNS.split(","))

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def load(package: str) -> dict[str, str]:
    text = resources.files(package).joinpath("queries.sql").read_text()
    parts = _NAME.split(text)[1:]
    named = dict(zip(parts[::2], parts[1::2], strict=True))
    return {
        name: sql.strip()
        .replace("{task_columns}", TASK_COLUMNS)
        .replace("{schedule_columns}", SCHEDULE_COLUMNS)
        .replace("{s.schedule_columns}", _QUALIFIED_SCHEDULE_COLUMNS)
        for name, sql in named.items()
    }


def claim_variant(q: Callable[[str], str], *, skipping: bool, marking: bool) -> str:
    """A store's claim statement (`claim`) with its optional parts: `claim_marking` ends
    its SET (a limited claim's), `claim_skipping` ends its WHERE (while limits exist)."""
    sql = q("claim")
    if marking:
        sql = sql.replace(
            "triggered_at = c.triggered", f"triggered_at = c.triggered\n{q('claim_marking')}", 1
        )
    if skipping:
        at = sql.index("RETURNING")
        sql = f"{sql[:at]}{q('claim_skipping')}\n{sql[at:]}"
    return sql
