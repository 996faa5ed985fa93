"""API + engine + SQLite in real time, with Python handlers in the same process."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tickwheel.node import Node
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App


async def _wait_status(
    api: httpx.AsyncClient, task_id: str, status: str, timeout: float = 10
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task: dict[str, Any] = (await api.get(f"/api/tasks/{task_id}")).json()
        if task["status"] == status or time.monotonic() > deadline:
            assert task["status"] == status, task
            return task
        await asyncio.sleep(0.02)


@pytest.fixture
def handlers() -> App:
    app = App()
    seen: list[tuple[str, int, Any]] = []
    app.state = seen  # type: ignore[attr-defined]

    @app.task("record")
    async def record(ctx: TaskContext, payload: Any) -> None:
        seen.append((ctx.task_id, ctx.attempt, payload))

    @app.task("blocking")
    def blocking(ctx: TaskContext, payload: Any) -> None:
        time.sleep(0.05)  # a plain function runs in the thread pool
        seen.append((ctx.task_id, ctx.attempt, payload))

    @app.task("sleepy", timeout_seconds=0.2, max_retries=0)
    async def sleepy(ctx: TaskContext, payload: Any) -> None:
        await asyncio.sleep(5)

    @app.task("hangs")
    async def hangs(ctx: TaskContext, payload: Any) -> None:
        await asyncio.sleep(30)

    return app


async def test_immediate_task_runs_with_its_payload(api: httpx.AsyncClient, handlers: App) -> None:
    submitted = await api.post("/api/tasks", json={"task_type": "record", "payload": {"n": 1}})
    assert submitted.status_code == 201
    body = submitted.json()
    assert body["status"] == "pending"
    task = await _wait_status(api, body["task_id"], "succeeded")
    assert task["attempts"] == 1
    assert task["started_at"] and task["completed_at"] and task["triggered_at"]
    assert handlers.state == [(body["task_id"], 1, {"n": 1})]  # type: ignore[attr-defined]


async def test_delayed_task_fires_at_its_due_time_not_before(api: httpx.AsyncClient) -> None:
    due = datetime.now(UTC) + timedelta(seconds=1.3)
    body = {"task_type": "blocking", "schedule": {"type": "delayed", "due_time": due.isoformat()}}
    task_id = (await api.post("/api/tasks", json=body)).json()["task_id"]
    assert (await api.get(f"/api/tasks/{task_id}")).json()["status"] == "pending"
    task = await _wait_status(api, task_id, "succeeded")
    triggered = datetime.fromisoformat(task["triggered_at"])
    assert triggered >= due
    stored_due = datetime.fromisoformat(task["due_time"])
    assert timedelta(0) <= stored_due - due < timedelta(milliseconds=1)  # rounded up to the ms


async def test_timeout_fails_the_attempt(api: httpx.AsyncClient) -> None:
    task_id = (await api.post("/api/tasks", json={"task_type": "sleepy"})).json()["task_id"]
    task = await _wait_status(api, task_id, "failed")
    assert "timed out" in task["last_error"]
    history = (await api.get(f"/api/tasks/{task_id}/history")).json()["executions"]
    assert [e["outcome"] for e in history] == ["timed_out"]


async def test_unregistered_type_fails_for_good(api: httpx.AsyncClient) -> None:
    task_id = (await api.post("/api/tasks", json={"task_type": "nobody.handles"})).json()["task_id"]
    task = await _wait_status(api, task_id, "failed")
    assert "no handler" in task["last_error"]
    assert task["attempts"] == 1


async def test_cancelling_a_running_task_stops_it_and_refuses_its_result(
    api: httpx.AsyncClient, node: Node
) -> None:
    task_id = (await api.post("/api/tasks", json={"task_type": "hangs"})).json()["task_id"]
    await _wait_status(api, task_id, "running")
    assert (await api.delete(f"/api/tasks/{task_id}")).json()["cancelled_instances"] == 1
    # The next heartbeat finds the fence stale and stops the handler.
    deadline = time.monotonic() + 5
    while node.worker.inflight and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert node.worker.inflight == 0
    assert (await api.get(f"/api/tasks/{task_id}")).json()["status"] == "cancelled"


async def test_cron_task_keeps_one_future_instance_and_cancel_disables_it(
    api: httpx.AsyncClient, node: Node
) -> None:
    body = {"task_type": "record", "schedule": {"type": "cron", "cron_expression": "* * * * *"}}
    answer = (await api.post("/api/tasks", json=body)).json()
    schedule_id = answer["task_id"]
    assert answer["schedule_id"] == schedule_id
    due = datetime.fromisoformat(answer["due_time"])
    assert due.second == 0 and due > datetime.now(UTC)
    task = (await api.get(f"/api/tasks/{schedule_id}")).json()
    assert task["schedule"]["cron_expression"] == "* * * * *"
    assert task["status"] == "pending"
    instances = (await api.get("/api/tasks", params={"task_type": "record"})).json()["tasks"]
    assert len(instances) == 1
    cancelled = (await api.delete(f"/api/tasks/{schedule_id}")).json()
    assert cancelled == {"ok": True, "cancelled_instances": 1}
    assert (await api.get(f"/api/tasks/{schedule_id}")).json()["status"] == "cancelled"


async def test_a_limit_key_is_shown_with_no_limit_holding_the_task(
    api: httpx.AsyncClient,
) -> None:
    later = {"type": "delayed", "delay_seconds": 3600}
    single = await api.post(
        "/api/tasks", json={"task_type": "record", "schedule": later, "limit_key": "tenant-1"}
    )
    assert single.status_code == 201, single.text
    batch = await api.post(
        "/api/tasks/batch",
        json={
            "tasks": [
                {"task_type": "record", "schedule": later, "limit_key": "tenant-2"},
                {"task_type": "record", "schedule": later},
            ]
        },
    )
    assert batch.status_code == 201, batch.text
    flow = await api.post(
        "/api/workflows",
        json={
            "tasks": [
                {"name": "a", "task_type": "record", "schedule": later, "limit_key": "k" * 200},
                {"name": "b", "task_type": "record", "dependencies": ["a"]},
            ]
        },
    )
    assert flow.status_code == 201, flow.text
    nodes = {n["name"]: n for n in flow.json()["tasks"]}
    assert (nodes["a"]["limit_key"], nodes["b"]["limit_key"]) == ("k" * 200, None)
    expected = {
        single.json()["task_id"]: "tenant-1",
        batch.json()["tasks"][0]["task_id"]: "tenant-2",
        batch.json()["tasks"][1]["task_id"]: None,
        nodes["a"]["task_id"]: "k" * 200,
        nodes["b"]["task_id"]: None,
    }
    for task_id, limit_key in expected.items():
        shown = (await api.get(f"/api/tasks/{task_id}")).json()
        assert (shown["limit_key"], shown["held_by"]) == (limit_key, None), shown
    listed = (await api.get("/api/tasks", params={"limit": 500})).json()["tasks"]
    assert {t["task_id"]: t["limit_key"] for t in listed} == expected


async def test_list_pages_through_every_task_once(api: httpx.AsyncClient) -> None:
    ids = set()
    for _ in range(7):
        body = {"task_type": "record", "schedule": {"type": "delayed", "delay_seconds": 3600}}
        ids.add((await api.post("/api/tasks", json=body)).json()["task_id"])
    seen: list[str] = []
    token = None
    while True:
        params: dict[str, Any] = {"limit": 3, "status": "pending"}
        if token:
            params["next_token"] = token
        page = (await api.get("/api/tasks", params=params)).json()
        seen.extend(t["task_id"] for t in page["tasks"])
        token = page["next_token"]
        if not token:
            break
    assert sorted(seen) == sorted(ids)
    assert len(seen) == len(set(seen))


async def test_health_reports_partitions_and_wheel(api: httpx.AsyncClient) -> None:
    health = (await api.get("/healthz")).json()
    assert health["ok"] is True
    assert health["partitions_owned"] == 16
