"""The WHERE clause of a task listing, the same for both stores but for placeholders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tickwheel.storage.base import TaskFilter

NEVER = 2**62


def task_clauses(
    where: TaskFilter,
    *,
    before_seq: int | None,
    seqs_from: int | None,
    seqs_below: int | None,
    bind: Callable[[Any], str],
) -> list[str]:
    """Conditions on `tasks` for `where`, below `before_seq`. `seqs_from` and
    `seqs_below` are the seqs of its created range (the first created at or after each
    bound), which keep a listing of a range a walk down the primary key; the times are
    checked too. `bind(value)` adds a parameter and returns its placeholder."""
    clauses = seq_clauses(
        before_seq=before_seq, seqs_from=seqs_from, seqs_below=seqs_below, bind=bind
    )
    if where.statuses:
        clauses.append(f"status IN ({', '.join(bind(str(s)) for s in where.statuses)})")
    for column in ("task_type", "schedule_id", "queue"):
        value = getattr(where, column)
        if value is not None:
            clauses.append(f"{column} = {bind(value)}")
    if where.created_after_ms is not None:
        clauses.append(f"created_at >= {bind(where.created_after_ms)}")
    if where.created_before_ms is not None:
        clauses.append(f"created_at < {bind(where.created_before_ms)}")
    if where.held_by is not None:
        clauses.append(f"held_by = {bind(where.held_by)} AND status = 'pending'")
    if where.q is not None:
        # Two index lookups, not an OR that the planner may read as a scan of every seq.
        task_id, key = bind(where.q), bind(where.q)
        clauses.append(
            f"seq IN (SELECT seq FROM tasks WHERE task_id = {task_id}"
            f" UNION SELECT seq FROM tasks WHERE idempotency_key = {key})"
        )
    return clauses


def seq_clauses(
    *,
    before_seq: int | None,
    seqs_from: int | None,
    seqs_below: int | None,
    bind: Callable[[Any], str],
) -> list[str]:
    """The bounds of a listing's seqs (see `task_clauses`)."""
    top = min(
        NEVER if before_seq is None else before_seq, NEVER if seqs_below is None else seqs_below
    )
    clauses = [f"seq < {bind(top)}"]
    if seqs_from is not None:
        clauses.append(f"seq >= {bind(seqs_from)}")
    return clauses
