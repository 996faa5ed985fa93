"""Why a task is not running: `waiting_on` on `GET /api/tasks/{id}`, one test per cause,
the stored status in the submit answer, and the warnings (or, strict, the 422) for a
task type no live worker has registered."""

from __future__ import annotations

import httpx


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
