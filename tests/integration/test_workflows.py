"""Workflows over the API: graphs submitted whole, checked, run in order, cancelled."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from tickwheel import App, PermanentFailure, TaskContext


@pytest.fixture
def handlers() -> App:
    app = App()

    @app.task("step")
    async def step(ctx: TaskContext, payload: Any) -> None:
        await asyncio.sleep(0.01)

    @app.task("boom", max_retries=0)
    async def boom(ctx: TaskContext, payload: Any) -> None:
        raise PermanentFailure("it broke")

    return app


def task(name: str, *after: str, task_type: str = "step", **extra: Any) -> dict[str, Any]:
    return {"name": name, "task_type": task_type, "dependencies": list(after), **extra}


async def wait_done(api: httpx.AsyncClient, workflow_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        shown: dict[str, Any] = (await api.get(f"/api/workflows/{workflow_id}")).json()
        if shown["status"] != "running" or time.monotonic() > deadline:
            return shown
        await asyncio.sleep(0.02)


async def _count_tasks(api: httpx.AsyncClient) -> int:
    return len((await api.get("/api/tasks", params={"limit": 500})).json()["tasks"])


async def test_a_diamond_workflow_runs_in_order(api: httpx.AsyncClient) -> None:
    body = {
        "name": "diamond",
        "tasks": [task("d", "b", "c"), task("b", "a"), task("c", "a"), task("a")],
    }
    answer = await api.post("/api/workflows", json=body)
    assert answer.status_code == 201, answer.text
    submitted = answer.json()
    assert submitted["status"] == "running"
    states = {t["name"]: t["status"] for t in submitted["tasks"]}
    assert states["d"] == "blocked" and states["a"] in ("pending", "ready", "running")

    done = await wait_done(api, submitted["workflow_id"])
    assert done["status"] == "succeeded"
    assert done["counts"] == {"succeeded": 4}
    by_name = {t["name"]: t for t in done["tasks"]}
    assert sorted(by_name["d"]["dependencies"]) == ["b", "c"]
    assert by_name["d"]["started_at"] >= max(
        by_name["b"]["completed_at"], by_name["c"]["completed_at"]
    )
    one = (await api.get(f"/api/tasks/{by_name['b']['task_id']}")).json()
    assert one["status"] == "succeeded"


async def test_a_failure_fails_the_workflow_and_its_downstream(api: httpx.AsyncClient) -> None:
    body = {
        "tasks": [
            task("extract"),
            task("transform", "extract", task_type="boom"),
            task("load", "transform"),
            task("report", "load"),
            task("audit", "extract"),
        ]
    }
    workflow_id = (await api.post("/api/workflows", json=body)).json()["workflow_id"]
    done = await wait_done(api, workflow_id)
    states = {t["name"]: t["status"] for t in done["tasks"]}
    assert done["status"] == "failed"
    assert states == {
        "extract": "succeeded",
        "transform": "failed",
        "load": "upstream_failed",
        "report": "upstream_failed",
        "audit": "succeeded",
    }


async def test_cancelling_a_workflow_cancels_what_has_not_finished(
    api: httpx.AsyncClient,
) -> None:
    later = {"type": "delayed", "delay_seconds": 3600}
    body = {"tasks": [task("first", schedule=later), task("second", "first")]}
    workflow_id = (await api.post("/api/workflows", json=body)).json()["workflow_id"]
    answer = await api.delete(f"/api/workflows/{workflow_id}")
    assert answer.json() == {"ok": True, "cancelled": 2}
    done = await wait_done(api, workflow_id)
    assert done["status"] == "cancelled"
    assert {t["status"] for t in done["tasks"]} == {"cancelled"}
    assert (await api.delete(f"/api/workflows/{workflow_id}")).json()["cancelled"] == 0


@pytest.mark.parametrize(
    ("tasks", "field", "words"),
    [
        ([task("a", "b"), task("b", "c"), task("c", "a")], "tasks", "cycle"),
        ([task("a"), task("b", "ghost")], "tasks.1.dependencies", "ghost"),
        ([task("a", "a")], "tasks.0.dependencies", "itself"),
        ([task("a"), task("a")], "tasks.1.name", "two tasks"),
        ([], "tasks", "at least 1"),
        ([task("a", task_type="bad type")], "tasks.0.task_type", ""),
        ([task("a"), task("b", "a", payload="x" * 300_000)], "tasks.1.payload", ""),
    ],
)
async def test_a_workflow_that_cannot_run_is_refused_with_nothing_stored(
    api: httpx.AsyncClient, tasks: list[dict[str, Any]], field: str, words: str
) -> None:
    answer = await api.post("/api/workflows", json={"tasks": tasks})
    assert answer.status_code in (413, 422), answer.text
    assert answer.json()["field"] == field
    assert words in answer.json()["message"]
    assert await _count_tasks(api) == 0


async def test_an_unknown_workflow_is_404(api: httpx.AsyncClient) -> None:
    assert (await api.get("/api/workflows/nope")).status_code == 404
    assert (await api.delete("/api/workflows/nope")).status_code == 404
