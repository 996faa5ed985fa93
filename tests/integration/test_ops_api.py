"""The dashboard's reads: task filters, schedules, workflows, nodes and workers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from tickwheel.api.auth import new_token, token_hash
from tickwheel.node import Node
from tickwheel.worker.context import TaskContext
from tickwheel.worker.registry import App

HOUR_LATER = {"type": "delayed", "delay_seconds": 3600}
EVERY_5 = {"type": "cron", "cron_expression": "*/5 * * * *"}


@pytest.fixture
def handlers() -> App:
    app = App()
    release = asyncio.Event()
    app.state = release  # type: ignore[attr-defined]

    @app.task("hold")
    async def hold(ctx: TaskContext, payload: Any) -> None:
        await release.wait()

    return app


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


async def submit(api: httpx.AsyncClient, **body: Any) -> str:
    answer = await api.post(
        "/api/tasks", json={"task_type": "noop", "schedule": HOUR_LATER, **body}
    )
    assert answer.status_code in (200, 201), answer.text
    task_id: str = answer.json()["task_id"]
    return task_id


async def listed(api: httpx.AsyncClient, **params: Any) -> list[str]:
    answer = await api.get("/api/tasks", params=params)
    assert answer.status_code == 200, answer.text
    return [t["task_id"] for t in answer.json()["tasks"]]


async def created_at(api: httpx.AsyncClient, task_id: str) -> datetime:
    return datetime.fromisoformat((await api.get(f"/api/tasks/{task_id}")).json()["created_at"])


# -- GET /api/tasks --------------------------------------------------------------


async def test_tasks_by_queue_and_by_id_or_idempotency_key(api: httpx.AsyncClient) -> None:
    mail = await submit(api, queue="mail")
    keyed = await submit(api, idempotency_key="order-7")
    other = await submit(api, task_type="other", idempotency_key="order-7")
    plain = await submit(api)

    assert await listed(api, queue="mail") == [mail]
    assert await listed(api, queue="default") == [plain, other, keyed]
    assert await listed(api, q="order-7") == [other, keyed]
    assert await listed(api, q=plain) == [plain]
    assert await listed(api, q="order-7", task_type="noop") == [keyed]
    assert await listed(api, q="nothing-has-this") == []


async def test_tasks_created_in_a_range(api: httpx.AsyncClient) -> None:
    ids = []
    for _ in range(4):
        ids.append(await submit(api))
        await asyncio.sleep(0.005)  # a later millisecond for the next one
    times = [await created_at(api, t) for t in ids]
    assert times == sorted(times) and len(set(times)) == 4

    between = {"created_after": times[1].isoformat(), "created_before": times[3].isoformat()}
    assert await listed(api, **between) == [ids[2], ids[1]]
    assert await listed(api, created_after=times[2].isoformat()) == [ids[3], ids[2]]
    assert await listed(api, created_before=times[1].isoformat()) == [ids[0]]
    elsewhere = times[3].astimezone(timezone(timedelta(hours=-5)))  # the same instant
    assert await listed(api, created_after=elsewhere.isoformat()) == [ids[3]]


async def test_task_pages_stay_stable_while_tasks_arrive(api: httpx.AsyncClient) -> None:
    before = [await submit(api) for _ in range(5)]
    page = (await api.get("/api/tasks", params={"limit": 2})).json()
    seen = [t["task_id"] for t in page["tasks"]]
    for _ in range(3):
        await submit(api)  # newer than every page: none of them shifts what follows
    while page["next_token"]:
        page = (
            await api.get("/api/tasks", params={"limit": 2, "next_token": page["next_token"]})
        ).json()
        seen += [t["task_id"] for t in page["tasks"]]
    assert seen == before[::-1]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"created_after": "2026-01-01T00:00:00"}, "created_after"),  # no time zone
        ({"created_before": "yesterday"}, "created_before"),
        ({"created_before": "0.5"}, "created_before"),  # not a Unix time
        ({"created_after": "1767225600"}, "created_after"),
        (
            {"created_after": "2026-01-02T00:00:00Z", "created_before": "2026-01-01T00:00:00Z"},
            "created_before",
        ),
        ({"q": ""}, "q"),
        ({"q": "x" * 257}, "q"),
        ({"queue": ""}, "queue"),
        ({"queue": "q" * 65}, "queue"),
        ({"queue": "no spaces"}, "queue"),
        ({"q": "nul\x00"}, "q"),
        ({"limit": 501}, "limit"),
        ({"next_token": "forged"}, "next_token"),
    ],
)
async def test_bad_task_filters_are_422_naming_the_field(
    api: httpx.AsyncClient, params: dict[str, Any], field: str
) -> None:
    answer = await api.get("/api/tasks", params=params)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field


# -- GET /api/schedules ----------------------------------------------------------


async def test_schedules_newest_first_with_next_fire_and_last_run(api: httpx.AsyncClient) -> None:
    older = await submit(api, task_type="report", schedule=EVERY_5, queue="cron", priority=5)
    paused = await submit(api, schedule={**EVERY_5, "timezone": "Europe/Paris"})
    gone = await submit(api, schedule=EVERY_5)
    first_of_paused = (await api.get(f"/api/tasks/{paused}")).json()["current_instance_id"]
    await api.post(f"/api/tasks/{paused}/pause")
    await api.delete(f"/api/tasks/{gone}")

    page = (await api.get("/api/schedules")).json()

    assert [s["schedule_id"] for s in page["schedules"]] == [paused, older]
    assert page["next_token"] is None
    shown, task = page["schedules"][1], (await api.get(f"/api/tasks/{older}")).json()
    assert shown == {
        "schedule_id": older,
        "task_type": "report",
        "cron_expression": "*/5 * * * *",
        "timezone": "UTC",
        "jitter_seconds": 0,
        "status": "active",
        "queue": "cron",
        "priority": 5,
        "misfire_policy": "run_once",
        "overlap_policy": "allow",
        "created_at": task["created_at"],
        "next_fire_time": task["due_time"],
        "current_instance_id": task["current_instance_id"],
        "last_run": None,
    }
    assert page["schedules"][0]["next_fire_time"] is None  # paused
    assert page["schedules"][0]["status"] == "paused"

    await api.post(f"/api/tasks/{paused}/resume")
    resumed = (await api.get("/api/schedules", params={"status": "active"})).json()["schedules"]
    assert [s["schedule_id"] for s in resumed] == [paused, older]
    last = resumed[0]["last_run"]  # the instance the pause cancelled
    assert (last["task_id"], last["status"]) == (first_of_paused, "cancelled")
    assert last["ended_at"] is not None
    assert resumed[0]["next_fire_time"] is not None
    cancelled = (await api.get("/api/schedules", params={"status": "cancelled"})).json()
    assert [s["schedule_id"] for s in cancelled["schedules"]] == [gone]


async def test_schedules_page_by_token(api: httpx.AsyncClient) -> None:
    made = [await submit(api, schedule=EVERY_5) for _ in range(5)]
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        page = (await api.get("/api/schedules", params=params)).json()
        seen += [s["schedule_id"] for s in page["schedules"]]
        if page["next_token"] is None:
            break
        params["next_token"] = page["next_token"]
    assert sorted(seen) == sorted(made) and len(seen) == 5


# -- GET /api/workflows ----------------------------------------------------------


async def test_workflows_newest_first_with_counts_and_status(api: httpx.AsyncClient) -> None:
    done = {"name": "quick", "tasks": [{"name": "a", "task_type": "noop"}]}
    waiting = {
        "name": "slow",
        "tasks": [
            {"name": "a", "task_type": "noop"},
            {"name": "b", "task_type": "noop", "schedule": HOUR_LATER, "dependencies": ["a"]},
        ],
    }
    quick = (await api.post("/api/workflows", json=done)).json()["workflow_id"]
    slow = (await api.post("/api/workflows", json=waiting)).json()["workflow_id"]

    async def quick_done() -> bool:
        return (await api.get(f"/api/workflows/{quick}")).json()["status"] == "succeeded"

    await until(quick_done)
    page = (await api.get("/api/workflows")).json()

    assert [w["workflow_id"] for w in page["workflows"]] == [slow, quick]
    shown_slow, shown_quick = page["workflows"]
    assert shown_quick == {
        "workflow_id": quick,
        "name": "quick",
        "status": "succeeded",
        "created_at": (await api.get(f"/api/workflows/{quick}")).json()["created_at"],
        "task_count": 1,
        "counts": {"succeeded": 1},
    }
    assert (shown_slow["status"], shown_slow["task_count"]) == ("running", 2)
    one = (await api.get("/api/workflows", params={"limit": 1})).json()
    assert [w["workflow_id"] for w in one["workflows"]] == [slow]
    rest = (await api.get("/api/workflows", params={"next_token": one["next_token"]})).json()
    assert [w["workflow_id"] for w in rest["workflows"]] == [quick]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/workflows", {"limit": 101}, "limit"),
        ("/api/workflows", {"limit": 0}, "limit"),
        ("/api/workflows", {"next_token": "forged"}, "next_token"),
        ("/api/workflows", {"next_token": "djE6MTI"}, "next_token"),  # a task page's token
        ("/api/schedules", {"status": "running"}, "status.0"),
        ("/api/schedules", {"limit": 501}, "limit"),
        ("/api/schedules", {"next_token": "cDE6eDp5"}, "next_token"),  # p1:x:y
    ],
)
async def test_bad_list_params_are_422_naming_the_field(
    api: httpx.AsyncClient, path: str, params: dict[str, Any], field: str
) -> None:
    answer = await api.get(path, params=params)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field


# -- GET /api/nodes --------------------------------------------------------------


async def test_the_embedded_node_holds_every_partition_and_its_worker_reports(
    api: httpx.AsyncClient, node: Node, handlers: App
) -> None:
    task_id = await submit(api, task_type="hold", schedule={"type": "immediate"})

    async def running() -> bool:
        nodes = (await api.get("/api/nodes")).json()
        mine = [w for w in nodes["workers"] if w["worker_id"] == node.node_id]
        return bool(mine) and mine[0]["inflight"] == 1

    await until(running)
    nodes = (await api.get("/api/nodes")).json()

    (scheduler,) = nodes["schedulers"]
    assert scheduler["node_id"] == node.node_id
    assert scheduler["heartbeat_expires_at"] is None  # embedded: leases, no heartbeats
    assert [p["partition"] for p in scheduler["partitions"]] == list(range(16))
    assert {p["epoch"] for p in scheduler["partitions"]} == set(node.leases.held.values())
    assert (nodes["partition_count"], nodes["unowned_partitions"]) == (16, [])
    (worker,) = nodes["workers"]
    assert (worker["kind"], worker["queues"], worker["concurrency"]) == (
        "in_process",
        ["default"],
        node.settings.concurrency,
    )
    seen = datetime.fromisoformat(worker["last_heartbeat_at"])
    assert (
        datetime.fromisoformat(worker["expires_at"])
        > seen
        >= datetime.fromisoformat(worker["started_at"])
    )

    handlers.state.set()  # type: ignore[attr-defined]
    await until(lambda: _status_is(api, task_id, "succeeded"))
    await node.worker.stop(1)  # a worker that stops says so
    assert (await api.get("/api/nodes")).json()["workers"] == []


async def _status_is(api: httpx.AsyncClient, task_id: str, status: str) -> bool:
    return bool((await api.get(f"/api/tasks/{task_id}")).json()["status"] == status)


async def test_a_worker_over_http_is_listed_once_it_claims(api: httpx.AsyncClient) -> None:
    body = {"worker_id": "remote-1", "queues": ["far"], "max_tasks": 5, "wait_seconds": 0}
    assert (await api.post("/api/worker/claim", json=body)).status_code == 200

    workers = (await api.get("/api/nodes")).json()["workers"]

    remote = [w for w in workers if w["worker_id"] == "remote-1"]
    assert [(w["kind"], w["queues"], w["concurrency"], w["inflight"]) for w in remote] == [
        ("http", ["far"], None, 0)
    ]
    assert remote[0]["task_types"] is None  # it named none: it takes any


async def test_a_worker_over_http_is_listed_with_the_task_types_it_claims(
    api: httpx.AsyncClient,
) -> None:
    body = {"worker_id": "typed", "queues": ["far"], "task_types": ["greet"], "wait_seconds": 0}
    assert (await api.post("/api/worker/claim", json=body)).status_code == 200
    workers = (await api.get("/api/nodes")).json()["workers"]
    assert [w["task_types"] for w in workers if w["worker_id"] == "typed"] == [["greet"]]


# -- scopes ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/tasks", "/api/schedules", "/api/workflows", "/api/nodes"])
async def test_the_reads_need_the_read_scope(node: Node, api: httpx.AsyncClient, path: str) -> None:
    reader, submitter = new_token(), new_token()
    for token_id, token, scope in (("r", reader, "read"), ("s", submitter, "submit")):
        await node.store.create_token(
            token_id, token_hash(token), name=token_id, scopes=frozenset({scope}), now_ms=0
        )

    assert (await api.get(path)).status_code == 401
    forbidden = await api.get(path, headers={"Authorization": f"Bearer {submitter}"})
    assert forbidden.status_code == 403
    assert (await api.get(path, headers={"Authorization": f"Bearer {reader}"})).status_code == 200
