"""Fire-time previews through the API, on both stores: a stored schedule's next fire
times are the ones its scheduler stores, and a cron expression can be tried before it
is submitted; bad input is a 422 naming its field."""

from __future__ import annotations

from datetime import datetime

import httpx

NEW_YORK = "America/New_York"
WEEKLY_NOON = {
    "type": "cron",
    "cron_expression": "0 12 * * 0",
    "timezone": NEW_YORK,
    "jitter_seconds": 600,
}


async def test_a_schedule_previews_the_fire_times_its_scheduler_stores(
    either_api: httpx.AsyncClient,
) -> None:
    made = await either_api.post("/api/tasks", json={"task_type": "noop", "schedule": WEEKLY_NOON})
    assert made.status_code == 201, made.text
    schedule_id = made.json()["schedule_id"]

    answer = await either_api.get(f"/api/schedules/{schedule_id}/next", params={"count": 100})
    assert answer.status_code == 200, answer.text
    preview = answer.json()
    assert (preview["schedule_id"], preview["status"]) == (schedule_id, "active")
    times = [datetime.fromisoformat(f["fire_time"]) for f in preview["fire_times"]]
    assert len(times) == 100 and times == sorted(set(times))
    # The first is the due time of the instance the scheduler stored, jitter included.
    (listed,) = (await either_api.get("/api/schedules")).json()["schedules"]
    assert times[0] == datetime.fromisoformat(listed["next_fire_time"])
    # Two years of Sundays cross daylight-saving changes, told each time.
    changes = [f for f in preview["fire_times"] if f["clock_change"]]
    assert {f["clock_change"] for f in changes} == {"forward", "back"}
    assert all("clocks move" in f["note"] for f in changes)
    assert all(f["local_time"].endswith(("-04:00", "-05:00")) for f in preview["fire_times"])

    paused = await either_api.post(f"/api/tasks/{schedule_id}/pause")
    assert paused.status_code == 200, paused.text
    again = (await either_api.get(f"/api/schedules/{schedule_id}/next")).json()
    assert again["status"] == "paused" and len(again["fire_times"]) == 10


async def test_a_cron_expression_is_previewed_before_it_is_submitted(
    either_api: httpx.AsyncClient,
) -> None:
    answer = await either_api.get(
        "/api/cron/next",
        params={"cron_expression": "30 2 * * *", "timezone": NEW_YORK, "count": 400 // 4},
    )
    assert answer.status_code == 200, answer.text
    fire_times = answer.json()["fire_times"]
    assert len(fire_times) == 100 and answer.json()["schedule_id"] is None
    assert all(f["note"] is None or "clocks move" in f["note"] for f in fire_times)
    stored = await either_api.get("/api/tasks", params={"limit": 10})
    assert stored.json()["tasks"] == []  # a preview stores nothing


async def test_bad_previews_name_their_field(either_api: httpx.AsyncClient) -> None:
    cases = {
        "cron_expression": {"cron_expression": "61 * * * *"},
        "timezone": {"cron_expression": "@daily", "timezone": "Mars/Olympus"},
        "count": {"cron_expression": "@daily", "count": 101},
    }
    for field, params in cases.items():
        answer = await either_api.get("/api/cron/next", params=params)
        assert answer.status_code == 422, (field, answer.text)
        assert field in answer.text, (field, answer.text)
    missing = await either_api.get("/api/schedules/no-such-schedule/next")
    assert missing.status_code == 404 and "no-such-schedule" in missing.text
