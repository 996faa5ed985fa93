"""The PostgreSQL store's answers to the steps of a plan (`storage/plans/`), on one
connection inside the caller's transaction.

Batches are bound as arrays, one per column, read with `unnest`: a batch of any size
is one statement and one round trip. What SQLite's single writer gives for free is
taken with locks: the marks' counter row (`LockMarks`) and per-key advisory locks
(`LockKeys`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from tickwheel.models import Status
from tickwheel.storage import rows as convert
from tickwheel.storage.named_queries import claim_variant, load
from tickwheel.storage.plans import steps
from tickwheel.storage.plans.steps import KeyRef, Plan, T
from tickwheel.storage.records import Fence, News

Db: TypeAlias = "PoolConnectionProxy[asyncpg.Record]"
_Q = load(__package__ or "tickwheel.storage.postgres")


def q(name: str) -> str:
    return _Q[name]


async def run(db: Db, plan: Plan[T]) -> T:
    """Run `plan` on `db`, in the caller's transaction."""
    return await steps.run_async(plan, steps.answerer(PostgresSteps(db)))


def columns(rows: Sequence[Sequence[Any]], width: int) -> list[list[Any]]:
    """Rows as one list per column: what `unnest` takes."""
    return [[row[i] for row in rows] for i in range(width)]


def changed(status: str) -> bool:
    """Whether a command's status ("UPDATE 1", "INSERT 0 1") says a row changed."""
    return not status.endswith(" 0")


def count(status: str) -> int:
    """How many rows a command's status says it changed."""
    return int(status.rsplit(" ", 1)[1])


def claim_statement(step: steps.Claim) -> tuple[str, tuple[Any, ...]]:
    """The claim and its arguments: skipping the tasks of limits only while limits exist
    (a plain claim), or marking what it claims (a limited claim's, which skips nothing
    but keeps the skipping's placeholders, as PostgreSQL needs every one typed)."""
    seqs, triggered = columns(step.items, 2)
    args: tuple[Any, ...] = (seqs, triggered, step.now, step.lease_until, step.worker_id)
    args += (step.keyed,)
    marking = step.holds_slot is not None
    if not step.skip and not marking:
        return _claim_sql(False, False), args
    skip = step.skip
    args += (list(skip.task_types), list(skip.queues), list(skip.keys))
    if marking:
        args += (step.holds_slot,)
    return _claim_sql(True, marking), args


@functools.cache
def _claim_sql(skipping: bool, marking: bool) -> str:
    return claim_variant(q, skipping=skipping, marking=marking)


