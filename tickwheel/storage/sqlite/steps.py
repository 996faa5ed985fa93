"""The SQLite store's answers to the steps of a plan (`storage/plans/`), on the
writer's connection inside its transaction.

A batch is bound as one JSON array read with `json_each`. SQLite has one writer at a
time, so the locks PostgreSQL takes (`LockMarks`, `LockKeys`) are nothing here, and
seqs and marks handed out inside the write transaction are in commit order.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from tickwheel.models import Status
from tickwheel.storage import rows as convert
from tickwheel.storage.named_queries import claim_variant
from tickwheel.storage.plans import steps
from tickwheel.storage.plans.steps import KeyRef, Plan, T
from tickwheel.storage.records import Fence
from tickwheel.storage.sqlite.queries import DB_NOW_MS, as_json, q


def run(db: sqlite3.Connection, plan: Plan[T]) -> T:
    """Run `plan` on `db`, in the caller's transaction."""
    return steps.run(plan, steps.answerer(SqliteSteps(db)))


def planned(
    plan_of: Callable[..., Plan[T]], *args: Any, **kwargs: Any
) -> Callable[[sqlite3.Connection], T]:
    """A work that runs the plan `plan_of(*args, **kwargs)`. It pickles by reference (a
    closure pickles its code), so it crosses to the writer's process cheaply; the plan
    itself, a generator, is made there."""
    return functools.partial(_run_planned, plan_of, args, kwargs)


