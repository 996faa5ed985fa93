"""The embedded store: one SQLite file in WAL mode.

Writes go through one connection (SQLite has one writer at a time), reads through
another so that API reads never wait behind a write batch.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tickwheel.errors import StoreUnavailable
from tickwheel.models import (
    ClaimedTask,
    ExecutionRecord,
    Finish,
    NewTask,
    ScheduleRecord,
    Status,
    TaskRecord,
    WheelEntry,
    WorkflowRecord,
)
from tickwheel.storage import rows as convert
from tickwheel.storage.base import (
    Advance,
    Held,
    LeaseHolder,
    News,
    Page,
    Propagated,
    Pruned,
    Renewal,
    SchedulerNode,
    ScheduleSummary,
    TaskFilter,
    TokenRecord,
    WorkerBeat,
    WorkerRecord,
    WorkflowSummary,
)
from tickwheel.storage.listing import task_clauses
from tickwheel.storage.plans import attempts, propagation
from tickwheel.storage.plans import inserts as plans
from tickwheel.storage.plans.steps import Claim
from tickwheel.storage.sqlite.connection import Connection, migrate
from tickwheel.storage.sqlite.holder import HolderLock
from tickwheel.storage.sqlite.queries import DB_NOW_MS, NEVER, TASK_COLUMNS, q
from tickwheel.storage.sqlite.retention import delete_ended
from tickwheel.storage.sqlite.steps import SqliteSteps, run

log = logging.getLogger(__name__)


class SqliteStore:
    def __init__(
        self,
        path: str,
        *,
        partitions: int = 16,
        on_failure: Callable[[StoreUnavailable], None] = lambda error: None,
    ) -> None:
        self.path = path
        self._wanted_partitions = partitions
        self._writer = Connection(path, name="writer", on_failure=on_failure)
        self._reader = Connection(path, name="reader", on_failure=on_failure)
        self._partitions = partitions
        self._holder = HolderLock(path)
        self._told_held = False

    async def open(self) -> None:
        await self._writer.open()
        await self._writer.run(migrate)
        self._partitions = await self._writer.transaction(self._init_cluster)
        await self._reader.open()

    def _init_cluster(self, db: sqlite3.Connection) -> int:
        row = db.execute("SELECT value FROM cluster WHERE key = 'partitions'").fetchone()
        if row:
            return int(row[0])
        count = self._wanted_partitions
        db.execute("INSERT INTO cluster (key, value) VALUES ('partitions', ?)", (str(count),))
        db.execute("INSERT INTO cluster (key, value) VALUES ('mark', '0')")
        db.executemany(
            "INSERT INTO partition_leases (partition) VALUES (?)", [(p,) for p in range(count)]
        )
        return count

    def interrupt(self) -> None:
        self._writer.interrupt()
        self._reader.interrupt()

    async def close(self) -> None:
        await self._reader.close()
        await self._writer.close()
        self._holder.release()

    # -- tasks ---------------------------------------------------------------

    async def insert_tasks(self, tasks: Sequence[NewTask]) -> list[int]:
        return [held.seq for held in await self.insert_tasks_with_holders(tasks)]

    async def insert_tasks_with_holders(self, tasks: Sequence[NewTask]) -> list[Held]:
        return await self._writer.transaction(lambda db: run(db, plans.insert_tasks(tasks)))

    async def propagate(self, now_ms: int, *, limit: int = 1000) -> Propagated:
        return await self._writer.transaction(
            lambda db: run(db, propagation.propagate(now_ms, limit)), acknowledged=False
        )

    async def insert_workflow(self, workflow: WorkflowRecord, tasks: Sequence[NewTask]) -> bool:
        return await self._writer.transaction(
            lambda db: run(db, plans.insert_workflow(workflow, tasks))
        )

    async def get_workflow(
        self, workflow_id: str
    ) -> tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None:
        def work(db: sqlite3.Connection) -> Any:
            row = db.execute(q("get_workflow"), (workflow_id,)).fetchone()
            if row is None:
                return None
            tasks = [convert.task(r) for r in db.execute(q("workflow_tasks"), (workflow_id,))]
            seqs = json.dumps([t.seq for t in tasks])
            edges = [tuple(e) for e in db.execute(q("edges_into"), (seqs,))]
            return convert.workflow(row), tasks, edges

        found: tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None
        found = await self._reader.run(work)
        return found

    async def active_workflows(self, workflow_ids: Collection[str]) -> set[str]:
        ids = json.dumps(sorted(workflow_ids))
        rows = await self._reader.run(
            lambda db: db.execute(q("active_workflows"), (ids,)).fetchall()
        )
        return {r[0] for r in rows}

    async def has_propagations(self, now_ms: int) -> bool:
        row = await self._reader.run(
            lambda db: db.execute(q("has_propagations"), (now_ms,)).fetchone()
        )
        return bool(row[0])

    async def get_task(self, task_id: str) -> TaskRecord | None:
        row = await self._reader.run(lambda db: db.execute(q("get_task"), (task_id,)).fetchone())
        return convert.task(row) if row else None

    async def get_tasks(self, seqs: Collection[int]) -> list[TaskRecord]:
        arg = json.dumps(list(seqs))
        rows = await self._reader.run(lambda db: db.execute(q("get_tasks"), (arg,)).fetchall())
        return [convert.task(r) for r in rows]

    async def list_tasks(
        self, where: TaskFilter, *, before_seq: int | None, limit: int
    ) -> list[TaskRecord]:
        def work(db: sqlite3.Connection) -> list[Any]:
            params: list[Any] = []

            def bind(value: Any) -> str:
                params.append(value)
                return "?"

            clauses = task_clauses(
                where,
                before_seq=before_seq,
                seqs_from=_first_seq_created(db, where.created_after_ms),
                seqs_below=_first_seq_created(db, where.created_before_ms),
                bind=bind,
            )
            sql = (
                f"SELECT {TASK_COLUMNS} FROM tasks WHERE {' AND '.join(clauses)}"
                f" ORDER BY seq DESC LIMIT {bind(limit)}"
            )
            return db.execute(sql, params).fetchall()

        return [convert.task(r) for r in await self._reader.run(work)]

    async def list_workflows(self, *, before: Page | None, limit: int) -> list[WorkflowSummary]:
        def work(db: sqlite3.Connection) -> list[WorkflowSummary]:
            params = {**_below(before), "limit": limit}
            found = db.execute(q("list_workflows"), params).fetchall()
            ids = json.dumps([w[0] for w in found])
            counts = db.execute(q("workflow_counts"), (ids,)).fetchall() if found else []
            return convert.workflow_summaries(found, counts)

        return await self._reader.run(work)

    async def history(
        self, *, task_seq: int | None, schedule_id: str | None, before_id: int | None, limit: int
    ) -> list[ExecutionRecord]:
        params: dict[str, Any] = {"before": before_id or NEVER, "limit": limit}
        if schedule_id is not None:
            name, params["schedule_id"] = "history_of_schedule", schedule_id
        else:
            name, params["task_seq"] = "history_of_task", task_seq
        rows = await self._reader.run(lambda db: db.execute(q(name), params).fetchall())
        return [convert.execution(r) for r in rows]

    async def redrive(self, items: Sequence[tuple[int, int]], now_ms: int) -> list[bool]:
        return await self._writer.transaction(lambda db: run(db, attempts.redrive(items, now_ms)))

    async def set_priority(self, seq: int, version: int, priority: int) -> bool:
        return await self._writer.transaction(
            lambda db: run(db, attempts.set_priority(seq, version, priority))
        )

    async def execution_at(self, task_seq: int, fence: int) -> ExecutionRecord | None:
        params = {"task_seq": task_seq, "fence": fence}
        found = await self._reader.run(
            lambda db: db.execute(q("execution_at_fence"), params).fetchone()
        )
        return convert.execution(found) if found else None

    async def cancel(self, seq: int, version: int, now_ms: int) -> bool:
        return await self._writer.transaction(
            lambda db: run(db, attempts.cancel(seq, version, now_ms))
        )

    async def delete_ended_tasks(
        self, *, ended_before_ms: int, after_seq: int, batch: int
    ) -> Pruned:
        return await self._writer.transaction(
            lambda db: delete_ended(db, ended_before_ms, after_seq, batch), acknowledged=False
        )

    # -- dispatch ------------------------------------------------------------

    async def load_pending(
        self,
        partitions: Collection[int],
        *,
        due_after: int | None,
        due_until: int,
        mark_after: int | None = None,
    ) -> list[WheelEntry]:
        parts = json.dumps(sorted(partitions))
        if mark_after is None:
            name = "load_due_range"
            params: dict[str, Any] = {
                "partitions": parts,
                "due_after": -NEVER if due_after is None else due_after,
                "due_until": due_until,
            }
        else:
            name = "load_new"
            params = {"partitions": parts, "mark_after": mark_after, "due_until": due_until}
        rows = await self._reader.run(lambda db: db.execute(q(name), params).fetchall())
        return [convert.wheel_entry(r) for r in rows]

    async def overdue(
        self, partitions: Collection[int], *, due_before: int, limit: int
    ) -> list[WheelEntry]:
        params = {
            "partitions": json.dumps(sorted(partitions)),
            "before": due_before,
            "limit": limit,
        }
        found = await self._reader.run(lambda db: db.execute(q("overdue"), params).fetchall())
        return [convert.wheel_entry(r) for r in found]

    async def max_seq(self) -> int:
        return int(await self._reader.run(lambda db: db.execute(q("max_seq")).fetchone()[0]))

    async def max_mark(self) -> int:
        return int(await self._reader.run(lambda db: db.execute(q("max_mark")).fetchone()[0]))

    async def claim(
        self, items: Sequence[tuple[int, int]], *, now_ms: int, lease_ms: int, worker_id: str
    ) -> list[ClaimedTask]:
        plain = Claim(items, now_ms, now_ms + lease_ms, worker_id, keyed=False)

        def work(db: sqlite3.Connection) -> list[Any]:
            rows = SqliteSteps(db).claim(plain)
            if len(rows) < len(items):  # cancelled meanwhile, or behind an ordering key
                rest = replace(plain, items=propagation.unclaimed(items, rows))
                rows += run(db, propagation.claim_keyed(rest))
            return rows

        rows = await self._writer.transaction(work, acknowledged=False)
        return [convert.claimed(r) for r in rows]

    async def extend_leases(self, fences: Mapping[int, int], *, until_ms: int) -> set[int]:
        params = {"fences": json.dumps(list(fences.items())), "until": until_ms}
        rows = await self._writer.transaction(
            lambda db: db.execute(q("extend_leases"), params).fetchall(), acknowledged=False
        )
        return set(fences) - {r[0] for r in rows}

    async def finish(self, finishes: Sequence[Finish]) -> list[bool]:
        return await self._writer.transaction(
            lambda db: run(db, attempts.finish(finishes)), acknowledged=False
        )

    async def subscribe(self, on_news: Callable[[News], None]) -> None:
        """One file, usually one process: a second process on it finds news by polling."""

    async def expired_leases(
        self, partitions: Collection[int], *, now_ms: int, limit: int
    ) -> list[TaskRecord]:
        params = {"partitions": json.dumps(sorted(partitions)), "now": now_ms, "limit": limit}
        rows = await self._reader.run(lambda db: db.execute(q("expired_leases"), params).fetchall())
        return [convert.task(r) for r in rows]

    # -- schedules -----------------------------------------------------------

    async def insert_schedule(self, schedule: ScheduleRecord, first: NewTask) -> str:
        return await self._writer.transaction(
            lambda db: run(db, plans.insert_schedule(schedule, first))
        )

    async def get_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        row = await self._reader.run(
            lambda db: db.execute(q("get_schedule"), (schedule_id,)).fetchone()
        )
        return convert.schedule(row) if row else None

    async def schedules_of(self, seqs: Collection[int]) -> dict[int, ScheduleRecord]:
        arg = json.dumps(list(seqs))
        rows = await self._reader.run(lambda db: db.execute(q("schedules_of"), (arg,)).fetchall())
        schedules = [convert.schedule(r) for r in rows]
        return {s.current_seq: s for s in schedules if s.current_seq is not None}

    async def advance_schedules(self, advances: Sequence[Advance]) -> list[int | None]:
        return await self._writer.transaction(
            lambda db: run(db, plans.advance_schedules(advances)), acknowledged=False
        )

    async def set_schedule_status(
        self, schedule_id: str, status: str, *, only_from: Collection[str] | None = None
    ) -> ScheduleRecord | None:
        only = json.dumps(list(only_from)) if only_from is not None else None
        params = {"status": status, "schedule_id": schedule_id, "only_from": only}

        def work(db: sqlite3.Connection) -> ScheduleRecord | None:
            if not db.execute(q("set_schedule_status"), params).rowcount:
                return None
            row = db.execute(q("get_schedule"), (schedule_id,)).fetchone()
            return convert.schedule(row)

        return await self._writer.transaction(work)

    async def list_schedules(
        self, *, statuses: Collection[str], before: Page | None, limit: int
    ) -> list[ScheduleSummary]:
        params = {**_below(before), "statuses": json.dumps(sorted(statuses)), "limit": limit}
        rows = await self._reader.run(lambda db: db.execute(q("list_schedules"), params).fetchall())
        return [convert.schedule_summary(r) for r in rows]

    # -- API tokens ----------------------------------------------------------

    async def create_token(
        self, token_id: str, token_hash: str, *, name: str, scopes: frozenset[str], now_ms: int
    ) -> None:
        row = (token_id, token_hash, name, ",".join(sorted(scopes)), now_ms)
        await self._writer.transaction(lambda db: db.execute(q("create_token"), row))

    async def list_tokens(self) -> list[TokenRecord]:
        rows = await self._reader.run(lambda db: db.execute(q("list_tokens")).fetchall())
        return [TokenRecord(r[0], r[1], frozenset(r[2].split(",")), r[3], r[4]) for r in rows]

    async def revoke_token(self, token_id: str, now_ms: int) -> bool:
        params = {"token_id": token_id, "now": now_ms}
        count = await self._writer.transaction(
            lambda db: db.execute(q("revoke_token"), params).rowcount
        )
        return bool(count)

    async def active_tokens(self) -> dict[str, frozenset[str]]:
        rows = await self._reader.run(lambda db: db.execute(q("active_tokens")).fetchall())
        return {r[0]: frozenset(r[1].split(",")) for r in rows}

    # -- partition leases ----------------------------------------------------

    async def partitions(self) -> int:
        return self._partitions

    async def now_ms(self) -> int:
        return time.time_ns() // 1_000_000  # the file is on this host: its clock is ours

    async def release(self, node_id: str, held: Mapping[int, int]) -> None:
        rows = [(p, node_id, epoch) for p, epoch in held.items()]
        await self._writer.transaction(
            lambda db: db.executemany(q("release_lease"), rows), acknowledged=False
        )

    async def renew(
        self,
        node_id: str,
        marks: Mapping[int, tuple[int, int]],
        wanted: Collection[int],
        *,
        ttl_ms: int,
        beat: bool,
    ) -> Renewal:
        """Several statements (watermarks, releases, leases, the heartbeat) in one
        transaction: the file is on this host, so their count costs little."""
        want = set(wanted)

        def work(db: sqlite3.Connection) -> Renewal:
            now = db.execute(f"SELECT {DB_NOW_MS}").fetchone()[0]
            params = {"node": node_id, "now": now, "ttl": ttl_ms}
            for partition, (epoch, mark) in marks.items():
                fence = {**params, "partition": partition, "epoch": epoch, "watermark": mark}
                db.execute(q("set_watermark"), fence)
            gone = [(p, node_id, epoch) for p, (epoch, _) in marks.items() if p not in want]
            db.executemany(q("release_lease"), gone)
            taken = {**params, "wanted": json.dumps(sorted(want))}
            held = dict(db.execute(q("acquire_leases"), taken).fetchall())
            if not beat:
                return Renewal(held, [])
            db.execute(q("node_heartbeat"), params)
            db.execute(q("forget_dead_nodes"), params)
            return Renewal(held, [r[0] for r in db.execute(q("live_nodes"), params)])

        return await self._writer.transaction(work, acknowledged=False)

    async def hold_lock(self, node_id: str) -> bool:
        if self._holder.held or self.path == ":memory:":
            return True
        try:
            previous = self._holder.take(node_id)
        except BlockingIOError:
            if not self._told_held:
                self._told_held = True
                log.warning(
                    "another Tickwheel process (pid and node: %s) is running on %s: it holds"
                    " the partitions; this one takes them when it stops or dies",
                    self._holder.holder(),
                    self.path,
                )
            return False
        if previous:
            freed = await self._writer.transaction(
                lambda db: db.execute(q("release_dead_holder"), (previous,)).rowcount,
                acknowledged=False,
            )
            if freed:
                log.warning(
                    "the process that held %s before (node %s) is gone: its %d partitions"
                    " are taken at once",
                    self.path,
                    previous,
                    freed,
                )
        return True

    async def leave(self, node_id: str) -> None:
        await self._writer.transaction(
            lambda db: db.execute(q("leave"), (node_id,)), acknowledged=False
        )

    async def watermarks(self) -> dict[int, int]:
        return dict(await self._reader.run(lambda db: db.execute(q("watermarks")).fetchall()))

    async def scheduler_nodes(self) -> list[SchedulerNode]:
        rows = await self._reader.run(lambda db: _read_now(db, "scheduler_nodes"))
        return [SchedulerNode(*r) for r in rows]

    async def lease_holders(self) -> list[LeaseHolder]:
        rows = await self._reader.run(lambda db: _read_now(db, "lease_holders"))
        return [LeaseHolder(*r) for r in rows]

    # -- workers -------------------------------------------------------------

    async def worker_seen(self, beat: WorkerBeat, *, ttl_ms: int) -> None:
        def work(db: sqlite3.Connection) -> None:
            params = {
                "worker_id": beat.worker_id,
                "kind": beat.kind,
                "queues": None if beat.queues is None else json.dumps(list(beat.queues)),
                "concurrency": beat.concurrency,
                "now": db.execute(f"SELECT {DB_NOW_MS}").fetchone()[0],
                "ttl": ttl_ms,
            }
            db.execute(q("worker_seen"), params)
            db.execute(q("forget_dead_workers"), params)

        await self._writer.transaction(work, acknowledged=False)

    async def worker_left(self, worker_id: str) -> None:
        await self._writer.transaction(
            lambda db: db.execute(q("worker_left"), (worker_id,)), acknowledged=False
        )

    async def live_workers(self) -> list[WorkerRecord]:
        rows = await self._reader.run(lambda db: _read_now(db, "live_workers"))
        return [convert.worker(r) for r in rows]

    async def count_by_status(self) -> dict[Status, int]:
        rows = await self._reader.run(lambda db: db.execute(q("count_by_status")).fetchall())
        return {Status(status): count for status, count in rows}


# -- rows <-> records ----------------------------------------------------------


def _read_now(db: sqlite3.Connection, name: str) -> list[Any]:
    """A query of what is alive by the database's clock (its `:now`)."""
    now = db.execute(f"SELECT {DB_NOW_MS}").fetchone()[0]
    return db.execute(q(name), {"now": now}).fetchall()


def _first_seq_created(db: sqlite3.Connection, at_ms: int | None) -> int | None:
    if at_ms is None:
        return None
    return int(db.execute(q("first_seq_created"), {"at": at_ms}).fetchone()[0])


def _below(before: Page | None) -> dict[str, Any]:
    """The bound of a newest-first page by (created time, id)."""
    if before is None:
        return {"before_created": NEVER, "before_id": ""}
    return {"before_created": before.created_ms, "before_id": before.key}
