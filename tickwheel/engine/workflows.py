"""Workflows: graphs of tasks submitted whole, whose tasks refer to each other by name.

A workflow is checked (names, references, cycles) and stored in one transaction; its
tasks then run like any others with dependencies. Its status is derived from theirs.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Protocol

from tickwheel.clock import Clock
from tickwheel.core.dag import InvalidGraph, ordered
from tickwheel.engine.reads import TaskView
from tickwheel.engine.submission import type_warning
from tickwheel.errors import IdempotencyConflict, InvalidBatch, InvalidRequest, TaskNotFound
from tickwheel.ids import new_id
from tickwheel.models import NewTask, Status, TaskRecord, WorkflowRecord
from tickwheel.storage.base import Store
from tickwheel.wire.requests import TaskRequest

MAX_EDGES = 100_000


@dataclass(frozen=True, slots=True)
class WorkflowNode:
    name: str
    request: TaskRequest  # its `dependencies` are names of other nodes


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    task: TaskView
    dependencies: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WorkflowView:
    record: WorkflowRecord
    status: str
    nodes: list[NodeView]
    duplicate: bool = False  # submitted again under its id: the workflow stored first
    warnings: tuple[str, ...] = ()  # what the submitter should know: accepted all the same

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(str(n.task.status) for n in self.nodes))


def _request_hash(name: str, nodes: Sequence[WorkflowNode]) -> str:
    parts = [name, [(n.name, asdict(n.request)) for n in nodes]]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def keyed_workflow_id(idempotency_key: str) -> str:
    """The id of the workflow submitted with this key: a repeat names the same one."""
    return "wf-" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:32]


def derived_status(statuses: Sequence[Status]) -> str:
    """running while any task may still run; then succeeded, failed or cancelled."""
    if any(not s.is_final for s in statuses):
        return "running"
    if all(s is Status.SUCCEEDED for s in statuses):
        return "succeeded"
    if any(s in (Status.FAILED, Status.UPSTREAM_FAILED) for s in statuses):
        return "failed"
    return "cancelled"


class WorkflowTasks(Protocol):
    """What workflows need of the task service: their tasks made, read and cancelled."""

    def new_task(
        self, request: TaskRequest, now_ms: int, task_id: str | None = None, *, push: bool = False
    ) -> NewTask: ...

    async def views(self, records: Sequence[TaskRecord]) -> list[TaskView]: ...

    async def check_task_types(
        self, task_types: Sequence[str]
    ) -> tuple[set[str], list[tuple[int, InvalidRequest]]]: ...

    async def cancel_record(self, record: TaskRecord, *, quiet: bool) -> bool: ...


class WorkflowService:
    def __init__(
        self,
        *,
        store: Store,
        tasks: WorkflowTasks,
        clock: Clock,
        on_committed: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self._tasks = tasks
        self._clock = clock
        self._on_committed = on_committed

    async def submit(
        self,
        name: str,
        nodes: Sequence[WorkflowNode],
        *,
        workflow_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> WorkflowView:
        """Check and store the whole graph, or nothing of it. Submitted again under the
        same `workflow_id`, nothing is stored and the answer is the workflow stored
        first. An `idempotency_key` names the workflow's id; the same key with a
        different workflow raises `IdempotencyConflict`."""
        request_hash = None
        if idempotency_key is not None:
            workflow_id = keyed_workflow_id(idempotency_key)
            request_hash = _request_hash(name, nodes)
        unregistered, refused = await self._tasks.check_task_types(
            [n.request.task_type for n in nodes]
        )
        if refused:
            raise InvalidBatch(refused)
        workflow = WorkflowRecord(workflow_id or new_id(), name, self._clock.now_ms(), request_hash)
        tasks = self._tasks_of(workflow, nodes)
        created = await self._store.insert_workflow(workflow, tasks)
        if created:
            self._on_committed()
        view = await self.get(workflow.workflow_id)
        if not created and view.record.request_hash != request_hash:
            raise IdempotencyConflict(
                f"idempotency_key {idempotency_key!r} was used for a different workflow"
                f" ({workflow.workflow_id}); use a new key for a new workflow",
                workflow.workflow_id,
            )
        warnings = tuple(type_warning(t) for t in sorted(unregistered))
        return replace(view, duplicate=not created, warnings=warnings)

    def check(self, name: str, nodes: Sequence[WorkflowNode]) -> None:
        """Raise what `submit` would for this workflow, storing nothing."""
        self._tasks_of(WorkflowRecord(new_id(), name, self._clock.now_ms()), nodes)

    def _tasks_of(self, workflow: WorkflowRecord, nodes: Sequence[WorkflowNode]) -> list[NewTask]:
        """The tasks to store, predecessors first; InvalidRequest or InvalidBatch naming
        what is wrong."""
        if not nodes:
            raise InvalidRequest("tasks", "a workflow has at least one task")
        index = _index_of(nodes)
        order = _order(nodes, index)
        ids = {n.name: new_id() for n in nodes}
        tasks, problems = [], []
        for node_name in order:
            node = nodes[index[node_name]]
            try:
                request = replace(node.request, dependencies=())
                task = self._tasks.new_task(request, workflow.created_ms, task_id=ids[node_name])
            except InvalidRequest as problem:
                problems.append((index[node_name], problem))
                continue
            tasks.append(_as_node(task, ids, node, workflow.workflow_id))
        if problems:
            raise InvalidBatch(sorted(problems, key=lambda p: p[0]))
        return tasks

    async def get(self, workflow_id: str) -> WorkflowView:
        found = await self._store.get_workflow(workflow_id)
        if found is None:
            raise TaskNotFound(f"no workflow has the id {workflow_id}")
        workflow, records, edges = found
        views = await self._tasks.views(records)
        name_of = {r.seq: r.node_name or r.task_id for r in records}
        waits: dict[int, list[str]] = {r.seq: [] for r in records}
        for predecessor, dependent in edges:
            waits[dependent].append(name_of.get(predecessor, str(predecessor)))
        nodes = [
            NodeView(name_of[r.seq], view, tuple(waits[r.seq]))
            for r, view in zip(records, views, strict=True)
        ]
        return WorkflowView(workflow, derived_status([v.status for v in views]), nodes)

    async def cancel(self, workflow_id: str) -> int:
        """Cancel every task not yet finished; return how many were cancelled."""
        found = await self._store.get_workflow(workflow_id)
        if found is None:
            raise TaskNotFound(f"no workflow has the id {workflow_id}")
        cancelled = 0
        for record in found[1]:  # predecessors first: their dependents follow anyway
            cancelled += await self._tasks.cancel_record(record, quiet=True)
        return cancelled


def _index_of(nodes: Sequence[WorkflowNode]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, node in enumerate(nodes):
        if node.name in index:
            raise InvalidRequest(f"tasks.{i}.name", f"{node.name!r} names two tasks")
        index[node.name] = i
    return index


def _order(nodes: Sequence[WorkflowNode], index: dict[str, int]) -> list[str]:
    edges = sum(len(n.request.dependencies) for n in nodes)
    if edges > MAX_EDGES:
        raise InvalidRequest("tasks", f"{edges} dependencies; at most {MAX_EDGES}")
    try:
        return ordered({n.name: n.request.dependencies for n in nodes})
    except InvalidGraph as bad:
        field = "tasks" if bad.node is None else f"tasks.{index[bad.node]}.dependencies"
        raise InvalidRequest(field, bad.reason) from None


def _as_node(task: NewTask, ids: dict[str, str], node: WorkflowNode, workflow_id: str) -> NewTask:
    return replace(
        task,
        predecessors=tuple(ids[d] for d in dict.fromkeys(node.request.dependencies)),
        workflow_id=workflow_id,
        node_name=node.name,
    )
