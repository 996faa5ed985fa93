"""Recurring workflows: a cron schedule whose every fire time launches a whole workflow."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tickwheel import App, PermanentFailure, Status, TaskContext, Workflow
from tickwheel.clock import SystemClock
from tickwheel.config import Settings
from tickwheel.node import Node
from tickwheel.storage.base import TaskFilter

MINUTE_MS = 60_000


class ShiftedClock(SystemClock):
    """The wall clock moved so that the next minute boundary is a second away, and
    able to jump ahead: a cron schedule of every minute fires twice in a test."""

    def __init__(self) -> None:
        real = super().now_ms()
        self.offset_ms = (real // MINUTE_MS + 1) * MINUTE_MS - 1_000 - real

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms

    def jump(self, seconds: float) -> None:
        self.offset_ms += round(seconds * 1000)


@pytest.fixture
def clock() -> ShiftedClock:
    return ShiftedClock()


@pytest.fixture
def ran() -> list[tuple[str, str]]:
    return []


@pytest.fixture
async def node(
    tmp_path: Path, clock: ShiftedClock, ran: list[tuple[str, str]]
) -> AsyncIterator[Node]:
    app = App()

    @app.task("step")
    async def step(ctx: TaskContext, payload: Any) -> None:
        ran.append((ctx.task_id, payload))

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'recurring.db'}")
    async with Node(settings=settings, app=app, clock=clock) as started:
        yield started


NIGHTLY = {
    "name": "nightly",
    "schedule": {"type": "cron", "cron_expression": "* * * * *"},
    "tasks": [
        {"name": "extract", "task_type": "step", "payload": "extract"},
        {"name": "load", "task_type": "step", "payload": "load", "dependencies": ["extract"]},
    ],
}


async def wait_for_json(api: httpx.AsyncClient, path: str, ready: Any, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        response = await api.get(path)
        if response.status_code == 200 and ready(body := response.json()):
            return body
        assert time.monotonic() < deadline, f"{path}: {response.text}"
        await asyncio.sleep(0.05)


async def launched(api: httpx.AsyncClient, schedule_id: str, runs: int) -> list[str]:
    """The ids of the schedule's instances that ran, which are their workflows' ids."""
    history = await wait_for_json(
        api,
        f"/api/tasks/{schedule_id}/history",
        lambda h: sum(e["outcome"] == "succeeded" for e in h["executions"]) >= runs,
    )
    return sorted({e["task_id"] for e in history["executions"] if e["outcome"] == "succeeded"})


async def test_each_fire_time_launches_the_whole_workflow(
    api: httpx.AsyncClient, clock: ShiftedClock, ran: list[tuple[str, str]]
) -> None:
    answer = await api.post("/api/workflows/recurring", json=NIGHTLY)
    assert answer.status_code == 201, answer.text
    schedule_id = answer.json()["schedule_id"]
    due = datetime.fromisoformat(answer.json()["due_time"])
    assert due.timestamp() * 1000 % MINUTE_MS == 0  # the next minute boundary

    (first,) = await launched(api, schedule_id, runs=1)
    workflow = await wait_for_json(
        api, f"/api/workflows/{first}", lambda w: w["status"] == "succeeded"
    )
    assert workflow["name"] == "nightly"
    assert [(t["name"], t["dependencies"]) for t in workflow["tasks"]] == [
        ("extract", []),
        ("load", ["extract"]),
    ]

    clock.jump(60)  # the next minute: a second run, a second workflow
    runs = await launched(api, schedule_id, runs=2)
    assert len(runs) == 2
    (second,) = set(runs) - {first}
    await wait_for_json(api, f"/api/workflows/{second}", lambda w: w["status"] == "succeeded")
    assert [payload for _, payload in ran] == ["extract", "load"] * 2

    paused = await api.post(f"/api/tasks/{schedule_id}/pause")
    assert paused.status_code == 200
    assert paused.json()["schedule"]["schedule_status"] == "paused"


async def test_a_repeated_launch_stores_one_workflow(node: Node) -> None:
    from tickwheel.engine.recurring import template_of
    from tickwheel.engine.workflows import WorkflowNode

    nodes = [WorkflowNode("only", node.request_of("step", "x", {}))]
    ctx = TaskContext("instance-1", "tickwheel.workflow", 1, datetime.now(UTC), 1, "w")
    await node.recurring(ctx, template_of("once", nodes))
    await node.recurring(ctx, template_of("once", nodes))  # the same instance again
    view = await node.workflows.get("instance-1")
    assert [n.name for n in view.nodes] == ["only"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schedule": {"type": "immediate"}}, "schedule"),
        (
            {"schedule": {"type": "cron", "cron_expression": "61 * * * *"}},
            "schedule.cron_expression",
        ),
        (
            {
                "tasks": [
                    {"name": "a", "task_type": "step", "dependencies": ["b"]},
                    {"name": "b", "task_type": "step", "dependencies": ["a"]},
                ]
            },
            "tasks",
        ),
        (
            {"tasks": [{"name": "a", "task_type": "step", "dependencies": ["nope"]}]},
            "tasks.0.dependencies",
        ),
        ({"tasks": []}, "tasks"),
    ],
)
async def test_a_bad_recurring_workflow_is_refused_and_nothing_stored(
    api: httpx.AsyncClient, change: dict[str, Any], field: str
) -> None:
    answer = await api.post("/api/workflows/recurring", json={**NIGHTLY, **change})
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"].startswith(field), answer.json()
    assert (await api.get("/api/tasks")).json()["tasks"] == []


async def test_a_repeated_key_returns_the_first_schedule(api: httpx.AsyncClient) -> None:
    keyed = {**NIGHTLY, "idempotency_key": "nightly-etl"}
    first = await api.post("/api/workflows/recurring", json=keyed)
    again = await api.post("/api/workflows/recurring", json=keyed)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["schedule_id"] == first.json()["schedule_id"]


async def test_the_embedded_node_takes_a_workflow_built_in_code(
    node: Node, ran: list[tuple[str, str]]
) -> None:
    flow = Workflow("built")
    a = flow.task("a", "step", "a")
    b = flow.task("b", "step", "b", after=[a])
    flow.task("c", "step", "c", after=[a, b])
    view = await node.submit_workflow(flow, idempotency_key="build-1")
    again = await node.submit_workflow(flow, idempotency_key="build-1")
    assert again.duplicate and again.record.workflow_id == view.record.workflow_id
    deadline = time.monotonic() + 20
    while (await node.workflows.get(view.record.workflow_id)).status != "succeeded":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert [payload for _, payload in ran] == ["a", "b", "c"]

    scheduled = await node.schedule_workflow(flow, "0 3 * * *", overlap_policy="skip")
    shown = await node.service.get(scheduled.task_id)
    assert shown.schedule is not None and shown.schedule.overlap_policy == "skip"


async def test_a_launch_that_no_longer_validates_fails_for_good(node: Node) -> None:
    ctx = TaskContext("instance-2", "tickwheel.workflow", 1, datetime.now(UTC), 1, "w")
    broken = {"name": "x", "tasks": [{"name": "a", "task_type": "step"}]}
    with pytest.raises(PermanentFailure, match="no longer validates"):
        await node.recurring(ctx, broken)


async def test_the_same_key_with_another_workflow_is_a_conflict(api: httpx.AsyncClient) -> None:
    body = {
        "name": "once",
        "idempotency_key": "order-7",
        "tasks": [{"name": "a", "task_type": "step"}],
    }
    first = await api.post("/api/workflows", json=body)
    again = await api.post("/api/workflows", json=body)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["workflow_id"] == first.json()["workflow_id"]
    other = await api.post("/api/workflows", json={**body, "name": "twice"})
    assert other.status_code == 409
    assert other.json()["error"] == "idempotency_conflict"
    assert other.json()["task_id"] == first.json()["workflow_id"]


async def test_overlap_skip_waits_for_the_whole_workflow(
    tmp_path: Path, clock: ShiftedClock
) -> None:
    release = asyncio.Event()
    app = App()

    @app.task("hold")
    async def hold(ctx: TaskContext, payload: Any) -> None:
        await release.wait()

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'overlap.db'}")
    async with Node(settings=settings, app=app, clock=clock) as node:
        flow = Workflow("long")
        flow.task("hold", "hold")
        schedule = await node.schedule_workflow(flow, "* * * * *", overlap_policy="skip")
        deadline = time.monotonic() + 20
        while node.engine_worker.completed < 1:  # the first run launched its workflow
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        clock.jump(60)  # the next fire time, while that workflow still runs
        instances = TaskFilter(schedule_id=schedule.task_id)
        while True:
            rows = await node.store.list_tasks(instances, before_seq=None, limit=10)
            skipped = [r for r in rows if r.status is Status.CANCELLED]
            if skipped:
                break
            assert time.monotonic() < deadline, [(r.status, r.last_error) for r in rows]
            await asyncio.sleep(0.05)
        assert "still running" in (skipped[0].last_error or "")
        assert node.engine_worker.completed == 1  # no second workflow
        release.set()


async def test_a_node_without_a_worker_still_launches_recurring_workflows(
    tmp_path: Path, clock: ShiftedClock
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'api-only.db'}")
    async with Node(settings=settings, clock=clock, run_worker=False) as node:
        flow = Workflow("launched")
        flow.task("only", "noop")
        schedule = await node.schedule_workflow(flow, "* * * * *")
        deadline = time.monotonic() + 20
        while node.engine_worker.completed < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        (execution,) = await node.service.history(schedule.task_id, before_id=None, limit=5)
        launched = await node.workflows.get(execution.task_id)
        assert [n.name for n in launched.nodes] == ["only"]
        assert launched.status == "running"  # no worker here for users' tasks
