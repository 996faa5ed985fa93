"""Idempotency keys: a client's retry never schedules a task twice."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tickwheel.engine.node import Node

LATER = {"type": "delayed", "delay_seconds": 3600}


def _task(key: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_type": "noop",
        "payload": {"n": 1},
        "schedule": LATER,
        "idempotency_key": key,
        **extra,
    }


async def _tasks(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = (await api.get("/api/tasks", params={"limit": 500})).json()[
        "tasks"
    ]
    return tasks


async def test_the_same_key_and_request_returns_the_original_task(api: httpx.AsyncClient) -> None:
    first = await api.post("/api/tasks", json=_task("order-1"))
    again = await api.post("/api/tasks", json=_task("order-1"))
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["task_id"] == first.json()["task_id"]
    assert again.json()["duplicate"] is True
    assert again.json()["due_time"] == first.json()["due_time"]
    stored = await _tasks(api)
    assert len(stored) == 1
    assert stored[0]["idempotency_key"] == "order-1"


async def test_the_same_key_with_a_different_request_is_409(api: httpx.AsyncClient) -> None:
    first = (await api.post("/api/tasks", json=_task("order-2"))).json()
    response = await api.post("/api/tasks", json=_task("order-2", payload={"n": 2}))
    assert response.status_code == 409
    assert "order-2" in response.json()["message"]
    assert first["task_id"] in response.json()["message"]
    assert len(await _tasks(api)) == 1


async def test_keys_are_per_task_type(api: httpx.AsyncClient) -> None:
    a = (await api.post("/api/tasks", json=_task("k"))).json()
    b = await api.post(
        "/api/tasks",
        json={
            "task_type": "http",
            "payload": {"url": "http://127.0.0.1:9/x"},
            "schedule": LATER,
            "idempotency_key": "k",
        },
    )
    assert b.status_code == 201
    assert b.json()["task_id"] != a["task_id"]


async def test_the_key_may_come_as_a_header(api: httpx.AsyncClient) -> None:
    body = {"task_type": "noop", "schedule": LATER}
    first = await api.post("/api/tasks", json=body, headers={"Idempotency-Key": "hdr-1"})
    again = await api.post("/api/tasks", json=body, headers={"Idempotency-Key": "hdr-1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["task_id"] == first.json()["task_id"]


async def test_concurrent_duplicates_make_exactly_one_task(api: httpx.AsyncClient) -> None:
    answers = await asyncio.gather(*(api.post("/api/tasks", json=_task("race")) for _ in range(50)))
    assert sorted(a.status_code for a in answers) == [200] * 49 + [201]
    assert len({a.json()["task_id"] for a in answers}) == 1
    assert len(await _tasks(api)) == 1


async def test_a_key_is_free_again_after_its_window(api: httpx.AsyncClient, node: Node) -> None:
    node.service.idempotency_window_ms = 200
    first = (await api.post("/api/tasks", json=_task("short"))).json()
    await asyncio.sleep(0.3)
    again = await api.post("/api/tasks", json=_task("short", payload={"n": 3}))
    assert again.status_code == 201
    assert again.json()["task_id"] != first["task_id"]


async def test_batches_deduplicate_and_a_conflict_rejects_the_whole_batch(
    api: httpx.AsyncClient,
) -> None:
    original = (await api.post("/api/tasks", json=_task("b-1"))).json()
    batch = [_task("b-1"), _task("b-2"), _task("b-2"), _task("b-3")]
    answer = await api.post("/api/tasks/batch", json={"tasks": batch})
    assert answer.status_code == 201
    tasks = answer.json()["tasks"]
    assert tasks[0]["task_id"] == original["task_id"] and tasks[0]["duplicate"]
    assert tasks[1]["task_id"] == tasks[2]["task_id"]  # one task for a key repeated in a batch
    assert len(await _tasks(api)) == 3
    conflicting = [_task("c-1"), _task("b-3", payload={"other": True})]
    refused = await api.post("/api/tasks/batch", json={"tasks": conflicting})
    assert refused.status_code == 409
    assert refused.json()["message"].startswith("tasks.1:")
    assert len(await _tasks(api)) == 3  # c-1 was not stored either


async def test_a_conflict_in_one_request_does_not_fail_others_sharing_its_commit(
    api: httpx.AsyncClient,
) -> None:
    await api.post("/api/tasks", json=_task("shared"))
    answers = await asyncio.gather(
        api.post("/api/tasks", json=_task("shared", payload={"n": 9})),
        *(api.post("/api/tasks", json=_task(f"other-{i}")) for i in range(20)),
    )
    assert answers[0].status_code == 409
    assert [a.status_code for a in answers[1:]] == [201] * 20
    assert len(await _tasks(api)) == 21


async def test_idempotency_key_is_bounded(api: httpx.AsyncClient) -> None:
    response = await api.post("/api/tasks", json=_task("x" * 257))
    assert response.status_code == 422
    assert response.json()["field"] == "idempotency_key"


def _cron(key: str, expression: str = "@daily") -> dict[str, Any]:
    schedule = {"type": "cron", "cron_expression": expression}
    return {"task_type": "noop", "schedule": schedule, "idempotency_key": key}


async def test_a_repeated_cron_submission_returns_the_original_schedule(
    api: httpx.AsyncClient, node: Node
) -> None:
    first = await api.post("/api/tasks", json=_cron("nightly-report"))
    again = await api.post("/api/tasks", json=_cron("nightly-report"))
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["task_id"] == first.json()["task_id"]
    assert again.json()["schedule_id"] == first.json()["schedule_id"]
    assert again.json()["duplicate"] is True
    assert again.json()["due_time"] == first.json()["due_time"]
    assert len(await _tasks(api)) == 1  # one schedule, one pending instance
    assert await node.store.get_schedule(first.json()["task_id"]) is not None


async def test_a_cron_key_reused_for_another_request_is_409_and_stores_nothing(
    api: httpx.AsyncClient,
) -> None:
    first = (await api.post("/api/tasks", json=_cron("hourly"))).json()
    response = await api.post("/api/tasks", json=_cron("hourly", "@hourly"))
    assert response.status_code == 409
    assert response.json()["error"] == "idempotency_conflict"
    assert response.json()["task_id"] == first["task_id"]
    one_off = await api.post("/api/tasks", json={**_task("hourly"), "task_type": "noop"})
    assert one_off.status_code == 409  # a one-off is a different request
    assert len(await _tasks(api)) == 1