class PostgresSteps:
    def __init__(self, db: Db) -> None:
        self.db = db

    # -- marks, seqs and task rows

    async def lock_marks(self, _: steps.LockMarks) -> None:
        """Take the counter's row lock before any other: a transaction that locks task
        rows and then waits for marks could otherwise deadlock with one that did the
        reverse."""
        await self.db.execute(q("lock_marks"))

    async def take_marks(self, step: steps.TakeMarks) -> range:
        """New marks for tasks this transaction makes pending: the owning schedulers
        are told at commit, whichever node they run on."""
        await self.db.execute(q("notify"), News.NEW_TASKS.value)
        top = await self.db.fetchval(q("take_marks"), step.count)
        return range(top - step.count + 1, top + 1)

    async def next_seqs(self, step: steps.NextSeqs) -> list[int]:
        return [r[0] for r in await self.db.fetch(q("next_seqs"), step.count)]

    async def insert_tasks(self, step: steps.InsertTasks) -> None:
        await self.db.execute(q("insert_tasks"), *columns(step.rows, 27))

    async def seqs_of(self, step: steps.SeqsOf) -> dict[str, int]:
        return {r[0]: r[1] for r in await self.db.fetch(q("seqs_of"), step.task_ids)}

    async def delete_task(self, step: steps.DeleteTask) -> None:
        await self.db.execute(q("delete_task"), step.seq)

    # -- repeated submissions

    async def stored_requests(self, step: steps.StoredRequests) -> dict[str, str | None]:
        return {r[0]: r[1] for r in await self.db.fetch(q("stored_requests"), step.task_ids)}

    async def take_keys(self, step: steps.TakeKeys) -> set[KeyRef]:
        args = (*columns(step.rows, 5), step.free_before)
        return {(r[0], r[1]) for r in await self.db.fetch(q("take_idempotency_keys"), *args)}

    async def key_holders(self, step: steps.KeyHolders) -> dict[KeyRef, tuple[str, str]]:
        held = await self.db.fetch(q("idempotency_key_holders"), *columns(step.keys, 2))
        return {(r[0], r[1]): (r[2], r[3]) for r in held}

    # -- dependencies

    async def statuses_of(self, step: steps.StatusesOf) -> dict[str, tuple[int, Status]]:
        """Read under a row lock: a predecessor cannot end between this read and the
        commit that marks it as having dependents (its end would then queue no news)."""
        found = await self.db.fetch(q("statuses_of"), step.task_ids)
        return {r[0]: (r[1], Status(r[2])) for r in found}

    async def insert_links(self, step: steps.InsertLinks) -> None:
        await self.db.execute(q("insert_edges"), *columns(step.edges, 3))
        if step.counters:
            await self.db.execute(q("insert_dependencies"), *columns(step.counters, 3))
        await self.db.execute(q("mark_has_dependents"), step.watched)

    async def take_propagations(self, step: steps.TakePropagations) -> list[asyncpg.Record]:
        return list(await self.db.fetch(q("take_propagations"), step.now, step.limit))

    async def settle_edges(self, step: steps.SettleEdges) -> list[tuple[int, int]]:
        settled = await self.db.fetch(q("settle_edges"), step.seqs, step.state)
        return [(r[0], r[1]) for r in settled]

    async def count_satisfied(self, step: steps.CountSatisfied) -> list[tuple[int, bool]]:
        dependents, counts = columns(step.counts, 2)
        counted = await self.db.fetch(q("count_satisfied"), dependents, counts)
        return [(r[0], bool(r[1])) for r in counted]

    async def unblock(self, step: steps.Unblock) -> int:
        seqs, marks = columns(step.tasks, 2)
        return count(await self.db.execute(q("unblock"), seqs, marks, step.now))

    async def fail_upstream(self, step: steps.FailUpstream) -> int:
        seqs, errors = columns(step.tasks, 2)
        return count(await self.db.execute(q("fail_upstream"), seqs, errors, step.now))

    async def forget_propagations(self, step: steps.ForgetPropagations) -> None:
        await self.db.execute(q("forget_propagations"), step.seqs)

    async def propagate_later(self, step: steps.PropagateLater) -> None:
        await self.db.execute(q("propagate_later"), *columns(step.rows, 2))

    async def has_propagations(self, step: steps.HasPropagations) -> bool:
        return bool(await self.db.fetchval(q("has_propagations"), step.now))

    # -- ordering keys

    async def lock_keys(self, step: steps.LockKeys) -> None:
        await self.db.execute(q("lock_keys"), step.keys)

    async def key_holder(self, step: steps.KeyHolder) -> asyncpg.Record | None:
        return await self.db.fetchrow(q("key_holder"), step.key)

    async def next_of_key(self, step: steps.NextOfKey) -> tuple[int, str] | None:
        found = await self.db.fetchrow(q("next_of_key"), step.key, step.now)
        return None if found is None else (found[0], found[1])

    async def free_key(self, step: steps.FreeKey) -> None:
        await self.db.execute(q("free_key"), step.key)

    async def hold_key(self, step: steps.HoldKey) -> None:
        await self.db.execute(q("hold_key"), step.key, step.seq)

    async def take_turn(self, step: steps.TakeTurn) -> None:
        await self.db.execute(q("take_turn"), step.seq, step.mark)

    async def keyed_claims(self, step: steps.KeyedClaims) -> list[tuple[int, str]]:
        keyed = await self.db.fetch(q("keyed_claims"), step.seqs, step.latest)
        return [(r[0], r[1]) for r in keyed]

    async def wait_for_turn(self, step: steps.WaitForTurn) -> None:
        await self.db.execute(q("wait_for_turn"), step.seqs)

    # -- attempts

    async def claim(self, step: steps.Claim) -> list[asyncpg.Record]:
        sql, args = claim_statement(step)
        return list(await self.db.fetch(sql, *args))

    async def finish_rows(self, step: steps.FinishRows) -> list[asyncpg.Record]:
        return list(await self.db.fetch(q("finish"), *columns(step.rows, 8)))

    async def insert_executions(self, step: steps.InsertExecutions) -> None:
        await self.db.execute(q("insert_executions"), *columns(step.rows, 10))

    async def cancel(self, step: steps.Cancel) -> asyncpg.Record | None:
        return await self.db.fetchrow(q("cancel"), step.seq, step.version, step.now)

    async def redrive(self, step: steps.Redrive) -> bool:
        args = (step.seq, step.version, step.now, step.mark)
        return changed(await self.db.execute(q("redrive"), *args))

    async def set_priority(self, step: steps.SetPriority) -> bool:
        args = (step.seq, step.version, step.priority, step.mark)
        return changed(await self.db.execute(q("set_priority"), *args))

    # -- workflows and schedules

    async def insert_workflow(self, step: steps.InsertWorkflow) -> bool:
        w = step.workflow
        args = (w.workflow_id, w.name, w.created_ms, w.request_hash)
        return changed(await self.db.execute(q("insert_workflow"), *args))

    async def insert_schedule(self, step: steps.InsertSchedule) -> None:
        await self.db.execute(q("insert_schedule"), *convert.schedule_params(step.schedule))

    async def set_current_seq(self, step: steps.SetCurrentSeq) -> None:
        await self.db.execute(q("set_current_seq"), step.schedule_id, step.seq)

    async def fences_holding(self, step: steps.FencesHolding) -> set[Fence]:
        """Read without a row lock, which could deadlock with a renewal locking the
        leases in another order: a takeover committed meanwhile is harmless, as the
        schedule's compare-and-set still admits one advance."""
        now = await self.db.fetchval(q("now_ms"))
        args = (*columns(list(step.fences), 3), now)
        return {Fence(r[0], r[1], r[2]) for r in await self.db.fetch(q("holding_fences"), *args)}

    async def advance_schedule(self, step: steps.AdvanceSchedule) -> bool:
        args = (step.seq, step.schedule_id, step.version, step.skipped)
        return changed(await self.db.execute(q("advance_schedule"), *args))

    async def skip_instance(self, step: steps.SkipInstance) -> None:
        await self.db.execute(q("skip_instance"), step.seq, step.now, step.reason)

    # -- limits

    async def limited_candidates(self, step: steps.LimitedCandidates) -> list[asyncpg.Record]:
        seqs, triggered = columns(step.items, 2)
        return list(await self.db.fetch(q("limited_candidates"), seqs, triggered, step.now))

    async def store_now(self, _: steps.StoreNow) -> int:
        now: int = await self.db.fetchval(q("now_ms"))
        return now

    async def lock_limits(self, step: steps.LockLimits) -> list[asyncpg.Record]:
        return list(await self.db.fetch(q("lock_limits"), step.ids))

    async def running_of(self, step: steps.RunningOf) -> dict[str, tuple[int, int | None]]:
        found = await self.db.fetch(q("running_of_limits"), step.ids, step.now)
        return {r[0]: (r[1], r[2]) for r in found}

    async def held_heads(self, step: steps.HeldHeads) -> dict[str, tuple[int, int, int]]:
        found = await self.db.fetch(q("held_heads"), step.ids)
        return {r[0]: (r[1], r[2], r[3]) for r in found}

    async def list_limits(self, step: steps.ListLimits) -> list[asyncpg.Record]:
        return list(await self.db.fetch(q("limits_in_use"), step.limit_id))

    async def hold_tasks(self, step: steps.HoldTasks) -> None:
        await self.db.execute(q("hold_tasks"), *columns(step.rows, 2))

    async def write_windows(self, step: steps.WriteWindows) -> None:
        await self.db.execute(q("write_windows"), *columns(step.rows, 2))

    async def wake_later(self, step: steps.WakeLater) -> None:
        await self.db.execute(q("wake_later"), *columns(step.rows, 2))

    async def due_wakes(self, step: steps.DueWakes) -> list[tuple[int, str]]:
        return [(r[0], r[1]) for r in await self.db.fetch(q("due_wakes"), step.now, step.limit)]

    async def forget_wakes(self, step: steps.ForgetWakes) -> None:
        await self.db.execute(q("forget_wakes"), step.ids)

    async def held_of(self, step: steps.HeldOf) -> list[int]:
        return [r[0] for r in await self.db.fetch(q("held_of"), step.limit_id, step.count)]

    async def release_held(self, step: steps.ReleaseHeld) -> None:
        await self.db.execute(q("release_held"), *columns(step.rows, 2))

    async def sweep_wakes(self, step: steps.SweepWakes) -> None:
        await self.db.execute(q("sweep_wakes"), step.now)
