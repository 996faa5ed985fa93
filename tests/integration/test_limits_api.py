"""Rate and concurrency limits through the API: set, read and removed, with bad input
refused naming its field, and held to by a node's workers."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from tickwheel import App, TaskContext
from tickwheel.config import Settings
from tickwheel.core.limits import InvalidLimit
from tickwheel.node import Node


async def until_done(api: httpx.AsyncClient, ids: list[str], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        statuses = [(await api.get(f"/api/tasks/{i}")).json()["status"] for i in ids]
        if all(s == "succeeded" for s in statuses):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"not all succeeded: {statuses}")


async def submit(
    api: httpx.AsyncClient, task_type: str, count: int, group: str = "", **body: Any
) -> list[str]:
    tasks = [{"task_type": task_type, "payload": {"group": group}, **body} for _ in range(count)]
    answer = await api.post("/api/tasks/batch", json={"tasks": tasks})
    assert answer.status_code == 201, answer.text
    return [t["task_id"] for t in answer.json()["tasks"]]


async def test_a_limit_round_trips_and_is_removed(either_api: httpx.AsyncClient) -> None:
    api = either_api
    put = await api.put("/api/limits/task_type/mail", json={"rate": "100/s", "concurrency": 5})
    assert put.status_code == 200, put.text
    assert put.json() | {"updated_at": None} == {
        "scope": "task_type",
        "name": "mail",
        "rate": "100/s",
        "concurrency": 5,
        "started_in_window": 0,
        "running": 0,
        "held": 0,
        "updated_at": None,
    }
    await api.put("/api/limits/key/tenant-1", json={"rate": "20/10s"})
    listed = (await api.get("/api/limits")).json()["limits"]
    assert [(lim["scope"], lim["name"], lim["rate"]) for lim in listed] == [
        ("key", "tenant-1", "20/10s"),
        ("task_type", "mail", "100/s"),
    ]
    replaced = await api.put("/api/limits/task_type/mail", json={"concurrency": 1})
    assert (replaced.json()["rate"], replaced.json()["concurrency"]) == (None, 1)
    assert (await api.delete("/api/limits/task_type/mail")).status_code == 204
    assert (await api.get("/api/limits/task_type/mail")).status_code == 404
    assert (await api.delete("/api/limits/task_type/mail")).status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/limits/task_type/t", {"rate": "lots"}, "rate"),
        ("/api/limits/task_type/t", {"rate": "0/s"}, "rate"),
        ("/api/limits/task_type/t", {"rate": "5/3d"}, "rate"),
        ("/api/limits/task_type/t", {}, "rate"),
        ("/api/limits/task_type/t", {"concurrency": 0}, "concurrency"),
        ("/api/limits/task_type/t", {"concurrency": "many"}, "concurrency"),
        ("/api/limits/task_type/t", {"rate": "1/s", "burst": 3}, "burst"),
        ("/api/limits/tenant/t", {"rate": "1/s"}, "scope"),
        ("/api/limits/queue/" + "q" * 201, {"rate": "1/s"}, "name"),
    ],
)
async def test_a_bad_limit_is_refused_naming_its_field(
    either_api: httpx.AsyncClient, path: str, body: dict[str, Any], field: str
) -> None:
    answer = await either_api.put(path, json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field
    assert (await either_api.get("/api/limits")).json()["limits"] == []


@pytest.fixture
def handlers() -> App:
    app = App()
    app.state = {"running": Counter(), "most": Counter(), "starts": []}  # type: ignore[attr-defined]

    @app.task("slow")
    async def slow(ctx: TaskContext, payload: dict[str, Any]) -> None:
        running, most = app.state["running"], app.state["most"]  # type: ignore[attr-defined]
        group = payload["group"]
        running[group] += 1
        most[group] = max(most[group], running[group])
        await asyncio.sleep(0.2)
        running[group] -= 1

    @app.task("tick")
    async def tick(ctx: TaskContext, payload: dict[str, Any]) -> None:
        app.state["starts"].append(time.time())  # type: ignore[attr-defined]

    return app


async def test_a_concurrency_limit_holds_running_tasks_to_it(
    api: httpx.AsyncClient, node: Node, handlers: App
) -> None:
    assert (await api.put("/api/limits/key/narrow", json={"concurrency": 2})).status_code == 200
    await asyncio.sleep(1.1)  # every claimer sees it within a second
    limited = await submit(api, "slow", 8, "narrow", limit_key="narrow")
    beside = await submit(api, "slow", 8, "free")  # no key: not limited
    await until_done(api, beside, timeout=5)
    use = (await api.get("/api/limits/key/narrow")).json()
    assert use["running"] + use["held"] >= 4  # still working through them
    await until_done(api, limited)
    most = handlers.state["most"]  # type: ignore[attr-defined]
    assert (most["narrow"], most["free"]) == (2, 8)
    finished = (await api.get("/api/limits/key/narrow")).json()
    assert (finished["running"], finished["held"]) == (0, 0)


async def test_a_rate_limit_spaces_starts_and_holds_the_rest_ready(
    api: httpx.AsyncClient, handlers: App
) -> None:
    assert (await api.put("/api/limits/task_type/tick", json={"rate": "5/s"})).status_code == 200
    await asyncio.sleep(1.1)
    ids = await submit(api, "tick", 15)
    await asyncio.sleep(0.3)
    held = (await api.get(f"/api/tasks/{ids[-1]}")).json()
    assert (held["status"], held["held_by"]) == ("ready", "task_type:tick")
    (wait,) = held["waiting_on"]
    assert (wait["reason"], wait["limit"]) == ("limit", "task_type:tick")
    assert "held back by the limit on task type 'tick'" in wait["message"]
    await until_done(api, ids)
    starts = sorted(handlers.state["starts"])  # type: ignore[attr-defined]
    assert len(starts) == 15
    for first in starts:  # no second, from any start, holds more than five
        assert sum(first <= s < first + 1.0 for s in starts) <= 5
    assert starts[-1] - starts[0] < 3.5  # the window frees starts as it slides


async def test_a_task_types_declared_limits_are_set_when_its_worker_starts(
    tmp_path: Path,
) -> None:
    app = App()

    @app.task("mail", rate_limit="100/s", concurrency=20)
    async def mail(ctx: TaskContext, payload: Any) -> None:
        return None

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'declared.db'}")
    async with Node(settings=settings, app=app) as node:
        (use,) = await node.store.limits_in_use(node.clock.now_ms())
    assert (use.limit.id, str(use.limit.rate), use.limit.concurrency) == (
        "task_type:mail",
        "100/s",
        20,
    )


def test_a_bad_declared_limit_fails_at_import() -> None:
    app = App()
    with pytest.raises(InvalidLimit) as bad:
        app.task("mail", rate_limit="lots")(lambda ctx, payload: None)
    assert bad.value.field == "rate"
