"""The worker protocol over HTTP: claim with a long poll, heartbeat, complete, fail, fenced."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tickwheel.api.app import create_app
from tickwheel.config import Settings
from tickwheel.node import Node


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A node without its own worker: the HTTP worker is the only one."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'wp.db'}", lease_seconds=1)
    async with Node(settings=settings, run_worker=False) as node:
        transport = httpx.ASGITransport(app=create_app(node, manage_node=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client


async def _claim(api: httpx.AsyncClient, **body: Any) -> list[dict[str, Any]]:
    response = await api.post("/api/worker/claim", json={"worker_id": "w1", **body})
    assert response.status_code == 200, response.text
    tasks: list[dict[str, Any]] = response.json()["tasks"]
    return tasks


async def _submit(api: httpx.AsyncClient, **body: Any) -> str:
    task_id: str = (await api.post("/api/tasks", json={"task_type": "resize", **body})).json()[
        "task_id"
    ]
    return task_id


async def test_claim_heartbeat_complete(api: httpx.AsyncClient) -> None:
    task_id = await _submit(api, payload={"w": 10})
    (task,) = await _claim(api, wait_seconds=5)
    assert task["task_id"] == task_id
    assert task["payload"] == {"w": 10}
    assert task["attempt"] == 1
    assert task["idempotency_key"] == task_id
    fence = task["fence"]
    beat = await api.post(f"/api/worker/tasks/{task_id}/heartbeat", json={"fence": fence})
    assert beat.status_code == 200
    done = await api.post(f"/api/worker/tasks/{task_id}/complete", json={"fence": fence})
    assert done.json()["status"] == "succeeded"
    shown = (await api.get(f"/api/tasks/{task_id}")).json()
    assert shown["status"] == "succeeded"
    assert shown["worker_id"] == "w1"


async def test_a_long_poll_returns_when_a_task_becomes_due(api: httpx.AsyncClient) -> None:
    started = time.monotonic()
    waiting = asyncio.create_task(_claim(api, wait_seconds=10))
    await asyncio.sleep(0.2)
    task_id = await _submit(api)
    (task,) = await waiting
    assert task["task_id"] == task_id
    assert time.monotonic() - started < 5
    assert await _claim(api, wait_seconds=0.2) == []  # empty after the wait


async def test_failure_is_retried_then_fails_for_good(api: httpx.AsyncClient) -> None:
    task_id = await _submit(
        api, max_retries=1, retry_backoff={"base_seconds": 0.05, "max_seconds": 0.1}
    )
    (first,) = await _claim(api, wait_seconds=5)
    retry = await api.post(
        f"/api/worker/tasks/{task_id}/fail", json={"fence": first["fence"], "error": "disk full"}
    )
    assert retry.json()["status"] == "pending" and retry.json()["retry_at"]
    (second,) = await _claim(api, wait_seconds=5)
    assert second["attempt"] == 2
    final = await api.post(
        f"/api/worker/tasks/{task_id}/fail",
        json={"fence": second["fence"], "error": "disk still full"},
    )
    assert final.json()["status"] == "failed"
    shown = (await api.get(f"/api/tasks/{task_id}")).json()
    assert shown["last_error"] == "disk still full"


async def test_a_non_retryable_failure_fails_at_once(api: httpx.AsyncClient) -> None:
    task_id = await _submit(api)
    (task,) = await _claim(api, wait_seconds=5)
    body = {"fence": task["fence"], "error": "bad input", "retryable": False}
    answer = await api.post(f"/api/worker/tasks/{task_id}/fail", json=body)
    assert answer.json()["status"] == "failed"


async def test_a_paused_worker_is_fenced_out(api: httpx.AsyncClient) -> None:
    """Worker A stalls past its lease; the reaper retries the task and worker B takes it.
    A's heartbeat and result are refused with 409 and change nothing."""
    task_id = await _submit(api, retry_backoff={"base_seconds": 0.05, "max_seconds": 0.1})
    (stale,) = await _claim(api, wait_seconds=5)
    second: list[dict[str, Any]] = []
    for _ in range(100):  # the 1 s lease runs out, the reaper puts it back
        second = await _claim(api, wait_seconds=0.2)
        if second:
            break
    (fresh,) = second
    assert fresh["fence"] > stale["fence"]
    for action, extra in (("heartbeat", {}), ("complete", {}), ("fail", {"error": "late"})):
        refused = await api.post(
            f"/api/worker/tasks/{task_id}/{action}", json={"fence": stale["fence"], **extra}
        )
        assert refused.status_code == 409, action
        assert refused.json()["error"] == "stale_fence", action
    shown = (await api.get(f"/api/tasks/{task_id}")).json()
    assert shown["status"] == "running" and shown["fence"] == fresh["fence"]
    done = await api.post(f"/api/worker/tasks/{task_id}/complete", json={"fence": fresh["fence"]})
    assert done.status_code == 200


async def test_a_repeated_result_gets_the_first_answer(api: httpx.AsyncClient) -> None:
    """A worker that lost the answer to its result sends it again, even twice at once."""
    done_id, failed_id = await _submit(api), await _submit(api, max_retries=3)
    claimed: dict[str, dict[str, Any]] = {}
    while len(claimed) < 2:
        claimed |= {t["task_id"]: t for t in await _claim(api, max_tasks=2, wait_seconds=5)}
    complete = f"/api/worker/tasks/{done_id}/complete"
    fence = {"fence": claimed[done_id]["fence"]}
    answers = await asyncio.gather(*(api.post(complete, json=fence) for _ in range(3)))
    assert [a.status_code for a in answers] == [200] * 3
    assert {a.json()["status"] for a in answers} == {"succeeded"}

    fail = f"/api/worker/tasks/{failed_id}/fail"
    body = {"fence": claimed[failed_id]["fence"], "error": "boom"}
    first, again = [await api.post(fail, json=body) for _ in range(2)]
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json() == first.json()
    assert first.json()["status"] == "pending"
    history = (await api.get(f"/api/tasks/{failed_id}/history")).json()["executions"]
    assert len(history) == 1  # the repeat recorded nothing

    other = await api.post(f"/api/worker/tasks/{failed_id}/complete", json={"fence": body["fence"]})
    assert other.status_code == 409  # it failed; completing it now is not a repeat


