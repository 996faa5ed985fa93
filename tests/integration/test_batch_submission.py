"""POST /api/tasks/batch: many tasks, one commit, all or nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tickwheel.node import Node


async def _count(api: httpx.AsyncClient) -> int:
    total, token = 0, None
    while True:
        params: dict[str, Any] = {"limit": 500}
        if token:
            params["next_token"] = token
        page = (await api.get("/api/tasks", params=params)).json()
        total += len(page["tasks"])
        token = page["next_token"]
        if not token:
            return total


async def test_a_batch_is_stored_whole_and_answered_in_order(api: httpx.AsyncClient) -> None:
    tasks = [
        {
            "task_type": "noop",
            "payload": {"n": i},
            "schedule": {"type": "delayed", "delay_seconds": 3600},
        }
        for i in range(1000)
    ]
    response = await api.post("/api/tasks/batch", json={"tasks": tasks})
    assert response.status_code == 201, response.text
    answered = response.json()["tasks"]
    assert len(answered) == 1000
    assert len({t["task_id"] for t in answered}) == 1000
    first = await api.get(f"/api/tasks/{answered[0]['task_id']}")
    last = await api.get(f"/api/tasks/{answered[-1]['task_id']}")
    assert first.json()["payload"] == {"n": 0}
    assert last.json()["payload"] == {"n": 999}
    assert await _count(api) == 1000


async def test_the_largest_batch_is_accepted_and_one_more_is_refused(
    api: httpx.AsyncClient,
) -> None:
    noop = {"task_type": "noop", "schedule": {"type": "delayed", "delay_seconds": 3600}}
    too_many = await api.post("/api/tasks/batch", json={"tasks": [noop] * 10_001})
    assert too_many.status_code == 422
    assert too_many.json()["field"] == "tasks"
    assert await _count(api) == 0
    largest = await api.post("/api/tasks/batch", json={"tasks": [noop] * 10_000})
    assert largest.status_code == 201
    assert len(largest.json()["tasks"]) == 10_000


async def test_invalid_entries_are_each_named_and_nothing_is_stored(api: httpx.AsyncClient) -> None:
    good = {"task_type": "noop"}
    tasks = [
        good,
        {"task_type": "noop", "schedule": {"type": "delayed", "delay_seconds": -1}},
        good,
        {"task_type": "http", "payload": {"url": "ftp://x"}},
        {"task_type": "noop", "schedule": {"type": "cron", "cron_expression": "@daily"}},
    ]
    response = await api.post("/api/tasks/batch", json={"tasks": tasks})
    assert response.status_code == 422
    fields = [p["field"] for p in response.json()["problems"]]
    assert fields == ["tasks.1.schedule.delay_seconds"]  # schema errors are found first
    tasks[1] = good
    response = await api.post("/api/tasks/batch", json={"tasks": tasks})
    assert response.status_code == 422
    fields = [p["field"] for p in response.json()["problems"]]
    assert fields == ["tasks.3.payload.url", "tasks.4.schedule.type"]
    assert await _count(api) == 0


async def test_unknown_dependencies_are_each_named_and_nothing_is_stored(
    either_api: httpx.AsyncClient,
) -> None:
    api, later = either_api, {"type": "delayed", "delay_seconds": 3600}
    known = (await api.post("/api/tasks", json={"task_type": "noop", "schedule": later})).json()
    tasks: list[dict[str, Any]] = [
        {"task_type": "noop", "dependencies": [known["task_id"]]},
        {"task_type": "noop", "dependencies": ["no-such-task-1"]},
        {"task_type": "noop", "schedule": later},
        {"task_type": "noop", "dependencies": [known["task_id"], "no-such-task-3"]},
    ]
    response = await api.post("/api/tasks/batch", json={"tasks": tasks})
    assert response.status_code == 422, response.text
    answer = response.json()
    assert answer["field"] == "tasks.1.dependencies"
    problems = [(p["field"], p["message"]) for p in answer["problems"]]
    assert [field for field, _ in problems] == ["tasks.1.dependencies", "tasks.3.dependencies"]
    assert "no-such-task-1" in problems[0][1] and "no-such-task-3" in problems[1][1]
    assert await _count(api) == 1


async def test_empty_and_malformed_batches_are_refused(api: httpx.AsyncClient) -> None:
    for body in ({"tasks": []}, {}, {"tasks": "noop"}, {"tasks": [{"task_type": "noop"}], "x": 1}):
        response = await api.post("/api/tasks/batch", json=body)
        assert response.status_code == 422, body
    assert await _count(api) == 0


async def test_concurrent_batches_each_commit_whole(api: httpx.AsyncClient, node: Node) -> None:
    def batch(tag: int) -> dict[str, Any]:
        return {
            "tasks": [
                {
                    "task_type": "noop",
                    "payload": tag,
                    "schedule": {"type": "delayed", "delay_seconds": 60},
                }
                for _ in range(300)
            ]
        }

    answers = await asyncio.gather(*(api.post("/api/tasks/batch", json=batch(t)) for t in range(8)))
    assert [a.status_code for a in answers] == [201] * 8
    assert await _count(api) == 2400


async def test_batch_tasks_run(api: httpx.AsyncClient) -> None:
    response = await api.post("/api/tasks/batch", json={"tasks": [{"task_type": "noop"}] * 50})
    ids = [t["task_id"] for t in response.json()["tasks"]]
    for _ in range(200):
        statuses = {(await api.get(f"/api/tasks/{i}")).json()["status"] for i in ids[-3:]}
        if statuses == {"succeeded"}:
            break
        await asyncio.sleep(0.05)
    assert statuses == {"succeeded"}