def _run_planned(
    plan_of: Callable[..., Plan[T]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    db: sqlite3.Connection,
) -> T:
    return run(db, plan_of(*args, **kwargs))


def claim_statement(step: steps.Claim) -> str:
    """The claim, with the condition that skips limited tasks only while limits exist:
    its subqueries cost every claim a tenth."""
    return _claim_statement(bool(step.skip), step.holds_slot is not None)


@functools.cache
def _claim_statement(skipping: bool, marking: bool) -> str:
    return claim_variant(q, skipping=skipping, marking=marking)


def claim_params(step: steps.Claim) -> dict[str, Any]:
    """The claim statement's parameters."""
    return {
        "claims": as_json(step.items),
        "now": step.now,
        "lease_until": step.lease_until,
        "worker_id": step.worker_id,
        "keyed": int(step.keyed),
        "skip_types": as_json(step.skip.task_types),
        "skip_queues": as_json(step.skip.queues),
        "skip_keys": as_json(step.skip.keys),
        "holds_slot": int(bool(step.holds_slot)),
    }


class SqliteSteps:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def _rows(self, name: str, params: Any = ()) -> list[Any]:
        return self.db.execute(q(name), params).fetchall()

    def _changed(self, name: str, params: Any = ()) -> int:
        return self.db.execute(q(name), params).rowcount

    # -- marks, seqs and task rows

    def lock_marks(self, _: steps.LockMarks) -> None:
        """One writer at a time: nothing to lock."""

    def take_marks(self, step: steps.TakeMarks) -> range:
        (top,) = self.db.execute(q("take_marks"), {"count": step.count}).fetchone()
        return range(top - step.count + 1, top + 1)

    def next_seqs(self, step: steps.NextSeqs) -> list[int]:
        # Explicit seqs: SQLite has one writer at a time, so MAX + 1 inside the write
        # transaction is the commit order, which the loader's "seq after" scan relies on.
        first = self.db.execute(q("max_seq")).fetchone()[0] + 1
        return list(range(first, first + step.count))

    def insert_tasks(self, step: steps.InsertTasks) -> None:
        self.db.executemany(q("insert_task"), step.rows)

    def seqs_of(self, step: steps.SeqsOf) -> dict[str, int]:
        return dict(self._rows("seqs_of", (as_json(step.task_ids),)))

    def delete_task(self, step: steps.DeleteTask) -> None:
        self.db.execute("DELETE FROM tasks WHERE seq = ?", (step.seq,))

    # -- repeated submissions

    def stored_requests(self, step: steps.StoredRequests) -> dict[str, str | None]:
        return dict(self._rows("stored_requests", (as_json(step.task_ids),)))

    def take_keys(self, step: steps.TakeKeys) -> set[KeyRef]:
        params = {"keys": as_json(step.rows), "since": step.free_before}
        return {(r[0], r[1]) for r in self._rows("take_idempotency_keys", params)}

    def key_holders(self, step: steps.KeyHolders) -> dict[KeyRef, tuple[str, str]]:
        held = self._rows("idempotency_key_holders", (as_json(step.keys),))
        return {(r[0], r[1]): (r[2], r[3]) for r in held}

    # -- dependencies

    def statuses_of(self, step: steps.StatusesOf) -> dict[str, tuple[int, Status]]:
        found = self._rows("statuses_of", (as_json(step.task_ids),))
        return {task_id: (seq, Status(status)) for task_id, seq, status in found}

    def insert_links(self, step: steps.InsertLinks) -> None:
        self.db.executemany(q("insert_edge"), step.edges)
        self.db.executemany(q("insert_dependency"), step.counters)
        self.db.execute(q("mark_has_dependents"), (as_json(step.watched),))

    def take_propagations(self, step: steps.TakePropagations) -> list[Any]:
        return self._rows("take_propagations", {"limit": step.limit, "now": step.now})

    def settle_edges(self, step: steps.SettleEdges) -> list[tuple[int, int]]:
        params = {"seqs": as_json(step.seqs), "state": step.state}
        return [(r[0], r[1]) for r in self._rows("settle_edges", params)]

    def count_satisfied(self, step: steps.CountSatisfied) -> list[tuple[int, bool]]:
        counted = self._rows("count_satisfied", {"counts": as_json(step.counts)})
        return [(r[0], bool(r[1])) for r in counted]

    def unblock(self, step: steps.Unblock) -> int:
        return self._changed("unblock", {"tasks": as_json(step.tasks), "now": step.now})

    def fail_upstream(self, step: steps.FailUpstream) -> int:
        params = {"tasks": as_json(step.tasks), "now": step.now}
        return self._changed("fail_upstream", params)

    def forget_propagations(self, step: steps.ForgetPropagations) -> None:
        self.db.execute(q("forget_propagations"), (as_json(step.seqs),))

    def propagate_later(self, step: steps.PropagateLater) -> None:
        self.db.executemany(q("propagate_later"), step.rows)

    def has_propagations(self, step: steps.HasPropagations) -> bool:
        return bool(self.db.execute(q("has_propagations"), (step.now,)).fetchone()[0])

    # -- ordering keys

    def lock_keys(self, _: steps.LockKeys) -> None:
        """One writer at a time: nothing to lock."""

    def key_holder(self, step: steps.KeyHolder) -> Any:
        return self.db.execute(q("key_holder"), (step.key,)).fetchone()

    def next_of_key(self, step: steps.NextOfKey) -> tuple[int, str] | None:
        found = self.db.execute(q("next_of_key"), {"key": step.key, "now": step.now}).fetchone()
        return None if found is None else (found[0], found[1])

    def free_key(self, step: steps.FreeKey) -> None:
        self.db.execute(q("free_key"), (step.key,))

    def hold_key(self, step: steps.HoldKey) -> None:
        self.db.execute(q("hold_key"), (step.key, step.seq))

    def take_turn(self, step: steps.TakeTurn) -> None:
        self.db.execute(q("take_turn"), {"seq": step.seq, "mark": step.mark})

    def keyed_claims(self, step: steps.KeyedClaims) -> list[tuple[int, str]]:
        params = {"seqs": as_json(step.seqs), "latest": step.latest}
        return [(r[0], r[1]) for r in self._rows("keyed_claims", params)]

    def wait_for_turn(self, step: steps.WaitForTurn) -> None:
        self.db.execute(q("wait_for_turn"), (as_json(step.seqs),))

    # -- attempts

    def claim(self, step: steps.Claim) -> list[Any]:
        return self.db.execute(claim_statement(step), claim_params(step)).fetchall()

    def finish_rows(self, step: steps.FinishRows) -> list[Any]:
        return self._rows("finish", {"finishes": as_json(step.rows)})

    def insert_executions(self, step: steps.InsertExecutions) -> None:
        self.db.executemany(q("insert_execution"), step.rows)

    def cancel(self, step: steps.Cancel) -> Any:
        params = {"seq": step.seq, "version": step.version, "now": step.now}
        return self.db.execute(q("cancel"), params).fetchone()

    def redrive(self, step: steps.Redrive) -> bool:
        params = {"seq": step.seq, "version": step.version, "now": step.now, "mark": step.mark}
        return bool(self._changed("redrive", params))

    def set_priority(self, step: steps.SetPriority) -> bool:
        params = {
            "seq": step.seq,
            "version": step.version,
            "priority": step.priority,
            "mark": step.mark,
        }
        return bool(self._changed("set_priority", params))

    # -- workflows and schedules

    def insert_workflow(self, step: steps.InsertWorkflow) -> bool:
        w = step.workflow
        return bool(
            self._changed("insert_workflow", (w.workflow_id, w.name, w.created_ms, w.request_hash))
        )

    def insert_schedule(self, step: steps.InsertSchedule) -> None:
        self.db.execute(q("insert_schedule"), convert.schedule_params(step.schedule))

    def set_current_seq(self, step: steps.SetCurrentSeq) -> None:
        self.db.execute(
            "UPDATE schedules SET current_seq = ? WHERE schedule_id = ?",
            (step.seq, step.schedule_id),
        )

    def fences_holding(self, step: steps.FencesHolding) -> set[Fence]:
        now = self.db.execute(f"SELECT {DB_NOW_MS}").fetchone()[0]
        return {
            fence
            for fence in step.fences
            if self.db.execute(q("fence_holds"), {**fence._asdict(), "now": now}).fetchone()
        }

    def advance_schedule(self, step: steps.AdvanceSchedule) -> bool:
        params = {
            "next_seq": step.seq,
            "schedule_id": step.schedule_id,
            "version": step.version,
            "skipped": step.skipped,
        }
        return bool(self._changed("advance_schedule", params))

    def skip_instance(self, step: steps.SkipInstance) -> None:
        params = {"seq": step.seq, "now": step.now, "reason": step.reason}
        self.db.execute(q("skip_instance"), params)

    # -- limits

    def limited_candidates(self, step: steps.LimitedCandidates) -> list[Any]:
        params = {"claims": as_json(step.items), "now": step.now}
        return self._rows("limited_candidates", params)

    def store_now(self, _: steps.StoreNow) -> int:
        return time.time_ns() // 1_000_000  # the file is on this host: its clock is ours

    def lock_limits(self, step: steps.LockLimits) -> list[Any]:
        """One writer at a time: reading is locking."""
        return self._rows("lock_limits", {"ids": as_json(step.ids)})

    def running_of(self, step: steps.RunningOf) -> dict[str, tuple[int, int | None]]:
        params = {"ids": as_json(step.ids), "now": step.now}
        return {r[0]: (r[1], r[2]) for r in self._rows("running_of_limits", params)}

    def held_heads(self, step: steps.HeldHeads) -> dict[str, tuple[int, int, int]]:
        heads = {}
        for lid in step.ids:
            found = self.db.execute(q("held_head"), {"limit_id": lid}).fetchone()
            if found is not None:
                heads[lid] = (found[0], found[1], found[2])
        return heads

    def list_limits(self, step: steps.ListLimits) -> list[Any]:
        return self._rows("limits_in_use", {"limit_id": step.limit_id})

    def hold_tasks(self, step: steps.HoldTasks) -> None:
        self.db.execute(q("hold_tasks"), {"rows": as_json(step.rows)})

    def write_windows(self, step: steps.WriteWindows) -> None:
        self.db.execute(q("write_windows"), {"rows": as_json(step.rows)})

    def wake_later(self, step: steps.WakeLater) -> None:
        self.db.execute(q("wake_later"), {"rows": as_json(step.rows)})

    def due_wakes(self, step: steps.DueWakes) -> list[tuple[int, str]]:
        params = {"now": step.now, "limit": step.limit}
        return [(r[0], r[1]) for r in self._rows("due_wakes", params)]

    def forget_wakes(self, step: steps.ForgetWakes) -> None:
        self.db.execute(q("forget_wakes"), {"ids": as_json(step.ids)})

    def held_of(self, step: steps.HeldOf) -> list[int]:
        params = {"limit_id": step.limit_id, "count": step.count}
        return [r[0] for r in self._rows("held_of", params)]

    def release_held(self, step: steps.ReleaseHeld) -> None:
        self.db.execute(q("release_held"), {"rows": as_json(step.rows)})

    def sweep_wakes(self, step: steps.SweepWakes) -> None:
        self.db.execute(q("sweep_wakes"), {"now": step.now})