async def test_a_repeated_result_gets_the_first_answer_after_the_task_moved_on(
    either_api: httpx.AsyncClient,
) -> None:
    """A fail sent again once its retry was claimed by another attempt (and a complete
    sent again once the task was re-driven) is still a repeat: the first answer again."""
    api = either_api
    backoff = {"base_seconds": 0.05, "max_seconds": 0.1}
    task_id = await _submit(api, max_retries=1, retry_backoff=backoff)
    (first,) = await _claim(api, wait_seconds=5)
    fail = f"/api/worker/tasks/{task_id}/fail"
    body = {"fence": first["fence"], "error": "boom"}
    answer = await api.post(fail, json=body)
    assert answer.status_code == 200 and answer.json()["status"] == "pending"
    (second,) = await _claim(api, wait_seconds=5)  # the retry runs: the task moved on

    again = await api.post(fail, json=body)
    assert again.status_code == 200, again.text
    assert again.json() == answer.json()
    complete = f"/api/worker/tasks/{task_id}/complete"
    assert (await api.post(complete, json={"fence": first["fence"]})).status_code == 409

    done = await api.post(complete, json={"fence": second["fence"]})
    assert done.json()["status"] == "succeeded"
    assert (await api.post(fail, json=body)).json() == answer.json()  # ended for good since
    history = (await api.get(f"/api/tasks/{task_id}/history")).json()["executions"]
    assert [e["outcome"] for e in history] == ["succeeded", "failed"]
    assert history[1]["retry_at"] == answer.json()["retry_at"]


async def test_a_running_attempt_that_is_cancelled_is_in_the_history(
    either_api: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    api = either_api
    task_id = await _submit(api)
    (task,) = await _claim(api, wait_seconds=5)
    assert (await api.delete(f"/api/tasks/{task_id}")).status_code == 200

    with caplog.at_level(logging.INFO, logger="tickwheel.engine.remote"):
        late = await api.post(
            f"/api/worker/tasks/{task_id}/complete", json={"fence": task["fence"]}
        )
    assert late.status_code == 409
    (refused,) = [r for r in caplog.records if r.name == "tickwheel.engine.remote"]
    assert (refused.levelno, getattr(refused, "task_id", None)) == (logging.WARNING, task_id)
    assert f"fence {task['fence']} of task {task_id} is stale" in refused.getMessage()
    (row,) = (await api.get(f"/api/tasks/{task_id}/history")).json()["executions"]
    assert (row["outcome"], row["fence"], row["worker_id"]) == ("cancelled", task["fence"], "w1")
    assert row["error"] == "cancelled while it ran"


async def test_claim_by_task_type_leaves_other_types_queued(api: httpx.AsyncClient) -> None:
    other = await _submit(api)
    mine = (await api.post("/api/tasks", json={"task_type": "thumbnail"})).json()["task_id"]
    (task,) = await _claim(api, task_types=["thumbnail"], wait_seconds=5)
    assert task["task_id"] == mine
    (rest,) = await _claim(api, wait_seconds=5)
    assert rest["task_id"] == other


async def test_a_claim_by_task_type_leaves_other_types_in_their_place(
    api: httpx.AsyncClient,
) -> None:
    """Items of other types ahead of the worker's keep their order (issue 15): they
    are not sent to the tail of the queue, and a worker taking one task at a time
    still finds its own behind them."""
    ahead = [await _submit(api) for _ in range(3)]
    mine = (await api.post("/api/tasks", json={"task_type": "thumbnail"})).json()["task_id"]
    behind = await _submit(api)
    (task,) = await _claim(api, task_types=["thumbnail"], max_tasks=1, wait_seconds=5)
    assert task["task_id"] == mine
    rest = [await _claim(api, max_tasks=1, wait_seconds=5) for _ in range(4)]
    assert [t["task_id"] for (t,) in rest] == [*ahead, behind]


async def test_protocol_input_is_validated(api: httpx.AsyncClient) -> None:
    for body in (
        {"worker_id": "w", "max_tasks": 0},
        {"worker_id": "w", "max_tasks": 1000},
        {"worker_id": "w", "wait_seconds": 31},
        {"worker_id": ""},
        {"worker_id": "w", "queues": ["bad name"]},
        {"worker_id": "w", "queues": ["default", "tickwheel"]},  # the engine's own
    ):
        assert (await api.post("/api/worker/claim", json=body)).status_code == 422, body
    unknown = await api.post("/api/worker/tasks/nope/complete", json={"fence": 1})
    assert unknown.status_code == 404


async def test_a_batch_claim_lists_its_tasks_highest_priority_first(api: httpx.AsyncClient) -> None:
    by_priority = {p: await _submit(api, priority=p) for p in (1, 5, 3, 9, 7)}
    deadline = time.monotonic() + 10
    while (await api.get("/api/queues")).json()["depth"].get("default", 0) < len(by_priority):
        assert time.monotonic() < deadline, "the tasks never became ready"
        await asyncio.sleep(0.05)
    claimed = await _claim(api, max_tasks=5, wait_seconds=1)
    assert [t["task_id"] for t in claimed] == [by_priority[p] for p in (9, 7, 5, 3, 1)]
