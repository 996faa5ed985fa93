"""The dashboard's /api/stats and the Prometheus /metrics of an embedded node, in real time."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

import httpx
import pytest

from tickwheel.api.auth import new_token, token_hash
from tickwheel.errors import PermanentFailure
from tickwheel.models import Status
from tickwheel.node import Node
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App

EVENTS = ("triggered", "started", "succeeded", "failed", "retried")


@pytest.fixture
def handlers() -> App:
    app = App()

    @app.task("ok")
    async def ok(ctx: TaskContext, payload: Any) -> None:
        return None

    @app.task("flaky", max_retries=1, retry_backoff=(0.01, 0.01))
    async def flaky(ctx: TaskContext, payload: Any) -> None:
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")

    @app.task("bad")
    async def bad(ctx: TaskContext, payload: Any) -> None:
        raise PermanentFailure("never works")

    return app


async def stats_when(api: httpx.AsyncClient, done: Any, timeout: float = 20) -> dict[str, Any]:
    """/api/stats once `done(stats)` holds (counts are cached for a while)."""
    deadline = time.monotonic() + timeout
    while True:
        response = await api.get("/api/stats")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        if done(body):
            return body
        assert time.monotonic() < deadline, body["counts"]
        await asyncio.sleep(0.1)


async def test_stats_follow_tasks_through_their_lives(node: Node, api: httpx.AsyncClient) -> None:
    for task_type in ["ok"] * 5 + ["flaky", "bad"]:
        assert (await api.post("/api/tasks", json={"task_type": task_type})).status_code == 201

    body = await stats_when(
        api, lambda s: s["counts"]["succeeded"] == 6 and s["counts"]["failed"] == 1
    )

    assert set(body["counts"]) == {s.value for s in Status}
    series = body["series"]
    assert series["step_seconds"] == 1
    assert series["start_ms"] == (body["now_ms"] // 1000 - 899) * 1000
    assert {e: len(series[e]) for e in EVENTS} == dict.fromkeys(EVENTS, 900)
    totals = {e: sum(series[e]) for e in EVENTS}
    # A retry offered to the wheel at once may be found by the loader too and released
    # twice (its second claim is refused): releases are at least the 8 attempts.
    assert totals["triggered"] >= 8
    assert totals == {**totals, "started": 8, "succeeded": 6, "failed": 1, "retried": 1}
    trigger, start = body["lateness_ms"]["trigger"], body["lateness_ms"]["start"]
    assert (trigger["samples"], start["samples"]) == (totals["triggered"], 8)
    for late in (trigger, start):
        assert late["p50"] is not None and late["p99"] is not None
        assert 0 <= late["p50"] <= late["p99"]
    assert body["queues"] == {"default": 0}
    assert set(body["admission"]) == {
        "admitting",
        "backlog",
        "drain_per_second",
        "seconds_to_drain",
        "max_depth",
        "max_drain_seconds",
    }
    assert body["admission"]["admitting"] is True
    assert body["partitions_owned"] == node.settings.partitions
    assert body["wheel_size"] == 0


async def test_a_task_due_years_ago_is_late_from_its_acceptance(
    node: Node, api: httpx.AsyncClient
) -> None:
    """One task with a due time in 2001 once made the trigger p99 read 2,013,265,920 ms:
    a due time already past means due when accepted."""
    before_ms = round(time.time() * 1000)
    body = {"task_type": "ok", "schedule": {"type": "delayed", "due_time": "2001-01-01T00:00:00Z"}}
    answer = await api.post("/api/tasks", json=body)
    assert answer.status_code == 201, answer.text
    stats = await stats_when(api, lambda s: s["counts"]["succeeded"] == 1)
    assert stats["lateness_ms"]["trigger"]["p99"] < 5_000
    task = (await api.get(f"/api/tasks/{answer.json()['task_id']}")).json()
    due_ms = datetime.fromisoformat(task["due_time"]).timestamp() * 1000
    assert due_ms >= before_ms - 1  # the later of its due time and its acceptance


async def test_counts_come_from_the_store_for_every_status(
    node: Node, api: httpx.AsyncClient
) -> None:
    for _ in range(3):
        await api.post(
            "/api/tasks",
            json={"task_type": "ok", "schedule": {"type": "delayed", "delay_seconds": 3600}},
        )

    body = await stats_when(api, lambda s: s["counts"]["pending"] == 3)

    assert {k: v for k, v in body["counts"].items() if v} == {"pending": 3}


async def test_metrics_expose_this_process_in_prometheus_text(
    node: Node, api: httpx.AsyncClient
) -> None:
    for task_type in ("ok", "ok", "bad"):
        await api.post("/api/tasks", json={"task_type": task_type})
    await stats_when(api, lambda s: s["counts"]["succeeded"] == 2 and s["counts"]["failed"] == 1)

    response = await api.get("/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    lines = response.text.splitlines()
    for line in (
        'tickwheel_task_events_total{event="triggered"} 3.0',
        'tickwheel_task_events_total{event="started"} 3.0',
        'tickwheel_task_events_total{event="succeeded"} 2.0',
        'tickwheel_task_events_total{event="failed"} 1.0',
        "tickwheel_trigger_lateness_seconds_count 3.0",
        "tickwheel_run_seconds_count 3.0",
        'tickwheel_ready_depth{queue="default"} 0.0',
        "tickwheel_wheel_size 0.0",
        f"tickwheel_partition_lease_gains_total {float(node.settings.partitions)}",
    ):
        assert line in lines, line


async def test_stats_and_metrics_need_the_read_scope_once_tokens_exist(
    node: Node, api: httpx.AsyncClient
) -> None:
    reader, submitter = new_token(), new_token()
    for token_id, token, scope in (("r", reader, "read"), ("s", submitter, "submit")):
        await node.store.create_token(
            token_id, token_hash(token), name=token_id, scopes=frozenset({scope}), now_ms=0
        )
    for path in ("/api/stats", "/metrics"):
        assert (await api.get(path)).status_code == 401
        denied = await api.get(path, headers={"authorization": f"Bearer {submitter}"})
        assert denied.status_code == 403
        allowed = await api.get(path, headers={"authorization": f"Bearer {reader}"})
        assert allowed.status_code == 200
