"""Why a task is not running: `waiting_on` on `GET /api/tasks/{id}`, one test per cause,
the stored status in the submit answer, and the warnings (or, strict, the 422) for a
task type no live worker has registered."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tickwheel.api.app import create_app
from tickwheel.config import Settings
from tickwheel.node import Node
from tickwheel.worker.registry import App


async def submit(api: httpx.AsyncClient, body: dict[str, object]) -> dict[str, object]:
    answer = await api.post("/api/tasks", json=body)
    assert answer.status_code == 201, answer.text
    found: dict[str, object] = answer.json()
    return found


async def test_the_submit_answer_shows_the_stored_status(either_api: httpx.AsyncClient) -> None:
    later = {"type": "delayed", "delay_seconds": 3600}
    first = await submit(either_api, {"task_type": "noop", "schedule": later})
    blocked = await submit(either_api, {"task_type": "noop", "dependencies": [first["task_id"]]})
    assert (first["status"], blocked["status"]) == ("pending", "blocked")

    batch = await either_api.post(
        "/api/tasks/batch",
        json={"tasks": [{"task_type": "noop", "dependencies": [first["task_id"]]}]},
    )
    assert [t["status"] for t in batch.json()["tasks"]] == ["blocked"]


# -- a task type that no live worker has registered ------------------------------------


async def test_a_type_no_live_worker_registered_is_accepted_with_a_warning(
    either_api: httpx.AsyncClient,
) -> None:
    greet = await either_api.post("/api/tasks", json={"task_type": "greet"})
    assert greet.status_code == 201
    (warning,) = greet.json()["warnings"]
    assert "'greet'" in warning
    noop = await submit(either_api, {"task_type": "noop"})  # a built-in: never warned of
    assert noop["warnings"] == []
    batch = await either_api.post(
        "/api/tasks/batch",
        json={"tasks": [{"task_type": "greet"}, {"task_type": "greet"}, {"task_type": "noop"}]},
    )
    assert batch.status_code == 201
    assert batch.json()["warnings"] == [warning]  # said once for the batch

    # A worker over HTTP says on its claim that it runs greet: read within a second.
    claim = {"worker_id": "remote", "queues": ["default"], "task_types": ["greet"]}
    assert (await either_api.post("/api/worker/claim", json=claim)).status_code == 200
    await asyncio.sleep(1.1)
    assert (await submit(either_api, {"task_type": "greet"}))["warnings"] == []
    assert (await either_api.post("/api/tasks", json={"task_type": "wave"})).json()["warnings"]


@pytest.fixture
async def strict_api(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """An embedded node refusing unregistered types, whose own App runs greet."""
    app = App()
    app.task("greet")(lambda ctx, payload: None)
    url = f"sqlite:///{tmp_path / 'strict.db'}"
    settings = Settings(database_url=url, strict_task_types=True)
    async with Node(settings=settings, app=app) as node:
        transport = httpx.ASGITransport(app=create_app(node, manage_node=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client


async def test_strict_task_types_refuses_a_type_no_live_worker_registered(
    strict_api: httpx.AsyncClient,
) -> None:
    # At once, before this node's worker first reported: it knows its own App's types.
    assert (await submit(strict_api, {"task_type": "greet"}))["warnings"] == []
    refused = await strict_api.post("/api/tasks", json={"task_type": "wave"})
    assert refused.status_code == 422
    assert refused.json()["field"] == "task_type" and "'wave'" in refused.json()["message"]
    cron = {"task_type": "wave", "schedule": {"type": "cron", "cron_expression": "@daily"}}
    assert (await strict_api.post("/api/tasks", json=cron)).status_code == 422

    batch = await strict_api.post(
        "/api/tasks/batch", json={"tasks": [{"task_type": "greet"}, {"task_type": "wave"}]}
    )
    assert batch.status_code == 422
    assert "tasks.1.task_type" in batch.text and "'wave'" in batch.text
    listed = await strict_api.get("/api/tasks")
    assert len(listed.json()["tasks"]) == 1  # the refused batch stored nothing
