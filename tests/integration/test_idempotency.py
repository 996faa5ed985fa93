"""Idempotency keys: a client's retry never schedules a task twice."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from typing import Any

import httpx
import pytest

from tickwheel.ids import new_id
from tickwheel.node import Node

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
    node.service.submissions.idempotency_window_ms = 200
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


# -- task ids the client chose ------------------------------------------------


def _named(task_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "task_type": "noop",
        "payload": {"n": 1},
        "schedule": LATER,
        **extra,
    }


def _key_rows(node: Node) -> int:
    path = node.settings.database_url.removeprefix("sqlite:///")
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM idempotency_keys").fetchone()[0])


async def test_a_chosen_task_id_dedupes_a_retried_batch_without_a_key_row(
    api: httpx.AsyncClient, node: Node
) -> None:
    batch = {"tasks": [_named(new_id()) for _ in range(20)]}
    first = await api.post("/api/tasks/batch", json=batch)
    again = await api.post("/api/tasks/batch", json=batch)
    assert (first.status_code, again.status_code) == (201, 201)
    ids = [t["task_id"] for t in batch["tasks"]]
    assert [t["task_id"] for t in first.json()["tasks"]] == ids
    assert [t["task_id"] for t in again.json()["tasks"]] == ids
    assert all(t["duplicate"] for t in again.json()["tasks"])
    assert not any(t["duplicate"] for t in first.json()["tasks"])
    assert len(await _tasks(api)) == 20
    assert _key_rows(node) == 0  # the id is the dedupe: no second row per task


async def test_a_chosen_task_id_with_another_request_is_409_and_stores_nothing(
    api: httpx.AsyncClient,
) -> None:
    taken = new_id()
    single = await api.post("/api/tasks", json=_named(taken))
    repeat = await api.post("/api/tasks", json=_named(taken))
    assert (single.status_code, repeat.status_code) == (201, 200)
    assert repeat.headers["Idempotent-Replayed"] == "true"
    other = await api.post("/api/tasks", json=_named(taken, payload={"n": 2}))
    assert other.status_code == 409
    assert other.json()["error"] == "idempotency_conflict" and taken in other.json()["message"]
    batch = {"tasks": [_named(new_id()), _named(taken, priority=3)]}
    answer = await api.post("/api/tasks/batch", json=batch)
    assert answer.status_code == 409 and "tasks.1" in answer.json()["message"]
    assert [t["task_id"] for t in await _tasks(api)] == [taken]


@pytest.mark.parametrize(
    "task_id", ["not-a-uuid", "01A23D0F-5791-742C-9D21-FE23199D3721", "", "x" * 5000]
)
async def test_a_chosen_task_id_must_be_a_canonical_uuid(
    api: httpx.AsyncClient, task_id: str
) -> None:
    answer = await api.post("/api/tasks", json=_named(task_id))
    assert answer.status_code == 422
    assert answer.json()["field"] == "task_id"
    assert await _tasks(api) == []


async def test_a_cron_task_or_a_workflow_task_takes_no_chosen_id(api: httpx.AsyncClient) -> None:
    cron = _named(new_id(), schedule={"type": "cron", "cron_expression": "@daily"})
    assert (await api.post("/api/tasks", json=cron)).status_code == 422
    flow = {"tasks": [{"name": "a", "task_type": "noop", "task_id": new_id()}]}
    answer = await api.post("/api/workflows", json=flow)
    assert answer.status_code == 422 and "task_id" in answer.json()["field"]
