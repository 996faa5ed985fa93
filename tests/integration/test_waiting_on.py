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
from tickwheel.config import Role, Settings
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
    assert batch.json()["warnings"] == [warning]  # each said once for the batch
    assert [t["warnings"] for t in batch.json()["tasks"]] == [[warning], [warning], []]
    workflow = await either_api.post("/api/workflows", json=GREET_THEN_NOOP)
    assert workflow.status_code == 201 and workflow.json()["warnings"] == [warning]

    # A worker over HTTP says on its claim that it runs greet: read within a second.
    claim = {"worker_id": "remote", "queues": ["default"], "task_types": ["greet"]}
    assert (await either_api.post("/api/worker/claim", json=claim)).status_code == 200
    await asyncio.sleep(1.1)
    assert (await submit(either_api, {"task_type": "greet"}))["warnings"] == []
    assert (await either_api.post("/api/tasks", json={"task_type": "wave"})).json()["warnings"]


GREET_THEN_NOOP = {
    "name": "greeting",
    "tasks": [
        {"name": "noop", "task_type": "noop", "dependencies": ["greet"]},
        {"name": "greet", "task_type": "greet"},
    ],
}


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
    wave = {**GREET_THEN_NOOP, "tasks": [{"name": "greet", "task_type": "wave"}]}
    refused = await strict_api.post("/api/workflows", json=wave)
    assert refused.status_code == 422 and "tasks.0.task_type" in refused.text
    listed = await strict_api.get("/api/tasks")
    assert len(listed.json()["tasks"]) == 1  # the refused batch and workflow stored nothing
    workflow = await strict_api.post("/api/workflows", json=GREET_THEN_NOOP)
    assert workflow.status_code == 201 and workflow.json()["warnings"] == []


# -- waiting_on, one cause at a time ------------------------------------------------

LATER = {"type": "delayed", "delay_seconds": 3600}


async def waiting_on(api: httpx.AsyncClient, task_id: object) -> list[dict[str, object]] | None:
    answer = await api.get(f"/api/tasks/{task_id}")
    assert answer.status_code == 200, answer.text
    found: list[dict[str, object]] | None = answer.json()["waiting_on"]
    return found


def reasons(waits: list[dict[str, object]] | None) -> list[object]:
    return [w["reason"] for w in waits or ()]


async def test_a_blocked_task_names_its_predecessors_not_yet_succeeded(
    either_api: httpx.AsyncClient,
) -> None:
    later = await submit(either_api, {"task_type": "noop", "schedule": LATER})
    done = await submit(either_api, {"task_type": "noop"})
    claim = {"worker_id": "remote", "queues": ["default"], "wait_seconds": 5}
    (task,) = (await either_api.post("/api/worker/claim", json=claim)).json()["tasks"]
    ended = await either_api.post(
        f"/api/worker/tasks/{task['task_id']}/complete", json={"fence": task["fence"]}
    )
    assert ended.status_code == 200 and task["task_id"] == done["task_id"]
    blocked = await submit(
        either_api, {"task_type": "noop", "dependencies": [done["task_id"], later["task_id"]]}
    )

    waits = await waiting_on(either_api, blocked["task_id"])
    assert reasons(waits)[0] == "predecessors"
    assert waits is not None and waits[0]["tasks"] == [
        {"task_id": later["task_id"], "status": "pending"}  # the one that succeeded is not
    ]
    assert later["task_id"] in str(waits[0]["message"])


async def test_a_task_not_due_yet_says_when_it_is(either_api: httpx.AsyncClient) -> None:
    later = await submit(either_api, {"task_type": "noop", "schedule": LATER})
    waits = await waiting_on(either_api, later["task_id"])
    assert reasons(waits) == ["due", "no_worker"]
    assert waits is not None and waits[0]["due_time"] == later["due_time"]
    no_worker = waits[1]
    assert (no_worker["queue"], no_worker["task_type"]) == ("default", "noop")


