"""Retention on SQLite: ended tasks deleted row by row, a batch per transaction.

PostgreSQL drops whole ranges of tasks; SQLite has no partitions, and its one writer
would stall every claim, heartbeat and submission behind a long delete. So each batch
looks at a window of at most `batch` tasks, walking the primary key from the oldest,
and only up to the first task created at or after the cutoff (found by bisecting the
seqs, as listings do): a task created since cannot have ended before it. A pass costs
a walk of the old tasks kept (a few, usually), not of the table.
"""

from __future__ import annotations

import sqlite3

from tickwheel.storage.base import Pruned
from tickwheel.storage.sqlite.queries import as_json, q

# What refers to a deleted task by its seq, deleted with it.
_WITH_THE_TASKS = (
    "delete_executions",
    "delete_edges_from",
    "delete_edges_into",
    "delete_dependencies",
)


def delete_ended(
    db: sqlite3.Connection, ended_before_ms: int, after_seq: int, batch: int
) -> Pruned:
    """One batch of `PrunedTaskStore.delete_ended_tasks`, inside the caller's transaction."""
    (below,) = db.execute(q("first_seq_created"), {"at": ended_before_ms}).fetchone()
    window = {"after": after_seq, "below": below, "batch": batch}
    last, looked_at = db.execute(q("retention_window"), window).fetchone()
    if last is None:
        return Pruned(0, None)
    params = {"after": after_seq, "last": last, "before": ended_before_ms}
    found = db.execute(q("ended_tasks_in_window"), params).fetchall()
    workflows = sorted({w for _, w in found if w is not None})
    kept: set[str] = set()
    if workflows:
        ids = {"ids": as_json(workflows), "before": ended_before_ms}
        kept = {r[0] for r in db.execute(q("workflows_kept"), ids)}
    seqs = as_json([seq for seq, w in found if w not in kept])
    deleted = db.execute(q("delete_tasks"), (seqs,)).fetchall()
    if deleted:
        for name in _WITH_THE_TASKS:
            db.execute(q(name), (seqs,))
        keys = [[t, k, task_id] for t, k, task_id in deleted if k is not None]
        if keys:
            db.execute(q("delete_idempotency_keys"), (as_json(keys),))
        emptied = sorted(set(workflows) - kept)
        if emptied:
            db.execute(q("delete_empty_workflows"), (as_json(emptied),))
    return Pruned(len(deleted), last if looked_at == batch else None)
