"""The SQLite store's task roles: submission, reads, workflows, dependencies,
operations, listing and retention. Writes run the plans of `storage/plans/`; reads
are named queries."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

from tickwheel.models import ExecutionRecord, NewTask, Status, TaskRecord, WorkflowRecord
from tickwheel.storage import rows as convert
from tickwheel.storage.base import (
    Held,
    Page,
    Predecessor,
    Propagated,
    Pruned,
    TaskFilter,
    WorkflowSummary,
)
from tickwheel.storage.listing import task_clauses
from tickwheel.storage.plans import attempts, propagation
from tickwheel.storage.plans import inserts as plans
from tickwheel.storage.sqlite.base import SqliteBase, below, first_seq_created
from tickwheel.storage.sqlite.queries import NEVER, TASK_COLUMNS, as_json, q
from tickwheel.storage.sqlite.retention import delete_ended
from tickwheel.storage.sqlite.steps import planned


class SqliteTasks(SqliteBase):
    async def insert_tasks(self, tasks: Sequence[NewTask]) -> list[int]:
        return [held.seq for held in await self.insert_tasks_with_holders(tasks)]

    async def insert_tasks_with_holders(self, tasks: Sequence[NewTask]) -> list[Held]:
        return await self._writer.transaction(planned(plans.insert_tasks, tasks))

    async def get_task(self, task_id: str) -> TaskRecord | None:
        row = await self._reader.run(lambda db: db.execute(q("get_task"), (task_id,)).fetchone())
        return convert.task(row) if row else None

    async def get_tasks(self, seqs: Collection[int]) -> list[TaskRecord]:
        arg = as_json(list(seqs))
        rows = await self._reader.run(lambda db: db.execute(q("get_tasks"), (arg,)).fetchall())
        return [convert.task(r) for r in rows]

    async def traceparents_of(self, seqs: Collection[int]) -> dict[int, str]:
        arg = as_json(list(seqs))
        rows = await self._reader.run(
            lambda db: db.execute(q("traceparents_of"), (arg,)).fetchall()
        )
        return dict(rows)

    async def execution_at(self, task_seq: int, fence: int) -> ExecutionRecord | None:
        params = {"task_seq": task_seq, "fence": fence}
        found = await self._reader.run(
            lambda db: db.execute(q("execution_at_fence"), params).fetchone()
        )
        return convert.execution(found) if found else None

    async def predecessors(self, seq: int) -> list[Predecessor]:
        rows = await self._reader.run(
            lambda db: db.execute(q("predecessors_of"), (seq,)).fetchall()
        )
        return [Predecessor(r[0], Status(r[1])) for r in rows]

    async def ordering_key_holder(self, ordering_key: str) -> str | None:
        row = await self._reader.run(
            lambda db: db.execute(q("ordering_key_holder"), (ordering_key,)).fetchone()
        )
        return row[0] if row else None

    async def insert_workflow(self, workflow: WorkflowRecord, tasks: Sequence[NewTask]) -> bool:
        return await self._writer.transaction(planned(plans.insert_workflow, workflow, tasks))

    async def get_workflow(
        self, workflow_id: str
    ) -> tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None:
        def work(db: sqlite3.Connection) -> Any:
            row = db.execute(q("get_workflow"), (workflow_id,)).fetchone()
            if row is None:
                return None
            tasks = [convert.task(r) for r in db.execute(q("workflow_tasks"), (workflow_id,))]
            seqs = as_json([t.seq for t in tasks])
            edges = [tuple(e) for e in db.execute(q("edges_into"), (seqs,))]
            return convert.workflow(row), tasks, edges

        found: tuple[WorkflowRecord, list[TaskRecord], list[tuple[int, int]]] | None
        found = await self._reader.run(work)
        return found

    async def active_workflows(self, workflow_ids: Collection[str]) -> set[str]:
        ids = as_json(sorted(workflow_ids))
        rows = await self._reader.run(
            lambda db: db.execute(q("active_workflows"), (ids,)).fetchall()
        )
        return {r[0] for r in rows}

    async def propagate(self, now_ms: int, *, limit: int = 1000) -> Propagated:
        return await self._writer.transaction(
            planned(propagation.propagate, now_ms, limit), acknowledged=False
        )

    async def has_propagations(self, now_ms: int) -> bool:
        row = await self._reader.run(
            lambda db: db.execute(q("has_propagations"), (now_ms,)).fetchone()
        )
        return bool(row[0])

    async def cancel(self, seq: int, version: int, now_ms: int) -> bool:
        return await self._writer.transaction(planned(attempts.cancel, seq, version, now_ms))

    async def redrive(self, items: Sequence[tuple[int, int]], now_ms: int) -> list[bool]:
        return await self._writer.transaction(planned(attempts.redrive, items, now_ms))

    async def set_priority(self, seq: int, version: int, priority: int) -> bool:
        return await self._writer.transaction(
            planned(attempts.set_priority, seq, version, priority)
        )

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
                seqs_from=first_seq_created(db, where.created_after_ms),
                seqs_below=first_seq_created(db, where.created_before_ms),
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
            params = {**below(before), "limit": limit}
            found = db.execute(q("list_workflows"), params).fetchall()
            ids = as_json([w[0] for w in found])
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

    async def count_by_status(self) -> dict[Status, int]:
        rows = await self._reader.run(lambda db: db.execute(q("count_by_status")).fetchall())
        return {Status(status): count for status, count in rows}

    async def delete_ended_tasks(
        self, *, ended_before_ms: int, after_seq: int, batch: int
    ) -> Pruned:
        return await self._writer.transaction(
            lambda db: delete_ended(db, ended_before_ms, after_seq, batch), acknowledged=False
        )