async def test_a_ready_task_counts_the_tasks_ahead_of_it(either_api: httpx.AsyncClient) -> None:
    ids = [(await submit(either_api, {"task_type": "noop"}))["task_id"] for _ in range(3)]
    waits = await waiting_on(either_api, ids[-1])
    assert reasons(waits) == ["queued", "no_worker"]
    assert waits is not None and (waits[0]["queue"], waits[0]["ahead"]) == ("default", 2)


async def test_a_task_behind_its_ordering_key_names_the_holder(
    either_api: httpx.AsyncClient,
) -> None:
    holder = await submit(either_api, {"task_type": "noop", "ordering_key": "account-7"})
    claim = {"worker_id": "remote", "queues": ["default"], "wait_seconds": 5, "max_tasks": 1}
    claimed = (await either_api.post("/api/worker/claim", json=claim)).json()["tasks"]
    assert [t["task_id"] for t in claimed] == [holder["task_id"]]
    assert await waiting_on(either_api, holder["task_id"]) is None  # running
    behind = await submit(either_api, {"task_type": "noop", "ordering_key": "account-7"})
    # Pulled, its claim refused: it waits its turn (the holder keeps the key through its
    # retries, should its lease lapse meanwhile).
    claim = {**claim, "wait_seconds": 0.2, "max_tasks": 10}
    for _ in range(50):
        await either_api.post("/api/worker/claim", json=claim)
        found = (await either_api.get(f"/api/tasks/{behind['task_id']}")).json()
        if found["status"] == "waiting":
            break
    assert found["status"] == "waiting"

    waits = await waiting_on(either_api, behind["task_id"])
    assert waits is not None and waits[0]["reason"] == "ordering_key"
    assert (waits[0]["key"], waits[0]["holder"]) == ("account-7", holder["task_id"])
    assert holder["task_id"] in str(waits[0]["message"])


async def test_a_paused_schedule_waits_on_its_resume(either_api: httpx.AsyncClient) -> None:
    cron = {"task_type": "noop", "schedule": {"type": "cron", "cron_expression": "@daily"}}
    schedule_id = (await submit(either_api, cron))["task_id"]
    assert reasons(await waiting_on(either_api, schedule_id)) == ["due", "no_worker"]
    assert (await either_api.post(f"/api/tasks/{schedule_id}/pause")).status_code == 200

    waits = await waiting_on(either_api, schedule_id)
    assert reasons(waits) == ["schedule_paused"]
    assert waits is not None and waits[0]["schedule_id"] == schedule_id


async def test_no_live_worker_for_the_queue_and_an_ended_task_waits_on_nothing(
    strict_api: httpx.AsyncClient,
) -> None:
    elsewhere = {"task_type": "greet", "queue": "emails", "schedule": LATER}
    waits = await waiting_on(strict_api, (await submit(strict_api, elsewhere))["task_id"])
    assert reasons(waits) == ["due", "no_worker"]
    assert waits is not None and (waits[1]["queue"], waits[1]["task_type"]) == (
        "emails",
        "greet",
    )
    later = await submit(strict_api, {"task_type": "greet", "schedule": LATER})
    assert reasons(await waiting_on(strict_api, later["task_id"])) == ["due"]  # its worker runs

    done = await submit(strict_api, {"task_type": "greet"})
    for _ in range(200):
        task = (await strict_api.get(f"/api/tasks/{done['task_id']}")).json()
        if task["status"] == "succeeded":
            break
        await asyncio.sleep(0.05)
    assert (task["status"], task["waiting_on"]) == ("succeeded", None)


async def test_a_due_task_no_scheduler_releases_says_so(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'api-only.db'}")
    async with Node(settings=settings, roles=frozenset({Role.API})) as node:
        transport = httpx.ASGITransport(app=create_app(node, manage_node=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            soon = {"type": "delayed", "delay_seconds": 0.05}
            task = await submit(api, {"task_type": "noop", "schedule": soon})
            await asyncio.sleep(0.1)
            waits = await waiting_on(api, task["task_id"])
    assert reasons(waits) == ["no_scheduler", "no_worker"]
    assert waits is not None and isinstance(waits[0]["partition"], int)
