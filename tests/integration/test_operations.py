"""Dead letters and operations: re-drive, priority, pause and resume."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App


@pytest.fixture
def handlers() -> App:
    app = App()
    broken = {"on": True}
    app.state = broken  # type: ignore[attr-defined]

    @app.task("flaky", max_retries=0)
    async def flaky(ctx: TaskContext, payload: Any) -> None:
        if broken["on"]:
            raise RuntimeError("downstream is down")

    return app


async def _wait(api: httpx.AsyncClient, task_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        task: dict[str, Any] = (await api.get(f"/api/tasks/{task_id}")).json()
        if task["status"] == status or time.monotonic() > deadline:
            assert task["status"] == status, task
            return task
        await asyncio.sleep(0.02)


async def test_failed_tasks_are_listed_and_redriven(api: httpx.AsyncClient, handlers: App) -> None:
    ids = [
        (await api.post("/api/tasks", json={"task_type": "flaky"})).json()["task_id"]
        for _ in range(3)
    ]
    for task_id in ids:
        await _wait(api, task_id, "failed")
    dead = (await api.get("/api/tasks", params={"status": "failed"})).json()["tasks"]
    assert sorted(t["task_id"] for t in dead) == sorted(ids)

    handlers.state["on"] = False  # type: ignore[attr-defined]
    answer = (await api.post("/api/tasks/redrive", json={"task_ids": [*ids[:2], "nope"]})).json()
    assert sorted(answer["redriven"]) == sorted(ids[:2])
    assert answer["skipped"] == [{"task_id": "nope", "reason": "no task has this id"}]
    for task_id in ids[:2]:
        task = await _wait(api, task_id, "succeeded")
        assert task["attempts"] == 1  # reset, then one attempt
    assert (await api.get(f"/api/tasks/{ids[2]}")).json()["status"] == "failed"
    again = (await api.post("/api/tasks/redrive", json={"task_ids": [ids[0]]})).json()
    assert again["redriven"] == [] and "succeeded" in again["skipped"][0]["reason"]


async def test_priority_of_a_pending_task_changes(api: httpx.AsyncClient) -> None:
    body = {"task_type": "noop", "schedule": {"type": "delayed", "delay_seconds": 3600}}
    task_id = (await api.post("/api/tasks", json=body)).json()["task_id"]
    changed = await api.patch(f"/api/tasks/{task_id}", json={"priority": 50})
    assert changed.status_code == 200
    assert changed.json()["priority"] == 50
    assert (await api.patch(f"/api/tasks/{task_id}", json={"priority": 500})).status_code == 422
    assert (await api.patch("/api/tasks/nope", json={"priority": 1})).status_code == 404


async def test_priority_of_a_finished_task_is_409(api: httpx.AsyncClient) -> None:
    task_id = (await api.post("/api/tasks", json={"task_type": "noop"})).json()["task_id"]
    await _wait(api, task_id, "succeeded")
    assert (await api.patch(f"/api/tasks/{task_id}", json={"priority": 5})).status_code == 409


async def test_pause_and_resume_a_recurring_task(api: httpx.AsyncClient) -> None:
    body = {"task_type": "noop", "schedule": {"type": "cron", "cron_expression": "*/5 * * * *"}}
    schedule_id = (await api.post("/api/tasks", json=body)).json()["task_id"]
    first = (await api.get(f"/api/tasks/{schedule_id}")).json()["current_instance_id"]

    paused = await api.post(f"/api/tasks/{schedule_id}/pause")
    assert paused.status_code == 200
    assert paused.json()["schedule"]["schedule_status"] == "paused"
    assert paused.json()["status"] == "paused"  # not its cancelled instance's "cancelled"
    assert (await api.get(f"/api/tasks/{schedule_id}")).json()["status"] == "paused"
    assert (await api.get(f"/api/tasks/{first}")).json()["status"] == "cancelled"
    assert (await api.post(f"/api/tasks/{schedule_id}/pause")).status_code == 200  # idempotent

    resumed = (await api.post(f"/api/tasks/{schedule_id}/resume")).json()
    assert resumed["schedule"]["schedule_status"] == "active"
    assert resumed["status"] == "pending"
    assert resumed["current_instance_id"] != first
    again = await api.post(f"/api/tasks/{schedule_id}/resume")  # idempotent
    assert again.status_code == 200
    assert again.json()["current_instance_id"] == resumed["current_instance_id"]
    assert (await api.delete(f"/api/tasks/{schedule_id}")).status_code == 200
    assert (await api.post(f"/api/tasks/{schedule_id}/resume")).status_code == 409
    assert (await api.post("/api/tasks/nope/pause")).status_code == 404
