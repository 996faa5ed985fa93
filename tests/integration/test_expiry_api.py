"""Expiry through the API, on both stores: a task not started by its expiry ends
`expired` without running, shown and counted like every status; bad input is a 422
naming its field, and stores nothing."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tickwheel.models import MAX_EXPIRES_AFTER_SECONDS


async def until_status(api: httpx.AsyncClient, task_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        task = (await api.get(f"/api/tasks/{task_id}")).json()
        if task["status"] == status or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.1)


async def test_a_task_not_started_in_time_ends_expired_and_is_counted(
    either_api: httpx.AsyncClient,
) -> None:
    # No worker runs here: the task can only wait, and then expire.
    made = await either_api.post(
        "/api/tasks", json={"task_type": "noop", "expires_after_seconds": 0.5}
    )
    assert made.status_code == 201, made.text
    task_id = made.json()["task_id"]
    stored = (await either_api.get(f"/api/tasks/{task_id}")).json()
    due, expires = (datetime.fromisoformat(stored[k]) for k in ("due_time", "expires_at"))
    assert expires - due == timedelta(seconds=0.5)

    task = await until_status(either_api, task_id, "expired")
    assert task["status"] == "expired", task
    assert task["attempts"] == 0 and task["started_at"] is None
    assert datetime.fromisoformat(task["completed_at"]) >= expires
    listed = (await either_api.get("/api/tasks", params={"status": "expired"})).json()
    assert [t["task_id"] for t in listed["tasks"]] == [task_id]
    history = (await either_api.get(f"/api/tasks/{task_id}/history")).json()
    assert history["executions"] == []  # it never ran


async def test_a_cron_schedule_gives_each_instance_its_expiry(
    either_api: httpx.AsyncClient,
) -> None:
    body = {
        "task_type": "noop",
        "schedule": {"type": "cron", "cron_expression": "0 3 * * *"},
        "expires_after_seconds": 3600,
    }
    made = await either_api.post("/api/tasks", json=body)
    assert made.status_code == 201, made.text
    task = (await either_api.get(f"/api/tasks/{made.json()['schedule_id']}")).json()
    assert task["schedule"]["expires_after_seconds"] == 3600
    due, expires = (datetime.fromisoformat(task[k]) for k in ("due_time", "expires_at"))
    assert expires - due == timedelta(hours=1)


def _soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"expires_after_seconds": 0}, "expires_after_seconds"),
        ({"expires_after_seconds": -1.5}, "expires_after_seconds"),
        ({"expires_after_seconds": MAX_EXPIRES_AFTER_SECONDS + 1}, "expires_after_seconds"),
        ({"expires_after_seconds": "soon"}, "expires_after_seconds"),
        ({"expires_at": "2026-13-01T00:00:00Z"}, "expires_at"),
        ({"expires_at": "2030-01-01T00:00:00"}, "expires_at"),  # no time zone
        ({"expires_at": "9999-01-01T00:00:00Z"}, "expires_at"),  # past the year 9000
        ({"expires_at": _soon(-60)}, "expires_at"),  # before its due time (now)
        (
            {"expires_at": _soon(60), "schedule": {"type": "delayed", "delay_seconds": 120}},
            "expires_at",
        ),
        ({"expires_at": _soon(60), "expires_after_seconds": 5}, "expires_at"),
        (
            {"expires_at": _soon(60), "schedule": {"type": "cron", "cron_expression": "@daily"}},
            "expires_at",
        ),
    ],
)
async def test_a_bad_expiry_is_a_422_naming_its_field_and_stores_nothing(
    either_api: httpx.AsyncClient, extra: dict[str, Any], field: str
) -> None:
    answer = await either_api.post("/api/tasks", json={"task_type": "noop", **extra})
    assert answer.status_code == 422, answer.text
    assert field in answer.text
    batch = await either_api.post(
        "/api/tasks/batch", json={"tasks": [{"task_type": "noop", **extra}]}
    )
    assert batch.status_code == 422, batch.text
    if extra.get("schedule", {}).get("type") != "cron":  # a batch refuses cron tasks first
        assert field in batch.text
    assert (await either_api.get("/api/tasks")).json()["tasks"] == []
