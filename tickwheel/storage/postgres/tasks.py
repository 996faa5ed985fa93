"""The PostgreSQL store's task roles: submission, reads, workflows, dependencies,
operations, listing and ranges of tasks (retention). Writes run the plans of
`storage/plans/`; reads are named queries."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

import asyncpg

from tickwheel.models import ExecutionRecord, NewTask, Status, TaskRecord, WorkflowRecord
from tickwheel.storage import rows as convert
from tickwheel.storage.base import (
    Held,
    Page,
    Predecessor,
    Propagated,
    TaskFilter,
    WorkflowSummary,
)
from tickwheel.storage.listing import seq_clauses, task_clauses
from tickwheel.storage.named_queries import TASK_COLUMNS
from tickwheel.storage.plans import attempts, propagation
from tickwheel.storage.plans import inserts as plans
from tickwheel.storage.postgres.base import NEVER, PostgresBase, below, first_seq_created
from tickwheel.storage.postgres.steps import Db, q, run

LABELS = ("task_type", "queue")  # a task's columns kept in task_labels too


class PostgresTasks(PostgresBase):
    async def insert_tasks(self, tasks: Sequence[NewTask]) -> list[int]:
        return [held.seq for held in await self.insert_tasks_with_holders(tasks)]

    async def insert_tasks_with_holders(self, tasks: Sequence[NewTask]) -> list[Held]:
        held = await self._transaction(lambda db: run(db, plans.insert_tasks(tasks)))
        self._statistics.inserted(len(tasks))
        return held

    async def get_task(self, task_id: str) -> TaskRecord | None:
        found = await self._fetch("get_task", task_id)
        return convert.task(found[0]) if found else None

    async def get_tasks(self, seqs: Collection[int]) -> list[TaskRecord]:
        return [convert.task(r) for r in await self._fetch("get_tasks", list(seqs))]

    async def traceparents_of(self, seqs: Collection[int]) -> dict[int, str]:
        return {
            r["seq"]: r["traceparent"] for r in await self._fetch("traceparents_of", list(seqs))
        }

    async def execution_at(self, task_seq: int, fence: int) -> ExecutionRecord | None:
        found = await self._fetch("execution_at_fence", task_seq, fence)
        return convert.execution(found[0]) if found else None

    async def predecessors(self, seq: int) -> list[Predecessor]:
        return [Predecessor(r[0], Status(r[1])) for r in await self._fetch("predecessors_of", seq)]

    async def ordering_key_holder(self, ordering_key: str) -> str | None:
        holder: str | None = await self._fetchval("ordering_key_holder", ordering_key)
        return holder

    async def insert_workflow(self, workflow: WorkflowRecord, tasks: Sequence[NewTask]) -> bool:
        inserted = await self._transaction(
            lambda db: run(db, plans.insert_workflow(workflow, tasks))
        )
        if inserted:  # a workflow of 10,000 tasks is a bulk insert too
            self._statistics.inserted(len(tasks))
        return inserted

    async def get_workflow(
        self, workflow_id: str
    ) -> tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None:
        async def work(db: Db) -> Any:
            row = await db.fetchrow(q("get_workflow"), workflow_id)
            if row is None:
                return None
            tasks = [convert.task(r) for r in await db.fetch(q("workflow_tasks"), workflow_id)]
            edges = await db.fetch(q("edges_into"), [t.seq for t in tasks])
            return convert.workflow(row), tasks, [(e[0], e[1]) for e in edges]

        found: tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None
        found = await self._transaction(work)
        return found

    async def active_workflows(self, workflow_ids: Collection[str]) -> set[str]:
        return {r[0] for r in await self._fetch("active_workflows", list(workflow_ids))}

    async def propagate(self, now_ms: int, *, limit: int = 1000) -> Propagated:
        return await self._transaction(lambda db: run(db, propagation.propagate(now_ms, limit)))

    async def has_propagations(self, now_ms: int) -> bool:
        return bool(await self._fetchval("has_propagations", now_ms))

    async def cancel(self, seq: int, version: int, now_ms: int) -> bool:
        return await self._transaction(lambda db: run(db, attempts.cancel(seq, version, now_ms)))

    async def redrive(self, items: Sequence[tuple[int, int]], now_ms: int) -> list[bool]:
        return await self._transaction(lambda db: run(db, attempts.redrive(items, now_ms)))

    async def set_priority(self, seq: int, version: int, priority: int) -> bool:
        return await self._transaction(
            lambda db: run(db, attempts.set_priority(seq, version, priority))
        )

    async def list_tasks(
        self, where: TaskFilter, *, before_seq: int | None, limit: int
    ) -> list[TaskRecord]:
        async def work(db: Db) -> list[asyncpg.Record]:
            params: list[Any] = []

            def bind(value: Any) -> str:
                params.append(value)
                return f"${len(params)}"

            bounds = {
                "before_seq": before_seq,
                "seqs_from": await first_seq_created(db, where.created_after_ms),
                "seqs_below": await first_seq_created(db, where.created_before_ms),
            }
            labels = {c: getattr(where, c) for c in LABELS if getattr(where, c) is not None}
            unlabelled = replace(where, task_type=None, queue=None)
            clauses = " AND ".join(task_clauses(unlabelled, **bounds, bind=bind))
            if not labels:
                sql = f"SELECT {TASK_COLUMNS} FROM tasks WHERE {clauses} ORDER BY seq DESC"
            else:  # a walk down the labels' index, each task read by its key
                labelled = [f"{c} = {bind(v)}" for c, v in labels.items()]
                labelled += seq_clauses(**bounds, bind=bind)
                sql = (
                    f"SELECT {TASK_COLUMNS} FROM tasks JOIN (SELECT seq AS labelled"
                    f" FROM task_labels WHERE {' AND '.join(labelled)}) AS l"
                    f" ON tasks.seq = l.labelled WHERE {clauses} ORDER BY l.labelled DESC"
                )
            return list(await db.fetch(f"{sql} LIMIT {bind(limit)}", *params))

        return [convert.task(r) for r in await self._transaction(work)]

    async def list_workflows(self, *, before: Page | None, limit: int) -> list[WorkflowSummary]:
        async def work(db: Db) -> list[WorkflowSummary]:
            found = await db.fetch(q("list_workflows"), *below(before), limit)
            ids = [w[0] for w in found]
            counts = await db.fetch(q("workflow_counts"), ids) if found else []
            return convert.workflow_summaries(found, counts)

        return await self._transaction(work)

    async def history(
        self, *, task_seq: int | None, schedule_id: str | None, before_id: int | None, limit: int
    ) -> list[ExecutionRecord]:
        before = before_id or NEVER
        if schedule_id is not None:
            found = await self._fetch("history_of_schedule", schedule_id, before, limit)
        else:
            found = await self._fetch("history_of_task", task_seq, before, limit)
        return [convert.execution(r) for r in found]

    async def count_by_status(self) -> dict[Status, int]:
        return {Status(r[0]): r[1] for r in await self._fetch("count_by_status")}

    async def roll_task_ranges(self, *, period_ms: int) -> int:
        return int(await self._fetchval("roll_task_ranges", period_ms))

    async def drop_expired_task_ranges(self, *, retention_ms: int) -> int:
        return int(await self._fetchval("drop_expired_task_ranges", retention_ms))
